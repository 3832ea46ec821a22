"""Regions as bounds: relax index expressions over loop ranges, unite and compare regions.

`relax(e, dom)` gives inclusive lower and upper bounds of `e` when the variables of `dom`
range over their (inclusive, possibly symbolic) bounds and every other variable stays fixed.
It works on linear forms (`i*32 + j`), and through floor division, modulo, min and max, which
covers the index expressions that splits, fuses and tiles produce. A region is a list of
inclusive `(lo, hi)` pairs per dimension.
"""

from __future__ import annotations

from collections.abc import Mapping

from tirc.ir.arith import Analyzer, construct
from tirc.ir.arith.linear import Linear, from_linear, is_index_dtype, to_linear
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BinOp, Cast, IntImm, PrimExpr, Var, binop, cast, const
from tirc.ir.stmt import For
from tirc.ir.visitor import any_node, post_order_visit

Bounds = tuple[PrimExpr, PrimExpr]
Dom = Mapping[Var, Bounds]


def uses_any(e: object, vars_: Mapping[Var, object] | set[Var]) -> bool:
    """Whether `e` mentions one of `vars_`."""
    return any_node(e, lambda n: isinstance(n, Var) and n in vars_)


def free_vars(e: object) -> list[Var]:
    out: list[Var] = []

    def visit(n: object) -> None:
        if isinstance(n, Var) and n not in out:
            out.append(n)

    post_order_visit(e, visit)
    return out


def conjuncts(e: PrimExpr) -> list[PrimExpr]:
    """The terms of a conjunction `a and b and ...`."""
    if isinstance(e, BinOp) and e.op == "and":
        return conjuncts(e.a) + conjuncts(e.b)
    return [e]


def and_all(items: list[PrimExpr], like: PrimExpr) -> PrimExpr:
    """The conjunction of `items` (true, of `like`'s dtype, when there are none)."""
    out: PrimExpr | None = None
    for x in items:
        out = x if out is None else binop("and", out, x)
    return out if out is not None else IntImm(1, like.dtype)


def _as(e: PrimExpr, like: PrimExpr) -> PrimExpr:
    return e if e.dtype == like.dtype else cast(like.dtype, e)


def relax(e: PrimExpr, dom: Dom) -> Bounds | None:
    """Inclusive bounds of `e` over `dom`; None when they cannot be found."""
    if not uses_any(e, dom):
        return e, e
    if isinstance(e, Var):
        lo, hi = dom[e]
        return _as(lo, e), _as(hi, e)
    if not is_index_dtype(e.dtype):
        return None
    lin = to_linear(e)
    if lin.const == 0 and len(lin.terms) == 1 and next(iter(lin.terms)) is e:
        return _relax_atom(e, dom)
    lo = Linear(lin.dtype, {}, lin.const)
    hi = Linear(lin.dtype, {}, lin.const)
    for atom, coef in lin.terms.items():
        r = relax(atom, dom) if uses_any(atom, dom) else (atom, atom)
        if r is None:
            return None
        a_lo, a_hi = (_as(r[0], atom), _as(r[1], atom))
        if coef > 0:
            lo.add(to_linear(a_lo), coef)
            hi.add(to_linear(a_hi), coef)
        else:
            lo.add(to_linear(a_hi), coef)
            hi.add(to_linear(a_lo), coef)
    return from_linear(lo), from_linear(hi)


def _relax_atom(e: PrimExpr, dom: Dom) -> Bounds | None:
    if isinstance(e, Cast) and e.dtype.is_int and e.value.dtype.is_int:
        # an integer cast keeps the order of the values an index takes (a narrowing one
        # would only reorder values that no buffer dimension reaches)
        r = relax(e.value, dom)
        return None if r is None else (cast(e.dtype, r[0]), cast(e.dtype, r[1]))
    if not isinstance(e, BinOp):
        return None
    if e.op in ("floordiv", "floormod") and isinstance(e.b, IntImm) and e.b.value > 0:
        r = relax(e.a, dom)
        if r is None:
            return None
        c = e.b.value
        if e.op == "floordiv":
            return binop("floordiv", r[0], c), binop("floordiv", r[1], c)
        from tirc.ir.arith import simplify

        q_lo, q_hi = simplify(binop("floordiv", r[0], c)), simplify(binop("floordiv", r[1], c))
        diff = simplify(q_hi - q_lo)
        if isinstance(diff, IntImm) and diff.value == 0:
            return binop("floormod", r[0], c), binop("floormod", r[1], c)
        return IntImm(0, e.dtype), IntImm(c - 1, e.dtype)
    if e.op in ("min", "max"):
        ra, rb = relax(e.a, dom), relax(e.b, dom)
        if ra is None or rb is None:
            return None
        return binop(e.op, ra[0], rb[0]), binop(e.op, ra[1], rb[1])
    if e.op == "mul":
        # A product of a relaxed expression and a non-negative fixed one (a symbolic stride).
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if not uses_any(y, dom):
                r = relax(x, dom)
                if r is not None:
                    return binop("mul", r[0], y), binop("mul", r[1], y)
    return None


