"""speculate-guards: the guarded updates of a tile's local accumulators run unguarded.

unswitch-guards gives the full tiles of a loop over a symbolic extent a guard-free copy, but
the last, partial tile keeps its guard (`if i0 * 8 + i1 < n:`) on every update of its register
tile, inside the reduction loop; when the extent is smaller than a tile (a batch of 7 rows
under a tile of 8) every tile is that tail, and the guards cost a third of the time. This pass
removes those guards where the skipped work is provably invisible:

A local buffer qualifies when every access to it (stores, loads, the write-back's reads) sits
under the same predicate of the element it touches: its index is `W * row + col` with
`0 <= col < W` over the inner loops' constant ranges, and each guard is a comparison linear in
`row` with the same scope-invariant rest (`tile * 8 + row < n`). Elements whose predicate fails
are then never read by anything but the guarded updates themselves, so those updates (stores
into the buffer whose values only compute: arithmetic, math functions, loads; no integer
division by a variable) may run for every row. Their loads from other buffers must stay in
bounds: where the row is one loop variable, a row that fails the guard reads the last row
that holds it (`min(i1, n - tile * 8 - 1)`, invariant in the reduction loop), whose loads the
original program makes; otherwise each index is clamped into its buffer, under a check that
the buffer is not empty. The speculated copy runs when at least half of the tile's rows hold
the guard (so some row does, and the extra rows cost less than the guards would), the original
otherwise; the write-back keeps its guard. Pre-vectorize, CPU only (pipeline.py).
"""

from __future__ import annotations

from dataclasses import field
from math import gcd
from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.analysis.regions import and_all, conjuncts, free_vars
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import Linear, from_linear, is_index_dtype
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import (
    BinOp,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Not,
    PrimExpr,
    Select,
    Var,
    binop,
)
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.module import IRModule
from tirc.ir.rebind import fresh_copy
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from tirc.ir.structural import same_expr
from tirc.ir.visitor import Mutator, any_node, children, post_order_visit, substitute
from tirc.passes.pass_base import PassContext, PrimFuncPass

_FLIPPED = {"gt": "lt", "ge": "le"}
_INT_DIVISIONS = ("div", "floordiv", "floormod", "truncdiv", "truncmod")
Ranges = dict[Var, tuple[int, int]]


class _Unsuitable(Exception):
    """The buffer's accesses do not have the shape the proof needs."""


@dataclass
class _Access:
    """One load or store of the local buffer: its index, the conditions of the `if`s around
    it inside the allocation, and the constant loops around it there."""

    index: PrimExpr
    guards: list[PrimExpr]
    loops: Ranges


@dataclass
class _Collector:
    """Every access to the buffer whose storage is `data`, or _Unsuitable."""

    data: Var
    accesses: list[_Access] = field(default_factory=list)

    def stmt(self, s: Stmt, guards: list[PrimExpr] | None, loops: Ranges) -> None:
        if isinstance(s, For):
            if s.kind == ForKind.PARALLEL or s.thread_tag is not None:
                raise _Unsuitable  # iterations sharing the buffer at once
            self.expr(s.min, guards, loops)
            self.expr(s.extent, guards, loops)
            if isinstance(s.min, IntImm) and isinstance(s.extent, IntImm) and s.extent.value > 0:
                lo = s.min.value
                self.stmt(s.body, guards, {**loops, s.loop_var: (lo, lo + s.extent.value - 1)})
            else:
                self.stmt(s.body, guards, loops)
        elif isinstance(s, IfThenElse):
            self.expr(s.condition, guards, loops)
            inner = None if guards is None else guards + conjuncts(s.condition)
            self.stmt(s.then_case, inner, loops)
            if s.else_case is not None:
                self.stmt(s.else_case, None, loops)
        elif isinstance(s, BufferStore):
            if s.buffer.data is self.data:
                self.record(s.indices, guards, loops)
            for e in (s.value, *s.indices):
                self.expr(e, guards, loops)
        elif isinstance(s, SeqStmt):
            for c in s.seq:
                self.stmt(c, guards, loops)
        elif isinstance(s, LetStmt):
            self.expr(s.value, guards, loops)
            self.stmt(s.body, guards, loops)
        elif isinstance(s, Allocate | AttrStmt | AssertStmt):
            for e in (s.init,) if isinstance(s, Allocate) else \
                    (s.value,) if isinstance(s, AttrStmt) else (s.condition,):
                if e is not None:
                    self.expr(e, guards, loops)
            self.stmt(s.body, guards, loops)
        elif isinstance(s, Evaluate):
            self.expr(s.value, guards, loops)
        elif any_node(s, self.mentions):
            raise _Unsuitable  # a statement kind whose accesses are not tracked (a While)

    def mentions(self, n: Any) -> bool:
        return n is self.data or (isinstance(n, BufferLoad | BufferStore)
                                  and n.buffer.data is self.data)

    def expr(self, e: PrimExpr, guards: list[PrimExpr] | None, loops: Ranges) -> None:
        def visit(n: Any) -> None:
            if not isinstance(n, Buffer) and any(v is self.data for _, v in children(n)):
                raise _Unsuitable  # the storage used as a value (an address)
            if isinstance(n, BufferLoad) and n.buffer.data is self.data:
                self.record(n.indices, guards, loops)

        post_order_visit(e, visit)

    def record(self, indices: tuple[PrimExpr, ...], guards: list[PrimExpr] | None,
               loops: Ranges) -> None:
        if guards is None or len(indices) != 1:
            raise _Unsuitable
        self.accesses.append(_Access(indices[0], guards, loops))


