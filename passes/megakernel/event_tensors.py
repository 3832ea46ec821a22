"""Event tensors: int32 counter tensors for the producer -> consumer edges, with their waits
and notifications.

A consumer tile `c` of an edge must wait for every producer tile `p` with `cond(p, c)`. The
counter `E[c]` starts at the producer kind's task count `P` (an expression of the shape
variables, so it is known before anything runs); each producer tile that `c` needs subtracts 1
when it finishes, and the consumer itself subtracts 1 for each producer tile it does not need
before it waits. So `E[c]` reaches 0 exactly when all the tiles `c` needs are done, whatever
the shapes, with a uniform `init`. An edge gets a tensor of its own (`E_<producer>_<consumer>`)
unless every consumer tile needs every producer tile (`all_to_all`): all such edges of one
producer kind share its one-element completion counter `E_<producer>_done`, which each of its
tasks notifies once and each consumer waits on without subtracting anything. The two are
equivalent (the per-edge counter would start at `P` and count the same notifications); sharing
it turns a producer task's notifications into one atomic instead of one per consumer kind (a
transformer block has over 200 such edges, most from workspace reuse).
"""

from __future__ import annotations

from tirc.ir import intrinsics as intrin
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, cast, logical_not
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Evaluate, For, ForKind, IfThenElse, Stmt
from tirc.passes.megakernel.dependence import Edge
from tirc.passes.megakernel.tiling import TaskKind


@dataclass
class EventTensor:
    """The counters of some edges (one edge, or a producer's all-to-all edges) and their
    initial value."""

    edges: list[Edge]
    buffer: Buffer
    init: PrimExpr

    @property
    def all_to_all(self) -> bool:
        return self.edges[0].all_to_all


def event_call(op: str, elem: PrimExpr, count: PrimExpr | None = None) -> Stmt:
    """`T.event_wait(E[i])` or `T.event_notify(E[i], count)` (count 1 stays implicit)."""
    args: tuple[PrimExpr, ...] = (elem,) if count is None else (elem, count)
    return Evaluate(Call(op, args, INT32))


def make_events(kinds: list[TaskKind], edges: list[Edge]) -> list[EventTensor]:
    """One event tensor per edge that is not all-to-all, named after the producer and consumer
    kinds, and one completion counter per producer kind for its all-to-all edges."""
    out: list[EventTensor] = []
    done: dict[int, EventTensor] = {}
    for e in edges:
        prod, cons = kinds[e.src], kinds[e.dst]
        if e.all_to_all and e.src in done:
            done[e.src].edges.append(e)
            continue
        name = f"E_{prod.name}_done" if e.all_to_all else f"E_{prod.name}_{cons.name}"
        shape = (IntImm(1, prod.var.dtype),) if e.all_to_all else (cons.extent,)
        buf = Buffer(name=name, shape=shape, dtype=INT32, data=Var(name, HANDLE), scope="event")
        ev = EventTensor([e], buf, cast(INT32, prod.extent))
        if e.all_to_all:
            done[e.src] = ev
        out.append(ev)
    return out


def _elem(ev: EventTensor, tile: PrimExpr) -> PrimExpr:
    index = IntImm(0, tile.dtype) if ev.all_to_all else tile
    return BufferLoad(ev.buffer, (index,), INT32)


def waits(k: int, kinds: list[TaskKind], events: list[EventTensor]) -> list[Stmt]:
    """What a task of kind `k` does before it runs: settle its counters and wait on them."""
    out: list[Stmt] = []
    me = kinds[k]
    for ev in events:
        edge = next((e for e in ev.edges if e.dst == k), None)
        if edge is None:
            continue
        if not ev.all_to_all:
            prod = kinds[edge.src]
            p = Var("p", prod.var.dtype)
            skip = IfThenElse(logical_not(edge.cond(p, me.var)),
                              event_call(intrin.EVENT_NOTIFY, _elem(ev, me.var)))
            out.append(For(p, IntImm(0, p.dtype), prod.extent, ForKind.SERIAL, skip))
        out.append(event_call(intrin.EVENT_WAIT, _elem(ev, me.var)))
    return out


def notifies(k: int, kinds: list[TaskKind], events: list[EventTensor]) -> list[Stmt]:
    """What a task of kind `k` does when it is done: notify the consumer tiles that need it."""
    out: list[Stmt] = []
    me = kinds[k]
    for ev in events:
        if ev.edges[0].src != k:
            continue
        if ev.all_to_all:
            out.append(event_call(intrin.EVENT_NOTIFY, _elem(ev, me.var)))
            continue
        edge = ev.edges[0]
        cons = kinds[edge.dst]
        c = Var("c", cons.var.dtype)
        need = IfThenElse(edge.cond(me.var, c), event_call(intrin.EVENT_NOTIFY, _elem(ev, c)))
        out.append(For(c, IntImm(0, c.dtype), cons.extent, ForKind.SERIAL, need))
    return out
