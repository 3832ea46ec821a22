"""Intrinsic calls in the reference interpreter: math, if_then_else, events, no-op hints.

Event tensors are int32 counters. `T.event_notify(E[i], count)` (count defaults to 1)
subtracts `count` from the counter; `T.event_wait(E[i])` requires the counter to have reached
zero or below; `tirc.atomic_add(E[i], v)` adds `v` and returns the old value (a megakernel's
queue head). The interpreter runs every loop serially, so a wait that comes before the
notifications it depends on in that serial order is reported as a deadlock or a missing
dependence (compiled parallel code would block there, or race).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from tirc.ir.expr import Call, StringImm
from tirc.ir.interpreter_values import (
    Env,
    Fn,
    InterpreterError,
    format_index,
    int_range,
    make_wrap,
    np_dtype,
)

if TYPE_CHECKING:
    from tirc.ir.interpreter_expr import ExprCompiler

NO_OPS = ("tvm_storage_sync", "assume", "tvm_thread_fence", "nop")
_INT_BITWISE = {
    "shift_left": lambda a, b: a << b, "shift_right": lambda a, b: a >> b,
    "bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
}


def compile_call(c: ExprCompiler, e: Call) -> Fn:
    """The closure for one intrinsic call."""
    op = e.op
    if op == "tirc.call_packed":
        from tirc.ir.interpreter_extern import compile_packed_call

        return compile_packed_call(c, e)
    if op == "if_then_else":
        return _if_then_else(c, e)
    if op in ("event_wait", "event_notify", "tirc.atomic_add"):
        return _event(c, e)
    if op in NO_OPS:
        return lambda env: 0
    if op == "tirc.bounds_check":
        return _bounds_check(c, e)
    if op == "likely":
        return c.compile(e.args[0])
    if op in ("max_value", "min_value"):
        return _limit(e)
    fns = [c.compile(a) for a in e.args]
    if op in _INT_BITWISE or op == "bitwise_not":
        return _bitwise(e, fns)
    if op == "reinterpret":
        src = np_dtype(e.args[0].dtype)
        dst = np_dtype(e.dtype)
        f0 = fns[0]
        return lambda env: np.array(f0(env), dtype=src).view(dst)[()]
    dt = e.dtype
    if op == "abs" and dt.is_int:
        lo, hi = int_range(dt)
        wrap = make_wrap(dt)
        f0 = fns[0]

        def int_abs(env: Env) -> int:
            v = abs(f0(env))
            return v if v <= hi else wrap(v)

        return int_abs
    if dt.is_float:
        return _float_call(op, fns, np_dtype(dt).type)
    return _unsupported(op)


def _unsupported(op: str) -> Fn:
    def fail(env: Env) -> Any:
        raise InterpreterError(f"the interpreter does not support the intrinsic '{op}'")

    return fail


def _float_call(op: str, fns: list[Fn], ftype: Any) -> Fn:
    from tirc.ir.interpreter_expr import float_math

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


def _if_then_else(c: ExprCompiler, e: Call) -> Fn:
    fc, ft, ff = (c.compile(a) for a in e.args)
    if e.dtype.lanes > 1:
        return lambda env: np.where(fc(env), ft(env), ff(env))
    return lambda env: ft(env) if fc(env) else ff(env)


def _limit(e: Call) -> Fn:
    target = np_dtype(e.dtype)
    if e.dtype.is_float:
        info = np.finfo(target)
        value = info.max if e.op == "max_value" else info.min
        value = target.type(value)
    elif e.dtype.is_bool:
        value = e.op == "max_value"
    else:
        lo, hi = int_range(e.dtype)
        value = hi if e.op == "max_value" else lo
    return lambda env: value


def _bitwise(e: Call, fns: list[Fn]) -> Fn:
    wrap = make_wrap(e.dtype) if e.dtype.is_int else (lambda v: v)
    if e.op == "bitwise_not":
        f0 = fns[0]
        return lambda env: wrap(~f0(env))
    fn = _INT_BITWISE[e.op]
    fa, fb = fns
    return lambda env: wrap(fn(fa(env), fb(env)))


def _bounds_check(c: ExprCompiler, e: Call) -> Fn:
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


def _event(c: ExprCompiler, e: Call) -> Fn:
    if not e.args:
        raise InterpreterError(f"T.{e.op} needs an event element like E[i]")
    buf, off = c.address(e.args[0])
    dslot = c.slots.of(buf.data)
    index_fns = [c.compile(i) for i in e.args[0].indices]  # type: ignore[attr-defined]
    if e.op == "tirc.atomic_add":
        add = c.compile(e.args[1])

        def fetch_add(env: Env) -> int:
            storage = env[dslot]
            k = off(env)
            old = int(storage[k])
            storage[k] = old + add(env)
            return old

        return fetch_add
    if e.op == "event_notify":
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
