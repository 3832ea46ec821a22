"""Buffers a block allocates that are private to each iteration of a parallel loop.

TVM allocates a block's buffer (`T.alloc_buffer`) at the lowest common ancestor of its uses
(PlanAndUpdateBufferAllocationLocation), so a buffer used only inside a `T.parallel` loop has
a copy of its own in every iteration: iterations that write the same elements of it (a cache
read MetaSchedule places under a parallel loop, rewritten on every iteration) do not race,
and nothing written in one iteration is seen by another. tirc keeps that meaning where it
cannot change a valid program's result: a buffer whose uses all lie in one `T.parallel` loop
that no other loop of the allocating block encloses (a serial loop of one iteration, as
`add_unit_loop` adds, does not count) is allocated afresh in each iteration of that loop.
`privatize_parallel_buffers` writes that down in the IR (the buffer leaves its
block's `alloc_buffers` and an `Allocate` opens the loop's body), and the reference
interpreter, the static checks and `lower-blocks` all read the function through it, so they
agree on what is private.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, IntImm, Var
from tirc.ir.stmt import Allocate, Block, BufferStore, For, ForKind, MatchBufferRegion, Stmt
from tirc.ir.visitor import Mutator, Visitor


class _Uses(Visitor):
    """The loops (outermost first) around every use of some buffers' storage, kept as the
    chain common to all uses of each buffer."""

    def __init__(self, datas: set[Var]) -> None:
        self.datas = datas
        self.stack: list[For] = []
        self.common: dict[Var, list[For]] = {}

    def use(self, data: Var) -> None:
        if data not in self.datas:
            return
        old = self.common.get(data)
        if old is None:
            self.common[data] = list(self.stack)
            return
        k = 0
        while k < len(old) and k < len(self.stack) and old[k] is self.stack[k]:
            k += 1
        del old[k:]

    def visit_For(self, s: For) -> None:
        """A serial loop of one iteration (`add_unit_loop`'s) carries nothing from one
        iteration to the next, so it does not count as a loop around the uses."""
        self.visit((s.min, s.extent))
        unit = s.kind == ForKind.SERIAL and isinstance(s.extent, IntImm) and s.extent.value == 1
        if not unit:
            self.stack.append(s)
        self.visit(s.body)
        if not unit:
            self.stack.pop()

    def visit_Buffer(self, b: Buffer) -> None:
        """A buffer's definition is not a use of its storage."""

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.use(e.buffer.data)
        self.visit(e.indices)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.use(s.buffer.data)
        self.visit((s.value, s.indices))

    def visit_Var(self, v: Var) -> None:
        self.use(v)

    def visit_MatchBufferRegion(self, m: MatchBufferRegion) -> None:
        self.use(m.source.buffer.data)
        self.visit(m.source.region)

    def visit_Block(self, b: Block) -> None:
        # declared reads and writes describe accesses, they are not uses of their own
        self.visit((b.iter_vars, b.match_buffers, b.annotations, b.init, b.body))


def private_loops(block: Block) -> dict[Var, For]:
    """For each buffer `block` allocates whose uses all lie inside one `T.parallel` loop of
    the block with no loop of the block around it: that loop (keyed by the buffer's data
    variable). Under a serial loop a buffer may carry values from one of its iterations to
    the next (`B[vi - 1, vj]` read an iteration of `i` after it was written), so it stays
    where it is; across the iterations of the parallel loop itself nothing may flow (that
    would be a race)."""
    uses = _Uses({b.data for b in block.alloc_buffers})
    uses.visit((block.init, block.body))
    return {data: chain[0] for data, chain in uses.common.items()
            if chain and chain[0].kind == ForKind.PARALLEL}


class _Privatize(Mutator):
    """Moves each parallel-private buffer from its block into the body of its loop."""

    def __init__(self) -> None:
        self.opened: dict[int, list[Buffer]] = {}

    def visit_Block(self, b: Block) -> Any:
        private = private_loops(b) if b.alloc_buffers else {}
        for buf in b.alloc_buffers:
            loop = private.get(buf.data)
            if loop is not None:
                self.opened.setdefault(id(loop), []).append(buf)
        new = self.generic_visit(b)
        if private:
            kept = tuple(buf for buf in b.alloc_buffers if buf.data not in private)
            new = new.replace(alloc_buffers=kept)
        return new

    def visit_For(self, s: For) -> Any:
        bufs = self.opened.pop(id(s), [])
        new = self.generic_visit(s)
        if not bufs:
            return new
        body: Stmt = new.body
        for buf in reversed(bufs):
            body = Allocate(buf, body, span=s.span)
        return new.replace(body=body)


def privatize_parallel_buffers(body: Stmt) -> Stmt:
    """`body` with every block buffer used only inside a `T.parallel` loop that no other loop
    of its block encloses allocated in each iteration of it (the same object when there is
    none)."""
    return _Privatize().visit(body)