@dataclass
class _Conjunct:
    """A guard as `beta * row + rest <op> 0`."""

    op: str
    beta: int
    rest: PrimExpr


def _split(lin: Linear, loops: Ranges, an: Analyzer) -> tuple[dict[Var, int], PrimExpr]:
    """The inner-loop terms of `lin`, and the rest as an expression (no inner variable)."""
    inner: dict[Var, int] = {}
    rest = Linear(lin.dtype, {}, lin.const)
    for atom, coef in lin.terms.items():
        widened = _widened(atom, loops)
        if widened is not None:
            atom = widened
        if isinstance(atom, Var) and atom in loops:
            inner[atom] = inner.get(atom, 0) + coef
        elif any(v in loops for v in free_vars(atom)):
            raise _Unsuitable
        else:
            rest.add_term(atom, coef)
    return inner, an.simplify(from_linear(rest))


def _widened(atom: PrimExpr, loops: Ranges) -> Var | None:
    """The loop variable of `int64(v)` (an index mixing int32 loops into int64 arithmetic;
    widening is exact), or None."""
    if isinstance(atom, Cast) and isinstance(atom.value, Var) and atom.value in loops and \
            atom.dtype.is_int and atom.value.dtype.is_int and \
            atom.dtype.bits >= atom.value.dtype.bits:
        return atom.value
    return None


@dataclass
class _Slots:
    """An access's guards as a predicate of its element's row: `row = index // width` (no
    width when no guard mentions an inner loop) ranging over `rows` in the access's loops."""

    width: int | None
    conjuncts: list[_Conjunct]
    rows: tuple[int, int]