def loop_bounds(lo: PrimExpr, extent: PrimExpr) -> Bounds:
    """Inclusive bounds of a loop or iteration domain [lo, lo + extent)."""
    return lo, binop("sub", binop("add", lo, extent), 1)


def relax_region(region: tuple[Range, ...], dom: Dom, an: Analyzer) -> list[Bounds | None]:
    """Inclusive bounds per dimension of a region relaxed over `dom` (None: unknown)."""
    out: list[Bounds | None] = []
    for r in region:
        last = binop("sub", binop("add", r.min, r.extent), 1)
        lo_r, hi_r = relax(r.min, dom), relax(last, dom)
        if lo_r is None or hi_r is None:
            out.append(None)
        else:
            out.append((an.simplify(lo_r[0]), an.simplify(hi_r[1])))
    return out


def _outside(at: PrimExpr, extent: PrimExpr, lo: PrimExpr, hi: PrimExpr, an: Analyzer) -> bool:
    """Whether index `at` provably lies outside [lo, hi] (a dimension of `extent`): from the
    index's constant bounds for a constant extent (most regions, and cheap), else by proof."""
    if isinstance(extent, IntImm):
        low, high = an.const_int_bound(at)
        return (low is not None and low >= extent.value) or (high is not None and high < 0)
    one = IntImm(1, at.dtype)
    return prove_le(binop("add", an.simplify(hi), one), at, an) or \
        prove_le(binop("add", at, one), lo, an)


def full_bounds(buf: Buffer, dim: int) -> Bounds:
    d = buf.shape[dim]
    return IntImm(0, d.dtype), binop("sub", d, 1)


def const_diff(a: PrimExpr, b: PrimExpr, an: Analyzer) -> int | None:
    """`a - b` when it simplifies to a constant."""
    if a.dtype != b.dtype:
        b = cast(a.dtype, b)
    d = an.simplify(binop("sub", a, b))
    return d.value if isinstance(d, IntImm) else None


def prove_le(a: PrimExpr, b: PrimExpr, an: Analyzer) -> bool:
    """True when a <= b always; looks through min and max on either side."""
    if isinstance(a, BinOp) and a.op == "max":
        return prove_le(a.a, b, an) and prove_le(a.b, b, an)
    if isinstance(b, BinOp) and b.op == "min":
        return prove_le(a, b.a, an) and prove_le(a, b.b, an)
    if isinstance(a, BinOp) and a.op == "min" and (prove_le(a.a, b, an) or prove_le(a.b, b, an)):
        return True
    if isinstance(b, BinOp) and b.op == "max" and (prove_le(a, b.a, an) or prove_le(a, b.b, an)):
        return True
    if a.dtype != b.dtype:
        b = cast(a.dtype, b)
    if an.can_prove(binop("le", a, b)):
        return True
    lo = an.bound_of(an.simplify(binop("sub", b, a)))[0]  # `127 - (k + 127) % 128 >= 0`
    return lo is not None and lo >= 0


def _pick(a: PrimExpr, b: PrimExpr, op: str, an: Analyzer) -> PrimExpr:
    """min(a, b) or max(a, b), without the operator when one side is provably smaller."""
    smaller, larger = (a, b) if prove_le(a, b, an) else (b, a) if prove_le(b, a, an) else (None,
                                                                                           None)
    if smaller is None or larger is None:
        return an.simplify(binop(op, a, b))
    return smaller if op == "min" else larger


