"""Event tensors: one int32 counter tensor per producer -> consumer edge, with its waits and
notifications.

A consumer tile `c` of an edge must wait for every producer tile `p` with `cond(p, c)`. The
counter `E[c]` starts at the producer kind's task count `P` (an expression of the shape
variables, so it is known before anything runs); each producer tile that `c` needs subtracts 1
when it finishes, and the consumer itself subtracts 1 for each producer tile it does not need
before it waits. So `E[c]` reaches 0 exactly when all the tiles `c` needs are done, whatever
the shapes, with a uniform `init`. When every consumer tile needs every producer tile
(`all_to_all`), the tensor has one element and the consumer subtracts nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, cast, logical_not
from tirc.ir.stmt import Evaluate, For, ForKind, IfThenElse, Stmt
from tirc.passes.megakernel.dependence import Edge
from tirc.passes.megakernel.tiling import TaskKind


@dataclass
class EventTensor:
    """The counters of one edge and their initial value."""

    edge: Edge
    buffer: Buffer
    init: PrimExpr


def event_call(op: str, elem: PrimExpr, count: PrimExpr | None = None) -> Stmt:
    """`T.event_wait(E[i])` or `T.event_notify(E[i], count)` (count 1 stays implicit)."""
    args: tuple[PrimExpr, ...] = (elem,) if count is None else (elem, count)
    return Evaluate(Call(op, args, INT32))


def make_events(kinds: list[TaskKind], edges: list[Edge]) -> list[EventTensor]:
    """One event tensor per edge, named after the producer and consumer kinds."""
    out = []
    for e in edges:
        prod, cons = kinds[e.src], kinds[e.dst]
        name = f"E_{prod.name}_{cons.name}"
        shape = (IntImm(1, cons.var.dtype),) if e.all_to_all else (cons.extent,)
        buf = Buffer(name=name, shape=shape, dtype=INT32, data=Var(name, HANDLE), scope="event")
        out.append(EventTensor(e, buf, cast(INT32, prod.extent)))
    return out


def _elem(ev: EventTensor, tile: PrimExpr) -> PrimExpr:
    index = IntImm(0, tile.dtype) if ev.edge.all_to_all else tile
    return BufferLoad(ev.buffer, (index,), INT32)


def waits(k: int, kinds: list[TaskKind], events: list[EventTensor]) -> list[Stmt]:
    """What a task of kind `k` does before it runs: settle its counters and wait on them."""
    out: list[Stmt] = []
    me = kinds[k]
    for ev in events:
        if ev.edge.dst != k:
            continue
        if not ev.edge.all_to_all:
            prod = kinds[ev.edge.src]
            p = Var("p", prod.var.dtype)
            skip = IfThenElse(logical_not(ev.edge.cond(p, me.var)),
                              event_call("event_notify", _elem(ev, me.var)))
            out.append(For(p, IntImm(0, p.dtype), prod.extent, ForKind.SERIAL, skip))
        out.append(event_call("event_wait", _elem(ev, me.var)))
    return out


def notifies(k: int, kinds: list[TaskKind], events: list[EventTensor]) -> list[Stmt]:
    """What a task of kind `k` does when it is done: notify the consumer tiles that need it."""
    out: list[Stmt] = []
    me = kinds[k]
    for ev in events:
        if ev.edge.src != k:
            continue
        if ev.edge.all_to_all:
            out.append(event_call("event_notify", _elem(ev, me.var)))
            continue
        cons = kinds[ev.edge.dst]
        c = Var("c", cons.var.dtype)
        need = IfThenElse(ev.edge.cond(me.var, c), event_call("event_notify", _elem(ev, c)))
        out.append(For(c, IntImm(0, c.dtype), cons.extent, ForKind.SERIAL, need))
    return out
