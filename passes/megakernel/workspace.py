"""All event counters of a task graph packed into one int32 workspace buffer.

    events = (one int32 buffer of sum(sizes) + extra elements, allocated once, not filled)
    event_offset[i] = offset of event tensor i in it       (a table, filled on the host)
    E_i[j, k]  ->  events[event_offset[i] + j * cols + k]

One allocation instead of one nested allocation per event tensor (a transformer block has
hundreds), so later passes never recurse through a deep chain of scopes, and the runtime fills
every counter inside the parallel region (`fill`) before any task runs. Each tensor starts on a
fresh 64-byte line, so counters of different edges do not share a cache line. The runtime may
ask for `extra` elements after the counters (the dynamic scheduler's queue).
"""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, cast
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Allocate, BufferStore, For, ForKind, LetStmt, Stmt, seq
from tirc.ir.visitor import Mutator

LINE = 16   # int32 counters per 64-byte cache line


def ceil_div(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`ceil(a / b)` for a >= 0, b > 0."""
    return binop("floordiv", binop("add", a, binop("sub", b, 1)), b)


@dataclass
class EventWorkspace:
    """The packed buffer, the offset table and what each event tensor became."""

    buffer: Buffer
    table: Buffer
    size: Var
    events: list[tuple[Buffer, PrimExpr | None]]
    extra: PrimExpr

    def offset(self, i: int) -> PrimExpr:
        """Where event tensor `i` starts (i = len(events): where the extra elements start)."""
        return BufferLoad(self.table, (IntImm(i, INT64),), INT64)

    def at(self, index: PrimExpr) -> BufferLoad:
        """Element `index` of the workspace."""
        return BufferLoad(self.buffer, (cast(INT64, index),), INT32)

    def rewrite(self, s: Stmt) -> Stmt:
        """`s` with every access to an event tensor turned into one to the workspace."""
        return _Rewrite(self).visit(s)

    def allocate(self, body: Stmt) -> Stmt:
        """`body` inside the offset table (filled first) and the workspace."""
        fill: list[Stmt] = [BufferStore(self.table, IntImm(0, INT64), (IntImm(0, INT64),))]
        for i, (buf, _) in enumerate(self.events):
            size = binop("mul", ceil_div(_size(buf), IntImm(LINE, INT64)), LINE)
            fill.append(BufferStore(self.table, binop("add", self.offset(i), size),
                                    (IntImm(i + 1, INT64),)))
        total = binop("add", self.offset(len(self.events)), self.extra)
        return Allocate(self.table, seq(*fill, LetStmt(self.size, total,
                                                       Allocate(self.buffer, body))))

    def fill(self, worker: PrimExpr, workers: PrimExpr) -> Stmt:
        """Every counter set to its tensor's initial value, the elements dealt round-robin to
        the workers (worker `worker` of `workers` does its share)."""
        out: list[Stmt] = []
        for i, (buf, init) in enumerate(self.events):
            q = Var(f"fill{i}", INT64)
            size = _size(buf)
            count = ceil_div(binop("sub", size, worker), workers)
            elem = binop("add", worker, binop("mul", q, workers))
            value = cast(INT32, init) if init is not None else IntImm(0, INT32)
            store = BufferStore(self.buffer, value, (binop("add", self.offset(i), elem),))
            out.append(For(q, IntImm(0, INT64), binop("max", count, IntImm(0, INT64)),
                           ForKind.SERIAL, store))
        return seq(*out)


def pack_events(events: list[tuple[Buffer, PrimExpr | None]],
                extra: PrimExpr | None = None) -> EventWorkspace:
    """The workspace for `events` plus `extra` trailing elements."""
    size = Var("events_size", INT64)
    buf = Buffer(name="events", shape=(size,), dtype=INT32, data=Var("events", HANDLE),
                 scope="event")
    table = Buffer(name="event_offset", shape=(IntImm(len(events) + 1, INT64),), dtype=INT64,
                   data=Var("event_offset", HANDLE), scope="local")
    return EventWorkspace(buf, table, size, list(events), extra if extra is not None
                          else IntImm(0, INT64))


def _size(buf: Buffer) -> PrimExpr:
    """The number of elements of `buf`, as int64."""
    out: PrimExpr = IntImm(1, INT64)
    for d in buf.shape:
        out = binop("mul", out, cast(INT64, d))
    return out


def _flat(buf: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
    """Row-major element offset of `indices` in `buf`."""
    out: PrimExpr = IntImm(0, INT64)
    for idx, dim in zip(indices, buf.shape):
        out = binop("add", binop("mul", out, cast(INT64, dim)), cast(INT64, idx))
    return out


class _Rewrite(Mutator):
    """Event tensor elements -> workspace elements."""

    def __init__(self, ws: EventWorkspace) -> None:
        self.ws = ws
        self.index = {buf.data: i for i, (buf, _) in enumerate(ws.events)}

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        i = self.index.get(e.buffer.data)
        if i is None:
            return self.generic_visit(e)
        indices = tuple(self.visit(x) for x in e.indices)
        return self.ws.at(binop("add", self.ws.offset(i), _flat(e.buffer, indices)))

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        i = self.index.get(s.buffer.data)
        if i is None:
            return self.generic_visit(s)
        indices = tuple(self.visit(x) for x in s.indices)
        return BufferStore(self.ws.buffer, self.visit(s.value),
                           (binop("add", self.ws.offset(i), _flat(s.buffer, indices)),))
