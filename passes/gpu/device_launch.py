"""What the GPU schedule rules cannot reach: statements of a loop function outside every
block (imperative loops, stores, event tensors written by hand), launched on one thread.

The rules schedule blocks; a statement of the function's body that holds no thread-bound loop
after them holds no block either, so it runs as a kernel of one block of one thread, in
program order (a kernel boundary is a grid-wide barrier). Its CPU loop kinds (parallel,
vectorized) become serial there, and global storage of constant size it declares becomes the
thread's own (local). Storage declared around kernels (`T.decl_buffer`, lets) stays around
them; an event tensor there becomes a global counter buffer that a one-thread kernel sets to
its initial count first (the kernels run in program order, so each wait finds the
notifications of the statements before it: no megakernel).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.ir.expr import IntImm, Var, cast
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import thread_loops
from tirc.ir.ops.sinfo_util import INT64, const_dim
from tirc.ir.stmt import (
    Allocate,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, substitute


def serial_loops(s: Stmt) -> Stmt:
    """`s` with its parallel and vectorized loops serial (the CPU's loop kinds)."""
    return _Serial().visit(s)


class _Serial(Mutator):
    def visit_For(self, s: For) -> Stmt:
        s = self.generic_visit(s)
        if s.kind in (ForKind.PARALLEL, ForKind.VECTORIZED):
            return dataclasses.replace(s, kind=ForKind.SERIAL, annotations={})
        return s


class _Private(Mutator):
    """Global storage of constant size declared inside a kernel becomes the thread's own."""

    def visit_Allocate(self, s: Allocate) -> Stmt:
        s = self.generic_visit(s)
        buf = s.buffer
        if buf.scope != "global" or s.init is not None or \
                any(const_dim(d) is None for d in buf.shape):
            return s
        local = dataclasses.replace(buf, scope="local")
        return Allocate(local, substitute(s.body, {buf: local}))


def one_thread(s: Stmt, name: str) -> Stmt:
    """`s` as a kernel of one block of one thread."""
    one = IntImm(1, INT64)
    zero = IntImm(0, INT64)
    body = _Private().visit(serial_loops(s))
    return For(Var(f"{name}_bx", INT64), zero, one, ForKind.THREAD_BINDING,
               For(Var(f"{name}_tx", INT64), zero, one, ForKind.THREAD_BINDING, body,
                   thread_tag="threadIdx.x"), thread_tag="blockIdx.x")


def launch_rest(func: PrimFunc) -> PrimFunc:
    """`func` with every top-level statement that is not in a kernel made one."""
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"{func.name}_k{counter[0]}"

    def visit(s: Stmt) -> Stmt:
        if thread_loops(s) and not isinstance(s, (SeqStmt, Allocate, LetStmt, BlockRealize)):
            return s
        if isinstance(s, SeqStmt):
            return seq(*(visit(x) for x in s.seq))
        if isinstance(s, BlockRealize) and not s.iter_values:
            return dataclasses.replace(s, block=dataclasses.replace(
                s.block, body=visit(s.block.body)))
        if isinstance(s, Allocate) and s.init is not None:
            return counters(s, fresh(), visit)
        if isinstance(s, (Allocate, LetStmt)):
            return dataclasses.replace(s, body=visit(s.body))
        if thread_loops(s):
            return s
        return one_thread(s, fresh())

    body = visit(func.body)
    return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]


def counters(s: Allocate, name: str, visit: Callable[[Stmt], Stmt]) -> Stmt:
    """An event tensor around kernels: a global int buffer set to its initial count first."""
    buf = s.buffer
    glob = dataclasses.replace(buf, scope="global")
    shape = [cast(INT64, d) for d in buf.shape]
    idx = [Var(f"{name}_i{k}", INT64) for k in range(len(shape))]
    init: Stmt = BufferStore(glob, cast(buf.dtype, s.init), tuple(idx))
    for v, d in reversed(list(zip(idx, shape))):
        init = For(v, IntImm(0, INT64), d, ForKind.SERIAL, init)
    return Allocate(glob, seq(one_thread(init, name), visit(substitute(s.body, {buf: glob}))))
