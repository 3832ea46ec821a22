"""External calls in the reference interpreter: `tirc.call_packed`, the host-function form of
`R.call_dps_packed` (written by lower-graph; the form is described in
tirc.ir.packed_call), and `T.call_extern` / `T.call_pure_extern` of a C function on numbers.

Each `tirc.dltensor` argument becomes a numpy view of its buffer's storage (from the element
it names, with its extents), and the Python callable registered for the symbol in the
interpreter's `externs` is called with the views, inputs then outputs, as the graph
interpreter calls it for `R.call_dps_packed`. A callable may return a nonzero int to report
a failure, as the C function would. A print's slot (R.print, tirc.ir.print_call) prints as
the graph interpreter does unless `externs` gives another function for it.

`T.call_extern("float32", "expf", x)` calls the process's C function (libm's, for instance)
through ctypes when every operand and the result are numbers; one that passes pointers or
vectors is an InterpreterError naming it (compiled code runs it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Any

import numpy as np
from tirc.ir import intrinsics as intrin
from tirc.ir.dtype import DType
from tirc.ir.expr import BufferLoad, Call, StringImm
from tirc.ir.interpreter.buffer import storage_of
from tirc.ir.interpreter.print_ops import print_packed
from tirc.ir.interpreter.values import (
    Compiler,
    Env,
    Fn,
    InterpreterError,
    format_shape,
    np_dtype,
)
from tirc.ir.print_call import is_print_symbol


def _strings(e: Call) -> tuple[str, str]:
    if len(e.args) < 2 or not all(isinstance(a, StringImm) for a in e.args[:2]):
        raise InterpreterError("tirc.call_packed takes the C symbol and the caller's name, then "
                               "the tensors")
    return e.args[0].value, e.args[1].value  # type: ignore[attr-defined]


def _tensor(c: Compiler, e: Any) -> Fn:
    """A closure giving the numpy view one `tirc.dltensor` argument denotes."""
    if not isinstance(e, Call) or e.op != intrin.DLTENSOR or len(e.args) < 2 \
            or not isinstance(e.args[1], BufferLoad):
        raise InterpreterError("the tensors of tirc.call_packed must be tirc.dltensor calls "
                               "on a buffer element")
    buf, offset = c.address(e.args[1])
    dslot = c.slots.of(buf.data)
    dim_fns = [c.compile(d) for d in e.args[2:]]

    def view(env: Env) -> np.ndarray:
        dims = tuple(int(f(env)) for f in dim_fns)
        storage = storage_of(env, dslot, buf)
        size = math.prod(dims)
        if size == 0:
            return np.zeros(dims, dtype=storage.dtype)
        start = int(offset(env))
        if start + size > storage.size:
            raise InterpreterError(f"tensor {buf.name} of shape {format_shape(dims)} at element "
                                   f"{start} runs past its storage ({storage.size} elements)")
        return storage[start:start + size].reshape(dims)

    return view


def compile_packed_call(c: Compiler, e: Call) -> Fn:
    """The closure for one `tirc.call_packed`: build the views, call the extern, check it."""
    symbol, caller = _strings(e)
    views = [_tensor(c, a) for a in e.args[2:]]
    externs = c.externs
    printer = print_packed(symbol) if is_print_symbol(symbol) else None

    def call(env: Env) -> int:
        fn = externs.get(symbol, printer)
        if fn is None:
            raise InterpreterError(f"{caller}: no extern registered for '{symbol}'")
        code = fn(*[v(env) for v in views])
        if code:
            raise InterpreterError(f"{caller}: external function '{symbol}' returned {int(code)}")
        return 0

    return call


def compile_c_call(c: Compiler, e: Call) -> Fn:
    """The closure for one `T.call_extern(dtype, "name", operands...)` of a C function."""
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


def _ctype(dt: DType) -> Any:
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
