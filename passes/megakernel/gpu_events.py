"""The event counters of a GPU megakernel: one int32 workspace in global memory.

Every event tensor of the task graph (and the dynamic schedule's queue head) becomes a slice of
one global workspace the launch plan allocates. Slice `k` starts at `offsets[k]`, the sum of
the sizes of the tensors before it; sizes are expressions of the shape variables, so each
kernel computes the offsets once per thread into a small local table (rather than carrying
K nested sums in every index). The workspace is sized by an upper bound that the launch plan
can evaluate (a `Select` between sizes becomes their `max`).

The counters are initialised by a separate init kernel launched just before the megakernel
on the same stream (which orders the two launches), not by an init phase inside the
megakernel: that would need a grid-wide barrier, whose own counter would need initialising
before the launch, and a cooperative launch to be safe.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.arith.construct import fold
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, Cast, IntImm, PrimExpr, Select, Var, binop, cast
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Allocate, BufferStore, For, ForKind, IfThenElse, Stmt, seq
from tirc.ir.visitor import Mutator
from tirc.passes.megakernel.gpu_threads import thread_loop

WORKSPACE = "megakernel_events"


def upper_bound(e: PrimExpr) -> PrimExpr:
    """`e` with each `Select(c, a, b)` replaced by `max(a, b)`: an upper bound of a
    non-negative size the launch plan can evaluate (it knows + - * // % min max)."""
    if isinstance(e, Select):
        return binop("max", upper_bound(e.true_value), upper_bound(e.false_value))
    if isinstance(e, Cast):
        return cast(e.dtype, upper_bound(e.value))
    a, b = getattr(e, "a", None), getattr(e, "b", None)
    if isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        return binop(e.op, upper_bound(a), upper_bound(b))  # type: ignore[attr-defined]
    return e


def _size(buf: Buffer) -> PrimExpr:
    """The number of counters of an event tensor (int64)."""
    out: PrimExpr = IntImm(1, INT64)
    for d in buf.shape:
        out = binop("mul", out, cast(INT64, d))
    return fold(out)


@dataclass
class EventLayout:
    """Where each event tensor lives in the workspace, and how to fill the offset table."""

    workspace: Buffer
    events: list[tuple[Buffer, PrimExpr | None]]
    sizes: list[PrimExpr]   # one per event tensor, then 1 for the queue head when present
    queue_head: bool

    def table(self) -> tuple[Buffer, list[PrimExpr]]:
        """A fresh local offset table (one per kernel) and its loads."""
        n = len(self.sizes) + 1
        tab = Buffer(name="event_offset", shape=(IntImm(n, INT64),), dtype=INT64,
                     data=Var("event_offset", HANDLE), scope="local")
        return tab, [BufferLoad(tab, (IntImm(k, INT64),), INT64) for k in range(n)]

    def with_table(self, body_of: Any) -> Stmt:
        """`Allocate(table); fill it; body_of(loads)` (offsets of the slices)."""
        tab, loads = self.table()
        fill: list[Stmt] = [BufferStore(tab, IntImm(0, INT64), (IntImm(0, INT64),))]
        for k, size in enumerate(self.sizes):
            fill.append(BufferStore(tab, binop("add", loads[k], size), (IntImm(k + 1, INT64),)))
        return Allocate(tab, seq(*fill, body_of(loads)))

    def element(self, offsets: list[PrimExpr], k: int, index: PrimExpr) -> PrimExpr:
        """Counter `index` of slice `k` as a load of the workspace."""
        return BufferLoad(self.workspace, (binop("add", offsets[k], cast(INT64, index)),),
                          INT32)

    def head(self, offsets: list[PrimExpr]) -> PrimExpr:
        """The dynamic schedule's queue head (the last slot)."""
        return self.element(offsets, len(self.sizes) - 1, IntImm(0, INT64))

    def rewrite(self, s: Stmt, offsets: list[PrimExpr]) -> Stmt:
        """`s` with every access to an event tensor turned into one to the workspace."""
        return _ToWorkspace(self, offsets).visit(s)

    def init_kernel(self, threads: int, block_var: Var) -> Stmt:
        """The init kernel: one block writes every counter's initial value (queue head 0)."""
        def body(offsets: list[PrimExpr]) -> Stmt:
            parts: list[Stmt] = []
            inits = [init for _, init in self.events] + ([None] if self.queue_head else [])
            for k, (size, init) in enumerate(zip(self.sizes, inits)):
                value = cast(INT32, init) if init is not None else IntImm(0, INT32)
                o = Var(f"o{k}", INT64)

                def store(tx: Var, o: Var = o, k: int = k, size: PrimExpr = size,
                          value: PrimExpr = value) -> Stmt:
                    i = binop("add", binop("mul", o, threads), cast(INT64, tx))
                    put = BufferStore(self.workspace, value, (binop("add", offsets[k], i),))
                    return IfThenElse(binop("lt", i, size), put)

                count = binop("floordiv", binop("add", size, threads - 1), threads)
                parts.append(For(o, IntImm(0, INT64), count, ForKind.SERIAL,
                                 thread_loop(threads, store)))
            return seq(*parts)

        return For(block_var, IntImm(0, INT32), IntImm(1, INT32), ForKind.THREAD_BINDING,
                   self.with_table(body), thread_tag="blockIdx.x")


class _ToWorkspace(Mutator):
    """Event tensor element loads -> loads of the workspace at their slice's offset."""

    def __init__(self, layout: EventLayout, offsets: list[PrimExpr]) -> None:
        self.layout = layout
        self.offsets = offsets
        self.index = {buf: k for k, (buf, _) in enumerate(layout.events)}

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        k = self.index.get(e.buffer)
        if k is None:
            return self.generic_visit(e)
        flat: PrimExpr = IntImm(0, INT64)
        for d, i in zip(e.buffer.shape, e.indices):
            flat = binop("add", binop("mul", flat, cast(INT64, d)),
                         cast(INT64, self.visit(i)))
        return self.layout.element(self.offsets, k, flat)


def event_layout(events: list[tuple[Buffer, PrimExpr | None]], queue_head: bool
                 ) -> EventLayout:
    """The workspace slices of `events` (and a queue head slot when asked)."""
    sizes = [_size(buf) for buf, _ in events] + ([IntImm(1, INT64)] if queue_head else [])
    total: PrimExpr = IntImm(0, INT64)
    for s in sizes:
        total = fold(binop("add", total, upper_bound(s)))
    ws = Buffer(name=WORKSPACE, shape=(binop("max", total, IntImm(1, INT64)),), dtype=INT32,
                data=Var(WORKSPACE, HANDLE), scope="global")
    return EventLayout(ws, events, sizes, queue_head)


__all__ = ["EventLayout", "WORKSPACE", "event_layout", "upper_bound"]
