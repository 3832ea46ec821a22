"""Loop functions in the reference interpreter: compiled once to closures, run on numpy arrays.

Buffer parameters take numpy arrays whose dtype and rank match; symbolic dimensions bind from
the first array that has them and must agree afterwards. A buffer with explicit strides takes an
array with those element strides (a view), or its raw 1-D data; a buffer with a layout takes its
storage as a 1-D array (see `tirc.ir.layout.storage`). Scalar parameters take numbers,
storage parameters (`A_data: T.handle("float32")`) contiguous arrays, viewed flat.
Failures of the program (out-of-bounds access, failed assert, event deadlock) raise
InterpreterError with a message naming the buffer and index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.interpreter import sparse
from tirc.ir.interpreter.expr import ExprCompiler
from tirc.ir.interpreter.stmt import StmtCompiler
from tirc.ir.interpreter.values import (
    Env,
    InterpreterError,
    ReturnValue,
    Slots,
    Unset,
    np_dtype,
    to_scalar,
)
from tirc.ir.loop_jumps import loop_jump_errors
from tirc.ir.parallel_private import privatize_parallel_buffers
from tirc.ir.sparse.buffer import SparseBuffer, is_dense

DEFAULT_MAX_WHILE = 10_000_000

__all__ = ["DEFAULT_MAX_WHILE", "CompiledPrimFunc", "run_prim_func"]


class CompiledPrimFunc:
    """A loop function compiled to closures once; call it with arrays and scalars."""

    def __init__(self, func: PrimFunc, max_while_iterations: int = DEFAULT_MAX_WHILE,
                 externs: dict[str, Callable[..., Any]] | None = None,
                 callee: Callable[[str], CompiledPrimFunc] | None = None) -> None:
        self.func = func
        self.slots = Slots()
        self.ex = ExprCompiler(self.slots, externs)
        self.ex.callee = callee
        self.param_slots = [self.slots.of(p) for p in func.params]
        self.derived: list[tuple[Buffer, str, int, Callable[[Env], Any]]] = []
        for buf in func.buffers:
            self._compile_arg_checks(buf)
        for message, span in loop_jump_errors(func.body):
            raise InterpreterError(message, span)
        self.body = StmtCompiler(self.ex, max_while_iterations).compile(
            privatize_parallel_buffers(func.body))

    def _compile_arg_checks(self, buf: Buffer) -> None:
        self.slots.of(buf.data)
        for what, exprs in (("shape", buf.shape), ("strides", buf.strides)):
            for k, e in enumerate(exprs):
                if isinstance(e, Var):
                    self.slots.of(e)
                elif not isinstance(e, IntImm):
                    self.derived.append((buf, what, k, self.ex.compile(e)))
        if isinstance(buf.elem_offset, Var):
            self.slots.of(buf.elem_offset)

    def __call__(self, *args: Any) -> Any:
        """Run on arrays and numbers; returns the function's value (None when it has none)."""
        func = self.func
        if len(args) != len(func.params):
            raise InterpreterError(f"{func.name} takes {len(func.params)} arguments, "
                                   f"got {len(args)}")
        env = self.slots.fresh_env()
        writebacks: list[tuple[np.ndarray, np.ndarray]] = []
        actual: dict[tuple[int, str, int], int] = {}
        for p, slot, arg in zip(func.params, self.param_slots, args):
            if p not in func.buffer_map:
                env[slot] = self._scalar(p, arg)
        sparse_checks: list[Callable[[Env], None]] = []
        for p, arg in zip(func.params, args):
            buf = func.buffer_map.get(p)
            if isinstance(buf, SparseBuffer) and not is_dense(buf):
                env[self.slots.of(buf.data)] = sparse.bind_argument(buf, arg, sparse_checks,
                                                                    self.ex.buffers)
            elif buf is not None:
                self._bind_buffer(env, buf, arg, writebacks, actual)
        for check in sparse_checks:
            check(env)
        for buf, what, k, fn in self.derived:
            got = actual.get((id(buf), what, k))
            if got is None:
                continue
            want = int(fn(env))
            if got != want:
                raise InterpreterError(f"argument {buf.name}: {what}[{k}] is {got}, "
                                       f"expected {want}")
        try:
            return self._run(env)
        finally:
            for original, copy in writebacks:
                np.copyto(original, copy)

    def _run(self, env: Env) -> Any:
        """Run the body; the value of its `T.ret`, or None for a function without a result."""
        try:
            with np.errstate(all="ignore"):
                self.body(env)
        except ReturnValue as r:
            return r.value
        if self.func.ret_dtype is not None:
            raise InterpreterError(f"{self.func.name} ended without returning its "
                                   f"{self.func.ret_dtype} value", self.func.span)
        return None

    def call_direct(self, values: Sequence[Any]) -> Any:
        """A direct call from another loop function: handle and buffer parameters take the
        caller's storage arrays (aliased, not copied), scalars their values."""
        func = self.func
        env = self.slots.fresh_env()
        for p, slot, value in zip(func.params, self.param_slots, values):
            buf = func.buffer_map.get(p)
            if buf is not None:
                env[self.slots.of(buf.data)] = value
            elif p.dtype.is_handle:
                env[slot] = value
            else:
                env[slot] = to_scalar(value, p.dtype)
        return self._run(env)

    def _scalar(self, p: Var, arg: Any) -> Any:
        if p.dtype.is_handle:  # storage (`A_data: T.handle("float32")`): a contiguous array
            if not isinstance(arg, np.ndarray) or not arg.flags.c_contiguous:
                raise InterpreterError(f"argument {p.name}: expected a contiguous numpy array "
                                       f"as its storage, got {type(arg).__name__}")
            return arg.reshape(-1)
        if isinstance(arg, np.ndarray) and arg.ndim == 0:
            arg = arg[()]
        if not isinstance(arg, (int, float, bool, np.number, np.bool_)):
            raise InterpreterError(f"argument {p.name}: expected a {p.dtype} scalar, "
                                   f"got {type(arg).__name__}")
        return to_scalar(arg, p.dtype)

    def _bind_dim(self, env: Env, buf: Buffer, what: str, k: int, e: PrimExpr,
                  actual: int, derived: dict[tuple[int, str, int], int]) -> None:
        if isinstance(e, IntImm):
            if e.value != actual:
                raise InterpreterError(f"argument {buf.name}: {what}[{k}] is {actual}, "
                                       f"expected {e.value}")
        elif isinstance(e, Var):
            slot = self.slots.of(e)
            bound = env[slot]
            if isinstance(bound, Unset):
                env[slot] = actual
            elif bound != actual:
                raise InterpreterError(f"argument {buf.name}: {what}[{k}] is {actual}, but "
                                       f"{e.name} = {bound} from an earlier argument")
        else:
            derived[(id(buf), what, k)] = actual

    def _bind_buffer(self, env: Env, buf: Buffer, arg: Any,
                     writebacks: list[tuple[np.ndarray, np.ndarray]],
                     derived: dict[tuple[int, str, int], int]) -> None:
        if not isinstance(arg, np.ndarray):
            raise InterpreterError(f"argument {buf.name}: expected a numpy array, "
                                   f"got {type(arg).__name__}")
        want = np_dtype(buf.dtype)
        if arg.dtype != want:
            raise InterpreterError(f"argument {buf.name}: expected dtype {buf.dtype}, "
                                   f"got {arg.dtype}")
        slot = self.slots.of(buf.data)
        if buf.layout is not None:  # its storage, laid out by the layout: raw 1-D data
            if arg.ndim != 1 or not arg.flags.c_contiguous:
                raise InterpreterError(f"argument {buf.name}: a buffer with a layout takes its "
                                       f"storage as a contiguous 1-D array, got shape "
                                       f"{arg.shape}")
            env[slot] = arg
            return
        if buf.dtype.lanes > 1:
            self._bind_vector_buffer(env, buf, arg, writebacks, derived)
            return
        if buf.strides or buf.elem_offset is not None:
            if not buf.strides and arg.ndim == buf.ndim and not arg.flags.c_contiguous:
                # an elem_offset alone declares a compact layout: as for a plain buffer, the
                # function runs on a contiguous copy (its storage is read as row-major)
                copy = np.ascontiguousarray(arg)
                writebacks.append((arg, copy))
                arg = copy
            env[slot] = self._strided_storage(env, buf, arg, derived)
            return
        if arg.ndim != buf.ndim:
            raise InterpreterError(f"argument {buf.name}: expected {buf.ndim} dimensions, "
                                   f"got {arg.ndim}")
        for k, (e, actual) in enumerate(zip(buf.shape, arg.shape)):
            self._bind_dim(env, buf, "shape", k, e, int(actual), derived)
        if arg.flags.c_contiguous:
            env[slot] = arg.reshape(-1)
        else:
            copy = np.ascontiguousarray(arg)
            writebacks.append((arg, copy))
            env[slot] = copy.reshape(-1)

    def _bind_vector_buffer(self, env: Env, buf: Buffer, arg: np.ndarray,
                            writebacks: list[tuple[np.ndarray, np.ndarray]],
                            derived: dict[tuple[int, str, int], int]) -> None:
        """A buffer of vector elements (`T.Buffer((n,), "int32x2")`): its argument is an
        array of the element dtype with the lanes as one more, last, axis; its storage is
        (elements, lanes), so that one element loads and stores as a vector."""
        lanes = buf.dtype.lanes
        if buf.strides or buf.elem_offset is not None:
            raise InterpreterError(f"argument {buf.name}: a buffer of {buf.dtype} elements "
                                   f"with strides or an elem_offset is not supported")
        if arg.ndim != buf.ndim + 1 or arg.shape[-1] != lanes:
            raise InterpreterError(f"argument {buf.name}: a buffer of {buf.dtype} elements "
                                   f"takes an array of shape (*shape, {lanes}), got shape "
                                   f"{arg.shape}")
        for k, (e, actual) in enumerate(zip(buf.shape, arg.shape[:-1])):
            self._bind_dim(env, buf, "shape", k, e, int(actual), derived)
        storage = arg
        if not arg.flags.c_contiguous:
            storage = np.ascontiguousarray(arg)
            writebacks.append((arg, storage))
        env[self.slots.of(buf.data)] = storage.reshape(-1, lanes)

    def _bind_offset(self, env: Env, buf: Buffer) -> None:
        """A symbolic elem_offset is 0, an argument's elements starting at the array's first
        (as in a compiled library); one an earlier argument set otherwise is an error."""
        off = buf.elem_offset
        if not isinstance(off, Var):
            return
        slot = self.slots.of(off)
        if isinstance(env[slot], Unset):
            env[slot] = 0
        elif env[slot] != 0:
            raise InterpreterError(f"argument {buf.name}: elem_offset {off.name} is "
                                   f"{env[slot]}, but an argument's elements start at its "
                                   "data pointer (offset 0)")

    def _strided_storage(self, env: Env, buf: Buffer, arg: np.ndarray,
                         derived: dict[tuple[int, str, int], int]) -> np.ndarray:
        """Storage for a buffer with explicit strides: a strided view, or raw 1-D data."""
        if arg.ndim == 1 and buf.ndim != 1:
            if not arg.flags.c_contiguous:
                raise InterpreterError(f"argument {buf.name}: raw data must be contiguous")
            self._bind_offset(env, buf)
            return arg
        if arg.ndim != buf.ndim:
            raise InterpreterError(f"argument {buf.name}: expected {buf.ndim} dimensions, "
                                   f"got {arg.ndim}")
        item = arg.itemsize
        if any(s < 0 or s % item for s in arg.strides):
            raise InterpreterError(f"argument {buf.name}: strides {arg.strides} are not "
                                   f"nonnegative multiples of the element size")
        elem_strides = [s // item for s in arg.strides]
        if arg.flags.c_contiguous:
            # an empty array or extent-1 dimensions may report any strides there; a
            # C-contiguous array is compact (TVM passes it with no strides), as in tirc.runtime
            elem_strides = [int(np.prod([max(d, 1) for d in arg.shape[k + 1:]], dtype=np.int64))
                            for k in range(arg.ndim)]
        for k, (e, actual) in enumerate(zip(buf.shape, arg.shape)):
            self._bind_dim(env, buf, "shape", k, e, int(actual), derived)
        for k, (e, actual) in enumerate(zip(buf.strides, elem_strides)):
            self._bind_dim(env, buf, "strides", k, e, actual, derived)
        if isinstance(buf.elem_offset, Var):
            self._bind_offset(env, buf)
        elif buf.elem_offset is not None and not (
                isinstance(buf.elem_offset, IntImm) and buf.elem_offset.value == 0):
            raise InterpreterError(f"argument {buf.name}: a constant elem_offset needs the raw "
                                   f"1-D data as argument")
        if 0 in arg.shape:
            span = 0
        else:
            span = 1 + sum((d - 1) * s for d, s in zip(arg.shape, elem_strides))
        return np.lib.stride_tricks.as_strided(arg, shape=(span,), strides=(item,))


def run_prim_func(func: PrimFunc, args: Sequence[Any],
                  max_while_iterations: int = DEFAULT_MAX_WHILE) -> Any:
    """Run `func` on `args` (numpy arrays for buffers, numbers for scalars), in place;
    returns its value when it has one."""
    return CompiledPrimFunc(func, max_while_iterations)(*args)