def _slot_predicate(acc: _Access, size: int, an: Analyzer, bound: set[Var]) -> _Slots:
    """The guards of `acc` as conjuncts of its element's row, or _Unsuitable."""
    lin = an.to_linear(acc.index)
    coefs, offset = _split(lin, acc.loops, an)
    if not isinstance(offset, IntImm):
        raise _Unsuitable
    guards: list[tuple[str, dict[Var, int], PrimExpr]] = []
    for c in acc.guards:
        if not isinstance(c, BinOp) or c.op not in ("lt", "le", "gt", "ge") or \
                not is_index_dtype(c.a.dtype) or \
                any_node(c, lambda n: isinstance(n, BufferLoad | Call)):
            raise _Unsuitable
        op, lhs, rhs = (_FLIPPED[c.op], c.b, c.a) if c.op in _FLIPPED else (c.op, c.a, c.b)
        inner, rest = _split(an.to_linear(binop("sub", lhs, rhs)), acc.loops, an)
        if any(v in bound for v in free_vars(rest)):
            raise _Unsuitable
        guards.append((op, inner, rest))
    row_vars = {v for _, inner, _ in guards for v in inner}

    def span(vs: dict[Var, int], const: int) -> tuple[int, int]:
        lo = hi = const
        for v, a in vs.items():
            lo += min(a * acc.loops[v][0], a * acc.loops[v][1])
            hi += max(a * acc.loops[v][0], a * acc.loops[v][1])
        return lo, hi

    lo, hi = span(coefs, offset.value)
    if lo < 0 or hi >= size:
        raise _Unsuitable  # the speculated stores must stay inside the buffer
    if not row_vars:
        return _Slots(None, [_Conjunct(op, 0, rest) for op, _, rest in guards], (0, 0))
    width = 0
    for v in row_vars:
        if coefs.get(v, 0) <= 0:
            raise _Unsuitable
        width = gcd(width, coefs[v])
    row = {v: coefs[v] // width for v in row_vars}
    col_lo, col_hi = span({v: a for v, a in coefs.items() if v not in row_vars}, offset.value)
    if col_lo < 0 or col_hi >= width:
        raise _Unsuitable
    out = []
    some = next(iter(row_vars))
    for op, inner, rest in guards:
        beta, rem = divmod(inner.get(some, 0), row[some])
        if rem or any(inner.get(v, 0) != beta * row[v] for v in row_vars):
            raise _Unsuitable
        out.append(_Conjunct(op, beta, rest))
    return _Slots(width, out, span(row, 0))


def _same_conjuncts(a: list[_Conjunct], b: list[_Conjunct]) -> bool:
    def has(xs: list[_Conjunct], c: _Conjunct) -> bool:
        return any(x.op == c.op and x.beta == c.beta and same_expr(x.rest, c.rest) for x in xs)

    return all(has(b, c) for c in a) and all(has(a, c) for c in b)


def qualifies(alloc: Allocate, an: Analyzer) -> _Slots | None:
    """The one predicate of the element's row that guards every access to `alloc`'s buffer
    (with the rows all accesses span), or None."""
    buf = alloc.buffer
    if buf.scope != "local" or len(buf.shape) != 1 or not isinstance(buf.shape[0], IntImm) \
            or contains_loop_jump(alloc.body):  # (a row's loads happen only if no jump skips them)
        return None
    collector = _Collector(buf.data)
    try:
        collector.stmt(alloc.body, [], {})
        bound = _bound_vars(alloc.body)
        preds = [_slot_predicate(a, buf.shape[0].value, an, bound) for a in collector.accesses]
    except _Unsuitable:
        return None
    if not preds or not preds[0].conjuncts or \
            not all(p.width == preds[0].width and _same_conjuncts(preds[0].conjuncts, p.conjuncts)
                    for p in preds):
        return None
    rows = (min(p.rows[0] for p in preds), max(p.rows[1] for p in preds))
    return _Slots(preds[0].width, preds[0].conjuncts, rows)


def enough_rows(slots: _Slots, dt: Any) -> list[PrimExpr]:
    """Conditions under which at least half of the rows hold the predicate (each conjunct is
    monotone in the row: it holds on a prefix of the rows when `beta > 0`, a suffix when
    `beta < 0`; with both kinds, more than half, so that prefix and suffix overlap). Below
    that, the guarded tile is the faster (the MLP's tiles of 8 rows: the guarded one costs
    what the whole tile does at 3 rows, a fifth more at 4). Some row then holds every
    conjunct, which the loads of the rows that fail read instead (`_row_clamps`)."""
    lo, hi = slots.rows
    count = hi - lo + 1
    one_sided = len({c.beta > 0 for c in slots.conjuncts if c.beta}) == 1
    need = max(1, count // 2) if one_sided else count // 2 + 1
    out = []
    for c in slots.conjuncts:
        if c.beta == 0:
            continue
        point = lo + need - 1 if c.beta > 0 else hi - need + 1
        value = binop("add", binop("mul", IntImm(c.beta, dt), IntImm(point, dt)), c.rest)
        out.append(binop(c.op, value, IntImm(0, dt)))
    return out


def _bound_vars(s: Stmt) -> set[Var]:
    """The variables bound inside `s` (loops and lets)."""
    found: set[Var] = set()

    def visit(n: Any) -> None:
        if isinstance(n, For):
            found.add(n.loop_var)
        elif isinstance(n, LetStmt):
            found.add(n.var)

    post_order_visit(s, visit)
    return found


def speculatable(e: Any) -> bool:
    """Evaluating `e` anywhere cannot trap (out-of-bounds loads aside, which are clamped):
    arithmetic, comparisons, selects, casts, math functions, loads; integer division only by
    a non-zero constant."""
    if isinstance(e, IntImm | FloatImm | Var):
        return True
    if isinstance(e, BinOp):
        if e.dtype.is_int and e.op in _INT_DIVISIONS and \
                not (isinstance(e.b, IntImm) and e.b.value != 0):
            return False
        return speculatable(e.a) and speculatable(e.b)
    if isinstance(e, Cast | Not):
        return speculatable(e.value if isinstance(e, Cast) else e.a)
    if isinstance(e, Select):
        return all(speculatable(x) for x in (e.condition, e.true_value, e.false_value))
    if isinstance(e, Call):
        return e.op in intrin.MATH_INTRINSICS and all(speculatable(a) for a in e.args)
    if isinstance(e, BufferLoad):
        return len(e.indices) == 1 and all(speculatable(i) for i in e.indices)
    return False


def _only_updates(s: Stmt, data: Var) -> bool:
    """`s` does nothing but speculatable stores into the buffer of `data`."""
    if isinstance(s, BufferStore):
        return s.buffer.data is data and speculatable(s.value) and \
            all(speculatable(i) for i in s.indices)
    if isinstance(s, For):
        return isinstance(s.min, IntImm) and isinstance(s.extent, IntImm) and \
            s.thread_tag is None and _only_updates(s.body, data)
    if isinstance(s, SeqStmt):
        return all(_only_updates(c, data) for c in s.seq)
    if isinstance(s, IfThenElse):
        return s.else_case is None and _only_updates(s.then_case, data)
    return False


def _row_clamps(index: PrimExpr, slots: _Slots, loops: Ranges, an: Analyzer
                ) -> dict[Var, PrimExpr] | None:
    """`{row_var: row_var clamped to the rows that hold the predicate}` for a store at
    `index` whose row is one loop variable (`index = W * v + col`) and whose guards are
    `v + rest < 0` or `-v + rest < 0` forms; None otherwise."""
    coefs, _ = _split(an.to_linear(index), loops, an)
    rows = [v for v, a in coefs.items() if slots.width and a == slots.width]
    if len(rows) != 1 or any(a > slots.width for a in coefs.values()):  # type: ignore[operator]
        return None
    v = rows[0]
    clamped: PrimExpr = v
    for c in slots.conjuncts:
        if c.beta not in (1, -1):
            return None
        one = IntImm(1 if c.op == "lt" else 0, c.rest.dtype)
        if c.beta == 1:  # v + rest < 0  <=>  v <= -rest - 1
            bound = binop("sub", binop("sub", IntImm(0, c.rest.dtype), c.rest), one)
            op = "min"
        else:  # -v + rest < 0  <=>  v >= rest + 1
            bound = binop("add", c.rest, one)
            op = "max"
        bound = an.simplify(bound if bound.dtype == v.dtype else Cast(bound, v.dtype))
        clamped = binop(op, clamped, bound)
    return {v: clamped}


class _Clamp(Mutator):
    """Loads from buffers other than the local one made safe for rows that fail the guard:
    with `rows`, the row variable clamped to the last row that holds it (a row whose loads
    the original program makes, so in bounds wherever it was); otherwise the index clamped
    into the buffer, and the extents that must be non-zero for that are collected."""

    def __init__(self, data: Var, an: Analyzer, nonempty: list[PrimExpr],
                 rows: dict[Var, PrimExpr] | None) -> None:
        self.data, self.an, self.nonempty, self.rows = data, an, nonempty, rows

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e = self.generic_visit(e)
        if e.buffer.data is self.data:
            return e
        if self.rows is not None:
            return substitute(e, self.rows)
        buf: Buffer = e.buffer
        idx = e.indices[0]
        ext = buf.shape[0] if buf.shape else IntImm(1, idx.dtype)
        ext = ext if ext.dtype == idx.dtype else Cast(ext, idx.dtype)
        new = idx
        if not self.an.can_prove(binop("lt", idx, ext)):
            new = binop("min", new, self.an.simplify(binop("sub", ext, IntImm(1, idx.dtype))))
        if not self.an.can_prove(binop("ge", idx, IntImm(0, idx.dtype))):
            new = binop("max", new, IntImm(0, idx.dtype))
        if new is idx:
            return e
        if not self.an.can_prove(binop("ge", ext, IntImm(1, idx.dtype))) and \
                not any(same_expr(ext, x) for x in self.nonempty):
            self.nonempty.append(ext)
        return BufferLoad(buf, (new,), e.dtype)


class _DropGuards(Mutator):
    """The allocation's body with the guards of its updates removed and their loads made
    safe (the analyzer and `loops` know the loops around each load)."""

    def __init__(self, data: Var, slots: _Slots, an: Analyzer) -> None:
        self.data, self.slots, self.an = data, slots, an
        self.nonempty: list[PrimExpr] = []
        self.loops: Ranges = {}
        self.dropping = 0

    def visit_For(self, s: For) -> Any:
        with self.an.scope():
            self.an.bind(s.loop_var, Range(s.min, s.extent))
            if isinstance(s.min, IntImm) and isinstance(s.extent, IntImm):
                self.loops[s.loop_var] = (s.min.value, s.min.value + s.extent.value - 1)
            try:
                return self.generic_visit(s)
            finally:
                self.loops.pop(s.loop_var, None)

    def visit_IfThenElse(self, s: IfThenElse) -> Any:
        if s.else_case is None and _only_updates(s.then_case, self.data):
            self.dropping += 1
            try:
                return self.visit(s.then_case)
            finally:
                self.dropping -= 1
        return self.generic_visit(s)

    def visit_BufferStore(self, s: BufferStore) -> Any:
        if not self.dropping:
            return s
        rows = _row_clamps(s.indices[0], self.slots, self.loops, self.an)
        clamp = _Clamp(self.data, self.an, self.nonempty, rows)
        return s.replace(value=clamp.visit(s.value), indices=clamp.visit(s.indices))


class _Speculator(Mutator):
    """Each qualifying local allocation gets its updates' guards dropped."""

    def __init__(self) -> None:
        self.an = Analyzer()

    def visit_For(self, s: For) -> Any:
        with self.an.scope():
            self.an.bind(s.loop_var, Range(s.min, s.extent))
            return self.generic_visit(s)

    def visit_Allocate(self, s: Allocate) -> Any:
        s = self.generic_visit(s)
        slots = qualifies(s, self.an)
        if slots is None or slots.width is None or slots.rows[1] <= slots.rows[0]:
            return s  # (a single row, or a guard of no row: no row is sure to hold it)
        dropper = _DropGuards(s.buffer.data, slots, self.an)
        body = dropper.visit(s.body)
        if body is s.body:
            return s
        dt = slots.conjuncts[0].rest.dtype
        conds = enough_rows(slots, dt) + [binop("ge", ext, IntImm(1, ext.dtype))
                                         for ext in dropper.nonempty]
        conds = [c for c in (self.an.simplify(c) for c in conds)
                 if not (isinstance(c, IntImm) and c.value)]
        if any(isinstance(c, IntImm) for c in conds):
            return s  # never enough rows
        if conds:
            body = IfThenElse(and_all(conds, conds[0]), body, fresh_copy(s.body), span=s.span)
        return s.replace(body=body)


@dataclass(frozen=True)
class SpeculateGuards(PrimFuncPass):
    """A partial tile's accumulator updates without their guards, on clamped loads."""

    name = "speculate-guards"
    description = "a partial tile's local accumulators updated for every row, loads clamped"
    optional = True  # an optimisation (see Pass.optional)

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Speculator().visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
