"""Intrinsic calls in the reference interpreter: math, if_then_else, bit operations, vector
halves, events, no-op hints, by the rule the intrinsic table (tirc.ir.intrinsics) names.

Float math runs through numpy in the operands' dtype (bfloat16 math in float32, rounded
to bfloat16 once per intrinsic, as the LLVM backend does); `q_multiply_shift` is TVM's fixed-point
multiply (`round(x * y * 2^-(q - s))`, half up, through int64); calls of C functions
(`call_extern`) are tirc.ir.interpreter.extern's. GPU-only and scalable-vector intrinsics
have no meaning here and raise an InterpreterError naming the intrinsic.

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
from tirc.ir.expr import BufferLoad, Call, StringImm, Var
from tirc.ir.interpreter.buffer import storage_of
from tirc.ir.interpreter.extern import compile_c_call, compile_packed_call
from tirc.ir.interpreter.values import (
    BreakLoop,
    Compiler,
    ContinueLoop,
    Env,
    Fn,
    InterpreterError,
    ReturnValue,
    format_index,
    int_range,
    make_wrap,
    np_dtype,
)

_INT_BITWISE = {
    ir_intrinsics.BITWISE_AND: lambda a, b: a & b, ir_intrinsics.BITWISE_OR: lambda a, b: a | b,
    ir_intrinsics.BITWISE_XOR: lambda a, b: a ^ b,
}
# NumPy's shifts: by a negative amount or one of the width or more, `<<` gives 0 and `>>` the
# sign (what the LLVM backend emits; C and LLVM leave those shifts undefined).
_SHIFTS = {ir_intrinsics.SHIFT_LEFT: np.left_shift, ir_intrinsics.SHIFT_RIGHT: np.right_shift}


def compile_call(c: Compiler, e: Call) -> Fn:
    """The closure for one intrinsic call, by the rule the intrinsic table names for it."""
    info = ir_intrinsics.intrinsic(e.op)
    if info is not None and info.device != ir_intrinsics.ANY_DEVICE:
        where = "a GPU" if info.device == ir_intrinsics.GPU else "a scalable-vector (SVE) target"
        return _fail(f"T.{e.op} only has a meaning on {where}; the interpreter runs CPU code")
    rule = RULES.get(info.interpreted or "") if info is not None else None
    if rule is None:
        return _unsupported(e.op)
    return rule(c, e)


def _noop(c: Compiler, e: Call) -> Fn:
    return lambda env: 0


def _identity(c: Compiler, e: Call) -> Fn:
    return c.compile(e.args[0])


def _reinterpret(c: Compiler, e: Call) -> Fn:
    """The bits of the operand read as `e.dtype`; an integer scalar is a Python int, as every
    integer scalar of the interpreter is (a numpy one overflows in the wrap of `x ^ c`)."""
    src = np_dtype(e.args[0].dtype)
    dst = np_dtype(e.dtype)
    f0 = c.compile(e.args[0])
    if e.dtype.is_int and e.dtype.lanes == 1:
        return lambda env: int(np.array(f0(env), dtype=src).view(dst)[()])
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
    return _fail(f"the interpreter does not support the intrinsic '{op}'")


def _fail(message: str) -> Fn:
    def fail(env: Env) -> Any:
        raise InterpreterError(message)

    return fail


def _float_call(op: str, fns: list[Fn], ftype: Any) -> Fn:
    """A float math intrinsic in `ftype`; bfloat16 is computed in float32 and rounded once."""
    if np.dtype(ftype).name == "bfloat16":
        return _bf16_via_float32(op, fns, ftype)
    if op in _BINARY_FLOAT and len(fns) == 2:
        f2, fa, fb = _BINARY_FLOAT[op], fns[0], fns[1]
        return lambda env: ftype(f2(fa(env), fb(env)))
    if op == "fma" and len(fns) == 3:
        fa, fb, fc = fns
        return lambda env: fa(env) * fb(env) + fc(env)
    fn = float_math(op, ftype)
    if fn is None or len(fns) != 1:
        return _unsupported(op)
    f0 = fns[0]
    return lambda env: fn(f0(env))


def _bf16_via_float32(op: str, fns: list[Fn], ftype: Any) -> Fn:
    """bfloat16 math intrinsic `op` computed in float32 and rounded to bfloat16 once, as the
    LLVM backend does (and TVM's BF16ComputeLegalize): `T.sigmoid` is not three rounded steps."""
    wide = _float_call(op, [_as_float32(f) for f in fns], np.float32)

    def run(env: Env) -> Any:
        out = wide(env)
        return out.astype(ftype) if isinstance(out, np.ndarray) else ftype(out)

    return run


def _as_float32(f: Fn) -> Fn:
    """`f`'s value (a scalar or a vector) widened exactly to float32."""

    def run(env: Env) -> Any:
        v = f(env)
        return v.astype(np.float32) if isinstance(v, np.ndarray) else np.float32(v)

    return run


def _select(c: Compiler, e: Call) -> Fn:
    fc, ft, ff = (c.compile(a) for a in e.args)
    if e.dtype.lanes > 1:
        return lambda env: np.where(fc(env), ft(env), ff(env))
    return lambda env: ft(env) if fc(env) else ff(env)


def _search(c: Compiler, e: Call) -> Fn:
    """`tirc.lower_bound`/`tirc.upper_bound` over a sorted slice of a buffer's storage."""
    data = e.args[0]
    if not isinstance(data, Var):
        return _unsupported(e.op)
    slot = c.slots.of(data)
    fv, fb, fe = (c.compile(a) for a in e.args[1:])
    side = "right" if e.op == ir_intrinsics.UPPER_BOUND else "left"

    def search(env: Env) -> int:
        begin, end = int(fb(env)), int(fe(env))
        storage = env[slot]
        if not 0 <= begin <= end <= storage.size:
            raise InterpreterError(f"{e.op}: range [{begin}, {end}) is outside the storage of "
                                   f"{data.name} ({storage.size} elements)", e.span)
        return begin + int(np.searchsorted(storage[begin:end], fv(env), side=side))

    return search


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


_BINARY_FLOAT: dict[str, Callable[[Any, Any], Any]] = {
    "pow": np.power, "atan2": np.arctan2, "copysign": np.copysign, "hypot": np.hypot,
    "fmod": np.fmod, "nextafter": np.nextafter,
    "ldexp": lambda x, y: np.ldexp(x, np.asarray(y).astype(np.int32)),
}
_FLOAT_CLASS = {ir_intrinsics.ISNAN: np.isnan, ir_intrinsics.ISINF: np.isinf,
                ir_intrinsics.ISFINITE: np.isfinite}


def _float_class(c: Compiler, e: Call) -> Fn:
    p, f0 = _FLOAT_CLASS[e.op], c.compile(e.args[0])
    if e.args[0].dtype.lanes == 1:
        return lambda env: bool(p(f0(env)))
    return lambda env: p(f0(env))


def _bitcount(c: Compiler, e: Call) -> Fn:
    f0, bits = c.compile(e.args[0]), e.args[0].dtype.bits
    if e.op == ir_intrinsics.POPCOUNT:
        return lambda env: bin(int(f0(env)) & ((1 << bits) - 1)).count("1")
    return lambda env: bits - (int(f0(env)) & ((1 << bits) - 1)).bit_length()


def _fixed_point(c: Compiler, e: Call) -> Fn:
    """q_multiply_shift: ((x << max(s, 0)) * y + 2^(t-1)) >> t with t = q + max(-s, 0)."""
    wrap = make_wrap(e.dtype)
    fx, fy, fq, fs = (c.compile(a) for a in e.args)

    def run(env: Env) -> int:
        x, y, q, s = (int(f(env)) for f in (fx, fy, fq, fs))
        x = wrap(x << max(s, 0))
        total = q + max(-s, 0)
        return wrap((x * y + (1 << (total - 1))) >> total)

    return run


def _halves(c: Compiler, e: Call) -> Fn:
    """The low or high half of a vector, or two vectors joined."""
    if e.op == ir_intrinsics.VECTOR_COMBINE:
        fa, fb = (c.compile(a) for a in e.args)
        return lambda env: np.concatenate([np.atleast_1d(fa(env)), np.atleast_1d(fb(env))])
    f0, half = c.compile(e.args[0]), e.args[0].dtype.lanes // 2
    if e.op == ir_intrinsics.VECTOR_LOW:
        return lambda env: np.asarray(f0(env))[:half]
    return lambda env: np.asarray(f0(env))[half:]


def _bitwise(c: Compiler, e: Call) -> Fn:
    """`&`, `|`, `^`, `~` and the shifts. Integer vectors are computed in their numpy dtype
    (the wrap below is for Python ints: a numpy int32 vector overflows in it)."""
    fns = [c.compile(a) for a in e.args]
    wrap = make_wrap(e.dtype) if e.dtype.is_int else (lambda v: v)
    if e.dtype.is_int and e.dtype.lanes > 1 and e.op not in _SHIFTS:
        op = (lambda a: ~a) if e.op == ir_intrinsics.BITWISE_NOT else _INT_BITWISE[e.op]
        npdt = np_dtype(e.dtype.with_lanes(1))
        return lambda env: op(*(np.asarray(f(env)).astype(npdt) for f in fns))
    if e.op == ir_intrinsics.BITWISE_NOT:
        f0 = fns[0]
        return lambda env: wrap(~f0(env))
    if e.op in _SHIFTS:
        shift, npdt = _SHIFTS[e.op], np_dtype(e.dtype.with_lanes(1))
        fa, fb = fns

        def shifted(env: Env) -> Any:
            out = shift(np.asarray(fa(env)).astype(npdt), np.asarray(fb(env)).astype(npdt))
            return int(out) if out.ndim == 0 else out

        return shifted
    fn = _INT_BITWISE[e.op]
    fa, fb = fns
    return lambda env: wrap(fn(fa(env), fb(env)))


def _bounds_check(c: Compiler, e: Call) -> Fn:
    """`tirc.bounds_check(cond, "format", values...)` (-fbounds-check) and `tirc.check` (an
    entry's check): an InterpreterError with the printf-formatted message when `cond` is
    false."""
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
        "fabs": np.abs, "nearbyint": np.rint, "log10": np.log10, "log1p": np.log1p,
        "exp10": lambda x: np.power(ftype(10), x), "tan": np.tan, "sinh": np.sinh,
        "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
        "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    }
    if name == "erf":

        def erf(x: Any) -> Any:
            if isinstance(x, np.ndarray):
                return np.array([math.erf(float(v)) for v in x]).astype(x.dtype)
            return ftype(math.erf(float(x)))

        return erf
    return table.get(name)


def _call_prim(c: Compiler, e: Call) -> Fn:
    """`Module.f(args)`: run loop function `f` of the module on the argument values (storage
    arrays alias the caller's); its value is what `f` returns."""
    name = e.args[0].value if isinstance(e.args[0], StringImm) else "?"
    fns = [c.compile(a) for a in e.args[1:]]
    resolve = c.callee

    def call(env: Env) -> Any:
        if resolve is None:
            raise InterpreterError(f"calling '{name}' needs the whole module (run it with "
                                   "Interpreter(mod))", e.span)
        return resolve(name).call_direct([f(env) for f in fns])

    return call


def _ret(c: Compiler, e: Call) -> Fn:
    """`T.ret(value)`: leave the function with the value."""
    value = c.compile(e.args[0])

    def ret(env: Env) -> Any:
        raise ReturnValue(value(env))

    return ret


def _loop_jump(c: Compiler, e: Call) -> Fn:
    """`T.break_loop()` / `T.continue_loop()`: unwind to the innermost loop (which catches)."""
    jump = BreakLoop if e.op == ir_intrinsics.BREAK_LOOP else ContinueLoop

    def run(env: Env) -> Any:
        raise jump()

    return run


def _address_of(c: Compiler, e: Call) -> Fn:
    """`T.address_of(A[i])`: A's storage from element i on, a view sharing its memory, so a
    buffer declared on the pointer (`T.decl_buffer(..., data=p)`) reads and writes A's
    elements (the statement compiler checks that such buffers have A's dtype)."""
    load = e.args[0]
    if not isinstance(load, BufferLoad) or load.dtype.lanes != 1:
        raise InterpreterError("T.address_of needs one buffer element like A[i]", e.span)
    buf, off = c.address(load)
    dslot = c.slots.of(buf.data)

    def address(env: Env) -> np.ndarray:
        return storage_of(env, dslot, buf)[int(off(env)):]

    return address


def _packed(c: Compiler, e: Call) -> Fn:
    return compile_packed_call(c, e)


def _extern(c: Compiler, e: Call) -> Fn:
    return compile_c_call(c, e)


# The interpreter's rules by the name the intrinsic table gives (Intrinsic.interpreted); the
# GPU interpreter adds its own (tirc.ir.interpreter.gpu.GPU_RULES).
RULES: dict[str, Callable[[Compiler, Call], Fn]] = {
    "math": _math, "select": _select, "identity": _identity, "limit": _limit,
    "reinterpret": _reinterpret, "bitwise": _bitwise, "noop": _noop, "event": _event,
    "packed": _packed, "bitcount": _bitcount, "fixed_point": _fixed_point,
    "float_class": _float_class, "halves": _halves, "extern": _extern, "search": _search,
    "bounds_check": _bounds_check, "check": _bounds_check, "call_prim": _call_prim, "ret": _ret,
    "loop_jump": _loop_jump, "address": _address_of,
}
