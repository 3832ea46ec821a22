"""gpu-storage-sync: insert the block barriers that shared memory needs, where they are missing.

In a kernel, the statements between the blockIdx loops and the threadIdx loops run for the
whole block in step: sibling threadIdx loops are phases. When one phase writes a shared (or
global) buffer that a later phase reads or writes (or reads one that a later phase
overwrites), the threads must meet at a barrier in between, `T.tvm_storage_sync("shared")`
(bar.sync 0, which also orders the block's global memory accesses): a row's maximum that one
thread stores in a global workspace and every thread then reads, for instance. This pass
walks each kernel's block-level statements in order, tracks the shared accesses made since the
last barrier, and puts a barrier before the first statement that conflicts with them. A serial
loop at block level is walked twice, so that a conflict between the end of one iteration and
the start of the next (a tiled matmul's k loop) gets its barrier too.

A threadIdx loop is walked inside too, the way TVM's ThreadSync walks one thread's program:
MetaSchedule's kernels run everything in one threadIdx loop, each thread fetching its share
of a tile (a loop bound to the same axis, unified by gpu-thread-binding) before all of them
read the tile; a hand-written kernel (TVM's attention kernels) has barriers of its own there
and leaves the others to the compiler (the one before a loop's next iteration overwrites a
tile the last one read). Inside it a barrier goes only where every thread reaches
it (under conditions, loop bounds and lets that do not depend on the thread), before a whole
serial loop rather than in each of its iterations, and a write after a write does not wait
(only reads after writes and writes after reads do, as in ThreadSync).

Two accesses conflict unless both are reads, or both index the buffer with the same expression
of the thread indices (each thread then touches only its own elements): `S[tx] = ...` followed
by `... = S[tx]` in a loop bound to the same axis needs no barrier. Barriers already present are
kept and counted. The analysis is conservative: it may add a barrier that is not needed, never
omit one that is.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, Let, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.launch import launch_extents
from tirc.ir.gpu.threads import (
    THREAD_TAGS,
    barrier,
    const_value,
    has_barrier,
    is_barrier,
    is_block_tag,
    is_thread_loop,
    map_regions,
    walk_stmts,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import escaping_loop_jumps
from tirc.ir.module import IRModule
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
    seq,
)
from tirc.ir.structural import same_expr, structural_equal
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.pass_base import PassContext, PrimFuncPass

PRIVATE_SCOPES = ("local", "warp")  # one copy per thread: never shared between phases


@dataclass(frozen=True)
class Access:
    """One access to a shared buffer: its storage, whether it writes, and its index in terms
    of the canonical thread indices (None when it also depends on thread-private values)."""

    data: Var
    write: bool
    index: tuple[PrimExpr, ...] | None


class _Region:
    """The thread axes of one kernel, for telling thread-private accesses apart."""

    def __init__(self, region: Stmt) -> None:
        extents = launch_extents(region)
        self.canonical = {tag: Var(tag, extents[tag].dtype) for tag in extents}
        # An index is thread-private only if it names every thread axis with more than one
        # thread (otherwise threads differing in that axis share the element).
        self.required = {self.canonical[t] for t in THREAD_TAGS
                         if t in extents and const_value(extents[t]) != 1}
        # the variables of the threadIdx loops enclosing the statement being walked
        self.bound: dict[Var, Var] = {}

    def accesses(self, s: Stmt) -> list[Access]:
        local: set[Var] = set()
        rename: dict[Any, Any] = dict(self.bound)
        for x in walk_stmts(s):
            if is_thread_loop(x) and not is_block_tag(x.thread_tag):
                rename[x.loop_var] = self.canonical[x.thread_tag]  # type: ignore[index]
            elif isinstance(x, For):
                local.add(x.loop_var)
            elif isinstance(x, LetStmt):
                local.add(x.var)

        def visit(n: Any) -> None:
            if isinstance(n, Let):
                local.add(n.var)

        post_order_visit(s, visit)
        out: list[Access] = []

        def record(buf: Buffer, indices: tuple[PrimExpr, ...], write: bool) -> None:
            if buf.scope in PRIVATE_SCOPES:
                return
            index: tuple[PrimExpr, ...] | None = tuple(substitute(i, rename) for i in indices)
            names = used_vars(*index)
            if names & local or not self.required <= names:
                index = None
            out.append(Access(buf.data, write, index))

        def collect(n: Any) -> None:
            if isinstance(n, BufferLoad):
                record(n.buffer, n.indices, False)
            elif isinstance(n, BufferStore):
                record(n.buffer, n.indices, True)

        post_order_visit(s, collect)
        return out


def _conflict(before: list[Access], after: list[Access], waw: bool = True) -> bool:
    """Whether some access of `after` must wait for one of `before` made by another thread:
    a read after a write, a write after a read and, with `waw`, a write after a write."""
    for a in before:
        for b in after:
            if a.data is not b.data or not (a.write or b.write):
                continue
            if not waw and a.write and b.write:
                continue
            if a.index is None or b.index is None or len(a.index) != len(b.index):
                return True
            if not all(same_expr(x, y) for x, y in zip(a.index, b.index)):
                return True
    return False


class _Sync:
    def __init__(self, region: Stmt) -> None:
        self.info = _Region(region)
        # variables whose value may differ between the threads of a block (thread indices,
        # and lets bound from them), inside the threadIdx loops being walked
        self.divergent: set[Var] = set()

    def _uniform(self, *exprs: PrimExpr) -> bool:
        """Whether every thread of the block computes the same value for `exprs` (so a
        barrier under them is reached by all threads or by none)."""
        return not used_vars(*exprs) & self.divergent

    def _conflict(self, before: list[Access], after: list[Access]) -> bool:
        """`_conflict`, where inside a thread loop a write after a write does not wait (as in
        TVM's ThreadSync: one thread's program writing a tile in several statements)."""
        return _conflict(before, after, waw=not self.divergent)

    def run(self, s: Stmt, pending: list[Access]) -> tuple[Stmt, list[Access]]:
        """`s` with barriers added, and the shared accesses pending after it."""
        if is_barrier(s):
            return s, []
        if is_thread_loop(s) and is_block_tag(s.thread_tag):  # type: ignore[attr-defined]
            body, out = self.run(s.body, pending)  # type: ignore[attr-defined]
            return s.replace(body=body), out  # type: ignore[return-value]
        if is_thread_loop(s) and self._uniform(s.min, s.extent):  # type: ignore[attr-defined]
            return self._thread_loop(s, pending)  # type: ignore[arg-type]
        if self.divergent and not self._divergence_free(s):
            return self._leaf(s, pending)
        if isinstance(s, SeqStmt):
            items = []
            for item in s.seq:
                new, pending = self.run(item, pending)
                items.append(new)
            return seq(*items) if items else s, pending
        if isinstance(s, (For, While)) and not is_thread_loop(s) and self.divergent:
            # inside a thread loop, as TVM's ThreadSync places them: a loop whose iterations
            # need no barrier between them is taken whole, and a loop that must wait gets
            # one barrier before it rather than one in each of its iterations
            acc = self.info.accesses(s)
            if not self._conflict(acc, acc):
                return self._leaf(s, pending)
            if self._conflict(pending, acc):
                new, out = self._serial(s, [])
                return seq(barrier(s.span), new), out
            return self._serial(s, pending)
        if isinstance(s, (For, While)) and not is_thread_loop(s):
            return self._serial(s, pending)
        if isinstance(s, IfThenElse):
            then, p1 = self.run(s.then_case, pending)
            other, p2 = self.run(s.else_case, pending) if s.else_case is not None else (None, [])
            return s.replace(then_case=then, else_case=other), p1 + p2  # type: ignore[return-value]
        if isinstance(s, (LetStmt, AttrStmt, Allocate)):
            body, out = self.run(s.body, pending)
            return dataclasses.replace(s, body=body), out
        return self._leaf(s, pending)

    def _thread_loop(self, s: For, pending: list[Access]) -> tuple[Stmt, list[Access]]:
        """A threadIdx loop: a barrier before it where it conflicts with
        what is pending, and inside its body where its statements exchange data through
        shared memory (the cooperative fetch of a tile and the compute reading it, within
        one thread loop, as TVM's UnifyThreadBinding leaves MetaSchedule's kernels)."""
        before = self._conflict(pending, self.info.accesses(s))
        if before:
            pending = []
        self.info.bound[s.loop_var] = self.info.canonical[s.thread_tag]  # type: ignore[index]
        self.divergent.add(s.loop_var)
        try:
            body, out = self.run(s.body, pending)
        finally:
            del self.info.bound[s.loop_var]
            self.divergent.discard(s.loop_var)
        new: Stmt = s if body is s.body else s.replace(body=body)
        return (seq(barrier(s.span), new) if before else new), out

    def _serial(self, s: For | While, pending: list[Access]) -> tuple[Stmt, list[Access]]:
        """A serial loop, walked twice: the next iteration sees this one's tail; indices of
        the loop's own variable differ between iterations, so they cannot be proved the same
        there."""
        _, tail = self.run(s.body, pending)
        jumps = bool(escaping_loop_jumps(s.body))
        if jumps:
            # a break or continue ends an iteration early, before barriers of the body:
            # what any part of the body did may be pending after it
            tail = tail + self.info.accesses(s.body)
        own = {s.loop_var} if isinstance(s, For) else set()
        carried = [a if a.index is None or not used_vars(*a.index) & own
                   else Access(a.data, a.write, None) for a in tail]
        body, tail = self.run(s.body, pending + carried)
        if jumps:
            tail = carried + tail
        return s.replace(body=body), pending + tail  # type: ignore[return-value]

    def _divergence_free(self, s: Stmt) -> bool:
        """Inside a thread loop: whether `s`'s own control (a condition, a loop's bounds, a
        let's value) is the same for every thread, so barriers may go inside it."""
        if isinstance(s, (IfThenElse, While)):
            return self._uniform(s.condition)
        if isinstance(s, For):
            return self._uniform(s.min, s.extent)
        if isinstance(s, LetStmt) and not self._uniform(s.value):
            self.divergent.add(s.var)
        return True

    def _leaf(self, s: Stmt, pending: list[Access]) -> tuple[Stmt, list[Access]]:
        """A statement taken whole: a barrier before it where it conflicts."""
        acc = self.info.accesses(s)
        if has_barrier(s):
            # A statement with barriers inside: conservatively, all its accesses are both
            # before its first barrier and after its last.
            if self._conflict(pending, acc):
                return seq(barrier(s.span), s), acc
            return s, acc
        if self._conflict(pending, acc):
            return seq(barrier(s.span), s), acc
        return s, pending + acc


def sync_region(region: For) -> Stmt:
    """One kernel with the barriers its shared memory needs."""
    return _Sync(region).run(region, [])[0]


@dataclass(frozen=True)
class GPUStorageSync(PrimFuncPass):
    """Insert missing block barriers between shared-memory phases (see the module docstring)."""

    name: ClassVar[str] = "gpu-storage-sync"
    description: ClassVar[str] = ("insert T.tvm_storage_sync(\"shared\") where phases of a block "
                                  "exchange data through shared memory")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = map_regions(func.body, sync_region)
        if structural_equal(body, func.body):
            return func
        return func.replace(body=body)  # type: ignore[return-value]