def union_bounds(items: list[Bounds], an: Analyzer) -> Bounds:
    """The smallest bounds covering all items (min/max expressions when not comparable)."""
    lo, hi = items[0]
    for a, b in items[1:]:
        lo, hi = _pick(lo, a, "min", an), _pick(hi, b, "max", an)
    return lo, hi


def intersect_bounds(items: list[Bounds], an: Analyzer) -> Bounds:
    lo, hi = items[0]
    for a, b in items[1:]:
        lo, hi = _pick(lo, a, "max", an), _pick(hi, b, "min", an)
    return lo, hi


def _sides(e: PrimExpr, op: str) -> list[PrimExpr]:
    """`e` and, when it is a min (max), the operands that bound it from above (below)."""
    out = [e]
    if isinstance(e, BinOp) and e.op == op:
        out += _sides(e.a, op) + _sides(e.b, op)
    return out


def extent_upper_bound(lo: PrimExpr, hi: PrimExpr, an: Analyzer) -> int | None:
    """A constant upper bound of hi - lo + 1 (hi = min(x, ..) <= x, lo = max(y, ..) >= y)."""
    best: int | None = None
    for h in _sides(hi, "min"):
        for l_ in _sides(lo, "max"):
            d = an.simplify(binop("sub", h, l_ if l_.dtype == h.dtype else cast(h.dtype, l_)))
            up = an.bound_of(d)[1]
            if up is not None and (best is None or up + 1 < best):
                best = up + 1
    return best


def region_of_bounds(bounds: list[Bounds], an: Analyzer) -> tuple[Range, ...]:
    """Ranges `[lo, hi + 1)` from inclusive bounds."""
    return tuple(Range(lo, an.simplify(binop("add", binop("sub", hi, lo), 1)))
                 for lo, hi in bounds)


def point_region(indices: tuple[PrimExpr, ...]) -> tuple[Range, ...]:
    return tuple(Range(i, IntImm(1, i.dtype)) for i in indices)


def cover(buf: Buffer, regions: list[tuple[Range, ...]], dom: Dom, an: Analyzer) -> BufferRegion:
    """One region of `buf` covering all `regions` relaxed over `dom` (whole dims if unknown)."""
    per_dim: list[list[Bounds]] = [[] for _ in range(buf.ndim)]
    unknown = [False] * buf.ndim
    for reg in regions:
        for k, b in enumerate(relax_region(reg, dom, an)):
            if b is None:
                unknown[k] = True
            else:
                per_dim[k].append(b)
    bounds = [full_bounds(buf, k) if unknown[k] or not per_dim[k] else
              clip(union_bounds(per_dim[k], an), buf, k, an) for k in range(buf.ndim)]
    return BufferRegion(buf, region_of_bounds(bounds, an))


def clip(b: Bounds, buf: Buffer, dim: int, an: Analyzer) -> Bounds:
    """Bounds limited to the buffer's extent in `dim` (a guarded tail reaches past it)."""
    lo, hi = full_bounds(buf, dim)
    width = const_diff(b[1], b[0], an)
    if width is not None and width < 0:
        return b  # no element (below)
    if width == 0:
        # one element: in bounds where the access runs, unless it provably lies outside the
        # buffer (a load on the side of `T.if_then_else` never taken): then no element
        return (b[0], an.simplify(binop("sub", b[0], IntImm(1, b[0].dtype)))) \
            if _outside(b[0], buf.shape[dim], lo, hi, an) else b
    return intersect_bounds([b, (lo, an.simplify(hi))], an)


# ---- iterations that touch disjoint elements -------------------------------------------


def bounds_width(b: Bounds, an: Analyzer) -> int | None:
    w = an.simplify(binop("add", binop("sub", b[1], like(b[0], b[1])), 1))
    return w.value if isinstance(w, IntImm) else None


def like(e: PrimExpr, other: PrimExpr) -> PrimExpr:
    return e if e.dtype == other.dtype else cast(other.dtype, e)


def _digits(atom: PrimExpr, v: Var) -> tuple[int, int | None] | None:
    """The digits of `v` an expression reads, as (lo, hi): `v` -> (1, None), `v % m` -> (1, m),
    `v // m` -> (m, None), `v // m % n` -> (m, m * n); None for other forms."""
    if atom is v:
        return 1, None
    if not isinstance(atom, BinOp) or not isinstance(atom.b, IntImm) or atom.b.value <= 0:
        return None
    c = atom.b.value
    if atom.op == "floordiv" and atom.a is v:
        return c, None
    if atom.op == "floormod":
        if atom.a is v:
            return 1, c
        inner = atom.a
        if isinstance(inner, BinOp) and inner.op == "floordiv" and inner.a is v \
                and isinstance(inner.b, IntImm) and inner.b.value > 0:
            return inner.b.value, inner.b.value * c
    return None


