"""Intrinsic calls in the reference interpreter: math, if_then_else, events, no-op hints.

Event tensors are int32 counters. `T.event_notify(E[i], count)` (count defaults to 1)
subtracts `count` from the counter; `T.event_wait(E[i])` requires the counter to have reached
zero or below; `tirc.atomic_add(E[i], v)` adds `v` and returns the old value (a megakernel's
queue head). The interpreter runs every loop serially, so a wait that comes before the
notifications it depends on in that serial order is reported as a deadlock or a missing
dependence (compiled parallel code would block there, or race).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.ir import intrinsics as ir_intrinsics
from tirc.ir.expr import Call, StringImm
from tirc.ir.interpreter.extern import compile_packed_call
from tirc.ir.interpreter.values import (
    Compiler,
    Env,
    Fn,
    InterpreterError,
    format_index,
    int_range,
    make_wrap,
    np_dtype,
)

_INT_BITWISE = {
    ir_intrinsics.SHIFT_LEFT: lambda a, b: a << b, ir_intrinsics.SHIFT_RIGHT: lambda a, b: a >> b,
    ir_intrinsics.BITWISE_AND: lambda a, b: a & b, ir_intrinsics.BITWISE_OR: lambda a, b: a | b,
    ir_intrinsics.BITWISE_XOR: lambda a, b: a ^ b,
}


def compile_call(c: Compiler, e: Call) -> Fn:
    """The closure for one intrinsic call, by the rule the intrinsic table names for it."""
    info = ir_intrinsics.intrinsic(e.op)
    rule = RULES.get(info.interpreted or "") if info is not None else None
    if rule is None:
        return _unsupported(e.op)
    return rule(c, e)


def _noop(c: Compiler, e: Call) -> Fn:
    return lambda env: 0


def _identity(c: Compiler, e: Call) -> Fn:
    return c.compile(e.args[0])


def _reinterpret(c: Compiler, e: Call) -> Fn:
    src = np_dtype(e.args[0].dtype)
    dst = np_dtype(e.dtype)
    f0 = c.compile(e.args[0])
    return lambda env: np.array(f0(env), dtype=src).view(dst)[()]


def _math(c: Compiler, e: Call) -> Fn:
    fns = [c.compile(a) for a in e.args]
    dt = e.dtype
    if e.op == "abs" and dt.is_int:
        lo, hi = int_range(dt)
        wrap = make_wrap(dt)
        f0 = fns[0]

        def int_abs(env: Env) -> int:
            v = abs(f0(env))
            return v if v <= hi else wrap(v)

        return int_abs
    if dt.is_float:
        return _float_call(e.op, fns, np_dtype(dt).type)
    return _unsupported(e.op)


def _unsupported(op: str) -> Fn:
    def fail(env: Env) -> Any:
        raise InterpreterError(f"the interpreter does not support the intrinsic '{op}'")

    return fail


def _float_call(op: str, fns: list[Fn], ftype: Any) -> Fn:
    if op == "pow" and len(fns) == 2:
        fa, fb = fns
        return lambda env: ftype(np.power(fa(env), fb(env)))
    if op == "fma" and len(fns) == 3:
        fa, fb, fc = fns
        return lambda env: fa(env) * fb(env) + fc(env)
    fn = float_math(op, ftype)
    if fn is None or len(fns) != 1:
        return _unsupported(op)
    f0 = fns[0]
    return lambda env: fn(f0(env))


def _select(c: Compiler, e: Call) -> Fn:
    fc, ft, ff = (c.compile(a) for a in e.args)
    if e.dtype.lanes > 1:
        return lambda env: np.where(fc(env), ft(env), ff(env))
    return lambda env: ft(env) if fc(env) else ff(env)


def _limit(c: Compiler, e: Call) -> Fn:
    target = np_dtype(e.dtype)
    if e.dtype.is_float:
        info = np.finfo(target)
        value = info.max if e.op == ir_intrinsics.MAX_VALUE else info.min
        value = target.type(value)
    elif e.dtype.is_bool:
        value = e.op == ir_intrinsics.MAX_VALUE
    else:
        lo, hi = int_range(e.dtype)
        value = hi if e.op == ir_intrinsics.MAX_VALUE else lo
    return lambda env: value


def _bitwise(c: Compiler, e: Call) -> Fn:
    fns = [c.compile(a) for a in e.args]
    wrap = make_wrap(e.dtype) if e.dtype.is_int else (lambda v: v)
    if e.op == ir_intrinsics.BITWISE_NOT:
        f0 = fns[0]
        return lambda env: wrap(~f0(env))
    fn = _INT_BITWISE[e.op]
    fa, fb = fns
    return lambda env: wrap(fn(fa(env), fb(env)))


def _bounds_check(c: Compiler, e: Call) -> Fn:
    """`tirc.bounds_check(cond, "format", values...)` (-fbounds-check): an InterpreterError
    with the printf-formatted message when `cond` is false."""
    cond = c.compile(e.args[0])
    fmt = e.args[1].value if isinstance(e.args[1], StringImm) else "bounds check failed"
    values = [c.compile(a) for a in e.args[2:]]

    def check(env: Env) -> int:
        if not cond(env):
            raise InterpreterError(fmt.replace("%lld", "%d") % tuple(
                int(v(env)) for v in values), e.span)
        return 0

    return check


def _event(c: Compiler, e: Call) -> Fn:
    if not e.args:
        raise InterpreterError(f"T.{e.op} needs an event element like E[i]")
    buf, off = c.address(e.args[0])
    dslot = c.slots.of(buf.data)
    index_fns = [c.compile(i) for i in e.args[0].indices]  # type: ignore[attr-defined]
    if e.op == ir_intrinsics.ATOMIC_ADD:
        add = c.compile(e.args[1])

        def fetch_add(env: Env) -> int:
            storage = env[dslot]
            k = off(env)
            old = int(storage[k])
            storage[k] = old + add(env)
            return old

        return fetch_add
    if e.op == ir_intrinsics.EVENT_NOTIFY:
        count = c.compile(e.args[1]) if len(e.args) > 1 else (lambda env: 1)

        def notify(env: Env) -> int:
            storage = env[dslot]
            k = off(env)
            storage[k] = storage[k] - count(env)
            return 0

        return notify

    def wait(env: Env) -> int:
        storage = env[dslot]
        value = int(storage[off(env)])
        if value > 0:
            idx = format_index([f(env) for f in index_fns])
            raise InterpreterError(f"deadlock or missing dependence: wait on {buf.name}[{idx}] "
                                   f"with counter {value}")
        return 0

    return wait


def float_math(name: str, ftype: Callable[[Any], Any]) -> Callable[[Any], Any] | None:
    """The scalar-or-vector implementation of a float math intrinsic."""
    one = ftype(1)
    table: dict[str, Callable[[Any], Any]] = {
        "exp": np.exp, "fast_exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
        "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
        "round": np.rint, "trunc": np.trunc, "sin": np.sin, "cos": np.cos,
        "rsqrt": lambda x: one / np.sqrt(x),
        "sigmoid": lambda x: one / (one + np.exp(-x)),
    }
    if name == "erf":

        def erf(x: Any) -> Any:
            if isinstance(x, np.ndarray):
                return np.array([math.erf(float(v)) for v in x]).astype(x.dtype)
            return ftype(math.erf(float(x)))

        return erf
    return table.get(name)


def _packed(c: Compiler, e: Call) -> Fn:
    return compile_packed_call(c, e)


# The interpreter's rules by the name the intrinsic table gives (Intrinsic.interpreted); the
# GPU interpreter adds its own (tirc.ir.interpreter.gpu.GPU_RULES).
RULES: dict[str, Callable[[Compiler, Call], Fn]] = {
    "math": _math, "select": _select, "identity": _identity, "limit": _limit,
    "reinterpret": _reinterpret, "bitwise": _bitwise, "noop": _noop, "event": _event,
    "packed": _packed, "bounds_check": _bounds_check,
}
