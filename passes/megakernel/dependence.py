"""Which producer tiles each consumer tile needs, from the regions the tasks access.

For every task kind, the buffer elements one task (tile `t`) reads and writes are boxes whose
bounds are expressions of `t`: each access index, with block iteration variables replaced by
their bound values, relaxed over the loops inside the task (tirc's region relaxation). Two
tiles of different kinds conflict when they touch the same storage and one of them writes
(read-after-write, and also write-after-read and write-after-write, because memory-plan reuses
workspace storage between tensors). The conflict is an exact box overlap when both accesses go
through the same buffer view (so producer and consumer tilings may differ freely), and an
overlap of the flat element intervals when two views share storage. The result is a boolean
expression of the producer tile `p`, the consumer tile `c` and the symbolic shape variables;
the event tensors evaluate it at run time, so one binary serves every shape. A bound that reads
a buffer some task writes (a gather by indices computed in the same megakernel) is widened to
the whole dimension: the conditions are evaluated before such a buffer need hold its values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

from tirc.ir.analysis.regions import Bounds, full_bounds, relax, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.arith.fold import is_false, is_true
from tirc.ir.buffer import Buffer, Range
from tirc.ir.dtype import BOOL, INT64
from tirc.ir.expr import (
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    StringImm,
    Var,
    binop,
    logical_and,
    logical_or,
    select,
)
from tirc.ir.intrinsics import DLTENSOR
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import Node
from tirc.ir.stmt import Allocate, BlockRealize, BufferStore, For, IfThenElse, LetStmt, Stmt
from tirc.ir.structural import same_expr
from tirc.ir.visitor import any_node, post_order_visit, substitute
from tirc.passes.megakernel.tiling import TaskKind

Cond = Callable[[PrimExpr, PrimExpr], PrimExpr]


@dataclass
class Access:
    """A box of `buffer` that one task reads or writes; bounds are inclusive, per dimension."""

    buffer: Buffer
    write: bool
    box: list[Bounds]


@dataclass
class Edge:
    """Tiles `p` of kind `src` must finish before tiles `c` of kind `dst` when `cond(p, c)`."""

    src: int
    dst: int
    cond: Cond
    all_to_all: bool


@dataclass
class _Scope:
    dom: dict[Var, Bounds] = field(default_factory=dict)
    subst: dict[Var, PrimExpr] = field(default_factory=dict)
    inner: set[Var] = field(default_factory=set)
    local: set[Var] = field(default_factory=set)


class _Collector:
    """Walks one task body, recording the boxes of non-local buffers it touches."""

    def __init__(self) -> None:
        self.scope = _Scope()
        self.accesses: list[Access] = []

    def stmt(self, s: Any) -> None:
        sc = self.scope
        if isinstance(s, For):
            lo = relax(substitute(s.min, sc.subst), sc.dom)
            last = relax(substitute(binop("sub", binop("add", s.min, s.extent), 1), sc.subst),
                         sc.dom)
            self.exprs(s.min, s.extent)
            if lo is None or last is None or uses_any(lo, sc.inner) or uses_any(last, sc.inner):
                sc.inner.add(s.loop_var)
            else:
                sc.dom[s.loop_var] = (lo[0], last[1])
            self.stmt(s.body)
        elif isinstance(s, BlockRealize):
            for iv, value in zip(s.block.iter_vars, s.iter_values):
                sc.subst[iv.var] = substitute(value, sc.subst)
            for buf in s.block.alloc_buffers:
                sc.local.add(buf.data)
            for mb in s.block.match_buffers:
                src = mb.source.buffer
                self.accesses.append(Access(src, True, self._full(src)))
                sc.local.add(mb.buffer.data)
            self.exprs(s.predicate)
            if s.block.init is not None:
                self.stmt(s.block.init)
            self.stmt(s.block.body)
        elif isinstance(s, IfThenElse) and s.else_case is not None and \
                not uses_any(substitute(s.condition, sc.subst), sc.inner | set(sc.dom)):
            # A choice the task makes once (a condition on shapes and the tile): the boxes of
            # the branch taken, not the hull of both.
            self.exprs(s.condition)
            outer = self.accesses
            self.accesses = []
            self.stmt(s.then_case)
            then = hull(self.accesses)
            self.accesses = []
            self.stmt(s.else_case)
            other = hull(self.accesses)
            self.accesses = outer + _choose(substitute(s.condition, sc.subst), then, other)
        elif isinstance(s, Allocate):
            sc.local.add(s.buffer.data)
            self.stmt(s.body)
        elif isinstance(s, LetStmt):
            sc.inner.add(s.var)
            self.exprs(s.value)
            self.stmt(s.body)
        elif isinstance(s, BufferStore):
            self.access(s.buffer, s.indices, True)
            self.exprs(s.value, *s.indices)
        elif isinstance(s, Node):
            for _, value in s.node_fields():
                self.field(value)

    def field(self, value: Any) -> None:
        if isinstance(value, Stmt):
            self.stmt(value)
        elif isinstance(value, PrimExpr):
            self.exprs(value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                self.field(v)

    def exprs(self, *es: PrimExpr) -> None:
        def visit(n: object) -> None:
            if isinstance(n, BufferLoad):
                self.access(n.buffer, n.indices, False)
            elif isinstance(n, Call) and n.op == DLTENSOR and len(n.args) >= 2 and \
                    isinstance(n.args[1], BufferLoad):
                # A tensor passed to an external function (R.call_dps_packed): the function
                # may touch all of it; "out" tensors are written.
                buf = n.args[1].buffer
                mode = n.args[0]
                write = isinstance(mode, StringImm) and mode.value == "out"
                self.access(buf, (), write)

        for e in es:
            post_order_visit(e, visit)

    def _full(self, buf: Buffer) -> list[Bounds]:
        return [full_bounds(buf, d) for d in range(len(buf.shape))]

    def access(self, buf: Buffer, indices: tuple[PrimExpr, ...], write: bool) -> None:
        sc = self.scope
        if buf.data in sc.local or _block_private(buf):
            return
        if len(indices) != len(buf.shape):
            self.accesses.append(Access(buf, write, self._full(buf)))
            return
        box: list[Bounds] = []
        for d, index in enumerate(indices):
            e = substitute(index, sc.subst)
            r = None if uses_any(e, sc.inner) else relax(e, sc.dom)
            if r is None or r[0].dtype.lanes != 1:
                r = full_bounds(buf, d)
            box.append(r)
        self.accesses.append(Access(buf, write, box))


def _block_private(buf: Buffer) -> bool:
    """A GPU on-chip buffer (shared memory, warp or tensor-core fragments): each thread block
    has its own, so tasks on different blocks never share it. Any other buffer a task does not
    allocate itself is shared between tasks, whatever its scope: a `local` cache the schedule
    rules hoisted to the function (a reduction's init, update and write-back tasks all use it)
    orders its tasks like any tensor."""
    scope = buf.scope or "global"
    return scope.startswith(("shared", "warp", "wmma"))


def hull(accesses: list[Access]) -> list[Access]:
    """One bounding box per buffer (the hull of all its accesses), written if any access
    writes."""
    out: list[Access] = []
    for a in accesses:
        same = next((b for b in out if b.buffer is a.buffer), None)
        if same is None:
            out.append(Access(a.buffer, a.write, list(a.box)))
            continue
        same.write = same.write or a.write
        same.box = [(lo if same_expr(lo, lo2) else binop("min", lo, lo2),
                     hi if same_expr(hi, hi2) else binop("max", hi, hi2))
                    for (lo, hi), (lo2, hi2) in zip(same.box, a.box)]
    return out


def _choose(cond: PrimExpr, then: list[Access], other: list[Access]) -> list[Access]:
    """Per buffer, the box of `then` when `cond` holds, else the box of `other` (an empty box,
    lower bound above upper bound, on the side that does not touch the buffer)."""
    out: list[Access] = []
    for a in then + [b for b in other if not any(b.buffer is x.buffer for x in then)]:
        t = next((x for x in then if x.buffer is a.buffer), None)
        o = next((x for x in other if x.buffer is a.buffer), None)
        box = []
        for d in range(len(a.box)):
            lo_t, hi_t = t.box[d] if t is not None else _empty(a.box[d][0])
            lo_o, hi_o = o.box[d] if o is not None else _empty(a.box[d][0])
            box.append((select(cond, lo_t, lo_o), select(cond, hi_t, hi_o)))
        out.append(Access(a.buffer, bool(t and t.write) or bool(o and o.write), box))
    return out


def _empty(like: PrimExpr) -> Bounds:
    """A box side that meets nothing (lower bound above upper bound)."""
    return IntImm(1, like.dtype), IntImm(-1, like.dtype)


def task_accesses(kind: TaskKind) -> list[Access]:
    """The boxes one task of `kind` touches, as expressions of `kind.var`: one bounding box
    per buffer (the hull of all its accesses), marked written if any access writes."""
    c = _Collector()
    c.stmt(kind.body)
    return hull(c.accesses)


def _same_view(a: Buffer, b: Buffer) -> bool:
    return a is b or (same_expr(a.shape, b.shape) and
                      same_expr(a.strides, b.strides) and
                      same_expr(a.elem_offset, b.elem_offset) and a.dtype == b.dtype)


def _flat(buf: Buffer, point: list[PrimExpr]) -> PrimExpr:
    """The element offset of `point` in `buf`'s storage (row-major unless strided)."""
    out: PrimExpr = buf.elem_offset if buf.elem_offset is not None else IntImm(0, INT64)
    stride: PrimExpr = IntImm(1, INT64)
    for d in reversed(range(len(point))):
        s = buf.strides[d] if buf.strides else stride
        out = binop("add", out, binop("mul", point[d], s))
        stride = binop("mul", stride, buf.shape[d])
    return out


def _overlap(a: Access, b: Access) -> PrimExpr:
    """Whether box `a` meets box `b` (both already in terms of their tiles)."""
    if _same_view(a.buffer, b.buffer):
        cond: PrimExpr | None = None
        for (alo, ahi), (blo, bhi) in zip(a.box, b.box):
            term = logical_and(binop("le", alo, bhi), binop("le", blo, ahi))
            cond = term if cond is None else logical_and(cond, term)
        return cond if cond is not None else IntImm(1, BOOL)
    alo = _flat(a.buffer, [lo for lo, _ in a.box])
    ahi = _flat(a.buffer, [hi for _, hi in a.box])
    blo = _flat(b.buffer, [lo for lo, _ in b.box])
    bhi = _flat(b.buffer, [hi for _, hi in b.box])
    return logical_and(binop("le", alo, bhi), binop("le", blo, ahi))


def _at(acc: Access, var: Var, value: PrimExpr) -> Access:
    return Access(acc.buffer, acc.write,
                  [(substitute(lo, {var: value}), substitute(hi, {var: value}))
                   for lo, hi in acc.box])


def conflict(prod: TaskKind, pa: list[Access], cons: TaskKind, ca: list[Access],
             p: PrimExpr, c: PrimExpr) -> tuple[PrimExpr | None, bool]:
    """When tile `p` of `prod` and tile `c` of `cons` touch the same buffer, one writing; and
    whether they share storage through different views (memory-plan's reuse), in which case
    every consumer tile waits for every producer tile."""
    cond: PrimExpr | None = None
    shared = False
    for a in pa:
        for b in ca:
            if a.buffer.data is not b.buffer.data or not (a.write or b.write):
                continue
            if not _same_view(a.buffer, b.buffer):
                shared = True
                continue
            term = _overlap(_at(a, prod.var, p), _at(b, cons.var, c))
            cond = term if cond is None else logical_or(cond, term)
    return cond, shared


def edges(kinds: list[TaskKind]) -> tuple[list[Edge], PrimExpr | None]:
    """The dependences between task kinds, earlier kinds producing for later ones, and the
    condition on the shapes under which the tasks must run one at a time in program order
    (None: never).

    An edge is left out when it is implied: when all tiles of the producer finish before any
    tile of some kind `k` starts, and likewise `k` before the consumer. That holds through a
    kind `k` with at least one task; a kind with no tasks orders nothing. When `k` has tasks
    whatever the shapes (its extent is provably positive) the edge is simply implied; otherwise
    it is implied whenever `k` has a task, and the returned condition (some such `k` has no
    task: an empty batch, say) tells the runtime to run the tasks in program order, which
    satisfies every dependence whichever edges were left out.
    """
    accesses = [task_accesses(k) for k in kinds]
    written = {a.buffer.data for acc in accesses for a in acc if a.write}
    accesses = [[_known_before(a, written) for a in acc] for acc in accesses]
    an = Analyzer()  # one for all pairs: what it learns of the extents is reused
    before: list[set[int]] = []   # kinds whose tiles all finish before any tile of j starts
    relays: list[int] = []        # kinds relied on to have a task without a proof
    out: list[Edge] = []
    for j, cons in enumerate(kinds):
        found: list[Edge] = []
        for i in range(j):
            prod = kinds[i]
            p, c = Var("p", prod.var.dtype), Var("c", cons.var.dtype)
            cond, shared = conflict(prod, accesses[i], cons, accesses[j], p, c)
            if cond is None and not shared:
                continue
            if shared:
                found.append(Edge(i, j, _cond_fn(IntImm(1, BOOL), p, c), True))
                continue
            with an.scope():
                an.bind(p, Range(IntImm(0, p.dtype), prod.extent))
                an.bind(c, Range(IntImm(0, c.dtype), cons.extent))
                cond = an.simplify(cond)
            if not is_false(cond):
                found.append(Edge(i, j, _cond_fn(cond, p, c), is_true(cond)))
        reach: set[int] = set()
        kept: list[Edge] = []
        for e in sorted(found, key=lambda e: (not e.all_to_all, -e.src)):
            if e.src in reach:
                continue
            kept.append(e)
            if e.all_to_all:
                reach.add(e.src)
                if before[e.src] - reach:
                    if e.src not in relays and not _has_tasks(kinds[e.src], an):
                        relays.append(e.src)
                    reach |= before[e.src]
        before.append(reach)
        out.extend(sorted(kept, key=lambda e: e.src))
    in_order: PrimExpr | None = None
    conds: list[PrimExpr] = []
    for k in sorted(relays):
        empty = binop("le", kinds[k].extent, IntImm(0, kinds[k].extent.dtype))
        if any(same_expr(empty, c) for c in conds):  # two relays of one size
            continue
        conds.append(empty)
        in_order = empty if in_order is None else logical_or(in_order, empty)
    return out, in_order


def _known_before(acc: Access, written: set[Var]) -> Access:
    """`acc` with each box side that reads a buffer some task writes (a gather's index
    tensor computed in the same megakernel) widened to the whole dimension: the event tensors
    evaluate the conditions when a producer finishes and before a consumer waits, when such a
    buffer may not hold its values yet (reading it there hung the run on garbage counts)."""
    def reads_written(e: PrimExpr) -> bool:
        return any_node(e, lambda n: isinstance(n, BufferLoad) and n.buffer.data in written)

    box = [full_bounds(acc.buffer, d) if reads_written(lo) or reads_written(hi) else (lo, hi)
           for d, (lo, hi) in enumerate(acc.box)]
    return Access(acc.buffer, acc.write, box)


def _has_tasks(kind: TaskKind, an: Analyzer) -> bool:
    return an.can_prove(binop("ge", kind.extent, IntImm(1, kind.extent.dtype)))


def _cond_fn(cond: PrimExpr, p: Var, c: Var) -> Cond:
    return lambda pe, ce: substitute(cond, {p: pe, c: ce})