def _through_casts(lin: Linear) -> Linear:
    """`lin` with its integer-cast atoms (`T.Cast("int32", i * 32)`) opened into their linear
    terms (a cast keeps the values an index takes)."""
    if not any(isinstance(a, Cast) for a in lin.terms):
        return lin
    out = Linear(lin.dtype, {}, lin.const)
    for atom, coef in lin.terms.items():
        if isinstance(atom, Cast) and atom.dtype.is_int and atom.value.dtype.is_int and \
                is_index_dtype(atom.value.dtype):
            out.add(_through_casts(to_linear(atom.value)), coef)
        else:
            out.add_term(atom, coef)
    return out


def _separating_digits(b: Bounds | None, v: Var, an: Analyzer) -> tuple[int, int | None] | None:
    """The digits of `v` that tell apart iterations along one dimension: the region's start is
    `s * key(v) + (terms without v)` and its width is at most |s|; None when it does not."""
    if b is None:
        return None
    width = bounds_width(b, an)
    if width is None:
        return None
    lin = _through_casts(to_linear(b[0]))
    with_v = [(atom, coef) for atom, coef in lin.terms.items() if uses_any(atom, {v})]
    if not with_v:
        return None
    if len(with_v) == 1:
        atom, coef = with_v[0]
        return None if width > abs(coef) else _digits(atom, v)
    # Several digits of `v` in one dimension (`v // 32 * 8 + v // 4 % 8`): they tell the
    # iterations apart as one number when each weighs more than all below it can add.
    parts = []
    for atom, coef in with_v:
        d = _digits(atom, v)
        if d is None or coef <= 0:
            return None
        parts.append((d, coef))
    parts.sort(key=lambda p: p[0][0])
    reach = width - 1
    for k, ((lo, hi), coef) in enumerate(parts):
        if coef <= reach or (k + 1 < len(parts) and (hi is None or hi != parts[k + 1][0][0])):
            return None
        if hi is not None:
            reach += coef * (hi // lo - 1)
    return parts[0][0][0], parts[-1][0][1]


def iterations_disjoint(loop: For, region: list[Bounds | None], an: Analyzer) -> bool:
    """True when two different iterations of `loop` never touch the same element."""
    v = loop.loop_var
    digits = [d for d in (_separating_digits(b, v, an) for b in region) if d is not None]
    if any(hi is None and lo == 1 for lo, hi in digits):
        return True          # some dimension's start moves with v itself
    if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        return False
    # Known: v mod `known`. A key reading digits [lo, hi) with lo | known and known | hi
    # extends that to v mod hi (hi None: all of v, whatever the loop's extent).
    extent = loop.extent.value if isinstance(loop.extent, IntImm) else None
    known: int | None = 1
    progress = True
    while progress and known is not None and (extent is None or known < extent):
        progress = False
        for lo, hi in digits:
            if known is not None and known % lo == 0 and \
                    (hi is None or (hi % known == 0 and hi > known)):
                known = None if hi is None else hi
                progress = True
    return known is None or (extent is not None and known >= extent)


def row_major_strides(shape: tuple[PrimExpr, ...]) -> list[PrimExpr]:
    """The element strides of a compact row-major buffer of `shape`: (m * n, n, 1)."""
    strides: list[PrimExpr] = []
    for k in range(len(shape)):
        stride: PrimExpr = const(1, shape[k].dtype)
        for dim in shape[k + 1:]:
            stride = construct.mul(stride, dim)
        strides.append(stride)
    return strides


def region_offset(source: BufferRegion) -> PrimExpr:
    """Where a region starts in its buffer, in elements (the buffer's own offset included):
    the offset of a buffer matched to it."""
    buf = source.buffer
    strides = list(buf.strides) if buf.strides else row_major_strides(buf.shape)
    out: PrimExpr = buf.elem_offset if buf.elem_offset is not None else const(0)
    for r, stride in zip(source.region, strides):
        out = construct.add(out, construct.mul(r.min, stride))
    return out
