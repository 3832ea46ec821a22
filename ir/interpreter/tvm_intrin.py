"""TVM's named intrinsics (tirc.ir.tvm_intrinsics) in the reference interpreter.

Float functions run through numpy in the operands' dtype; `q_multiply_shift` is TVM's
fixed-point multiply (`round(x * y * 2^-(q - s))`, half up, through int64); `call_extern` /
`call_pure_extern` call a C function of the process (libm's, for instance) through ctypes
when every operand and the result are numbers. GPU-only and scalable-vector intrinsics have
no meaning here and raise an InterpreterError naming the intrinsic.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from tirc.ir.expr import Call, StringImm
from tirc.ir.interpreter.values import Env, Fn, InterpreterError, make_wrap, np_dtype
from tirc.ir.tvm_intrinsics import tvm_intrinsic

if TYPE_CHECKING:
    from tirc.ir.interpreter.expr import ExprCompiler

_UNARY: dict[str, Callable[[Any], Any]] = {
    "fabs": np.abs, "nearbyint": np.rint, "log10": np.log10, "log1p": np.log1p,
    "exp10": lambda x: np.power(x.dtype.type(10) if hasattr(x, "dtype") else 10.0, x),
    "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
}
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "atan2": np.arctan2, "copysign": np.copysign, "hypot": np.hypot, "fmod": np.fmod,
    "nextafter": np.nextafter,
}
_PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}


def handles(op: str) -> bool:
    """Whether this module implements the intrinsic `op`."""
    return tvm_intrinsic(op) is not None and op not in (
        "shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
        "reinterpret")


def compile_tvm_call(c: ExprCompiler, e: Call) -> Fn:
    """The closure for one call of a TVM intrinsic."""
    entry = tvm_intrinsic(e.op)
    assert entry is not None
    if entry.device != "cpu+gpu":
        where = "a GPU" if entry.device == "gpu" else "a scalable-vector (SVE) target"
        return _fail(f"T.{e.op} only has a meaning on {where}; the interpreter runs CPU code")
    if e.op in ("call_extern", "call_pure_extern"):
        return _extern(c, e)
    if e.op in ("call_llvm_pure_intrin", "call_llvm_intrin", "llvm_lookup_intrinsic_id",
                "address_of"):
        return _fail(f"T.{e.op} is machine-level code the interpreter cannot run")
    fns = [c.compile(a) for a in e.args]
    if e.op in ("vectorlow", "vectorhigh", "vectorcombine"):
        return _halves(e, fns)
    dt = e.args[0].dtype if e.args else e.dtype
    ftype = np_dtype(dt).type
    if e.op in _UNARY:
        f, f0 = _UNARY[e.op], fns[0]
        return lambda env: ftype(f(f0(env))) if dt.lanes == 1 else f(f0(env)).astype(ftype)
    if e.op in _BINARY:
        f, fa, fb = _BINARY[e.op], fns[0], fns[1]
        return lambda env: ftype(f(fa(env), fb(env))) if dt.lanes == 1 else \
            f(fa(env), fb(env)).astype(ftype)
    if e.op == "ldexp":
        fa, fb = fns
        return lambda env: ftype(np.ldexp(fa(env), int(fb(env))))
    if e.op in _PREDICATES:
        p, f0 = _PREDICATES[e.op], fns[0]
        return lambda env: bool(p(f0(env))) if dt.lanes == 1 else p(f0(env))
    if e.op == "popcount":
        f0, bits = fns[0], dt.bits
        return lambda env: bin(int(f0(env)) & ((1 << bits) - 1)).count("1")
    if e.op == "clz":
        f0, bits = fns[0], dt.bits
        return lambda env: bits - (int(f0(env)) & ((1 << bits) - 1)).bit_length()
    if e.op == "q_multiply_shift":
        return _q_multiply_shift(e, fns)
    return _fail(f"the interpreter does not support the intrinsic '{e.op}'")


def _halves(e: Call, fns: list[Fn]) -> Fn:
    """The low or high half of a vector, or two vectors joined."""
    if e.op == "vectorcombine":
        fa, fb = fns
        return lambda env: np.concatenate([np.atleast_1d(fa(env)), np.atleast_1d(fb(env))])
    f0, half = fns[0], e.args[0].dtype.lanes // 2
    if e.op == "vectorlow":
        return lambda env: np.asarray(f0(env))[:half]
    return lambda env: np.asarray(f0(env))[half:]


def _q_multiply_shift(e: Call, fns: list[Fn]) -> Fn:
    wrap = make_wrap(e.dtype)
    fx, fy, fq, fs = fns

    def run(env: Env) -> int:
        x, y, q, s = (int(f(env)) for f in (fx, fy, fq, fs))
        left, right = max(s, 0), max(-s, 0)
        x = make_wrap(e.dtype)(x << left)
        total = q + right
        product = x * y + (1 << (total - 1))
        return wrap(product >> total)

    return run


def _extern(c: ExprCompiler, e: Call) -> Fn:
    if not e.args or not isinstance(e.args[0], StringImm):
        return _fail(f"T.{e.op} needs the C function's name first")
    name = e.args[0].value
    operands = e.args[1:]
    if not all(a.dtype.lanes == 1 and (a.dtype.is_float or a.dtype.is_int)
               for a in operands) or not (e.dtype.is_float or e.dtype.is_int):
        return _fail(f"T.{e.op}(\"{name}\", ...) passes pointers or vectors; the interpreter "
                     "only calls C functions of numbers")
    fn = _c_function(name)
    if fn is None:
        return _fail(f"T.{e.op}: no C function '{name}' in this process")
    fn.restype = _ctype(e.dtype)
    fn.argtypes = [_ctype(a.dtype) for a in operands]
    fns = [c.compile(a) for a in operands]
    out = np_dtype(e.dtype).type
    return lambda env: out(fn(*(f(env) for f in fns)))


def _c_function(name: str) -> Any:
    for lib in (None, ctypes.util.find_library("m")):
        try:
            return getattr(ctypes.CDLL(lib), name)
        except (AttributeError, OSError):
            continue
    return None


def _ctype(dt: Any) -> Any:
    if dt.is_float:
        return {32: ctypes.c_float, 64: ctypes.c_double}.get(dt.bits, ctypes.c_float)
    signed = dt.kind == "int"
    return {8: ctypes.c_int8 if signed else ctypes.c_uint8,
            16: ctypes.c_int16 if signed else ctypes.c_uint16,
            32: ctypes.c_int32 if signed else ctypes.c_uint32,
            64: ctypes.c_int64 if signed else ctypes.c_uint64}[dt.bits]


def _fail(message: str) -> Fn:
    def fail(env: Env) -> Any:
        raise InterpreterError(message)

    return fail
