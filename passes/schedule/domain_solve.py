"""Solving a moved block's iteration domain (compute_at, reverse_compute_at).

The block's own region of each buffer it shares with the blocks it moves next to is a window
per dimension, `[a*v + b, a*v + b + w]` (a point, a stride, a range), or the floor division
or modulo of a point by a constant; this finds the values of `v` whose window meets the needed
region (compute_at) or lies inside what was produced (reverse_compute_at), as TVM's
SolveBlockVarDomain. A dimension indexed by several variables is solved for the one of
largest stride, the others widened to their whole range, which stays sound both ways.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.analysis.access import effective_regions
from tirc.ir.analysis.regions import (
    Bounds,
    const_diff,
    free_vars,
    intersect_bounds,
    loop_bounds,
    prove_le,
    relax,
    union_bounds,
    uses_any,
)
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import exact_linear, from_linear, to_linear
from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var, binop, const, is_const_int
from tirc.ir.stmt import Block, IterKind, IterVar
from tirc.ir.structural import same_expr
from tirc.passes.schedule.state import ScheduleError


def without_clamps(e: PrimExpr, op: str, loops: dict[Var, Any]) -> PrimExpr:
    """`e` without the clamps (`op` = min or max) by bounds that use none of `loops`."""
    while isinstance(e, BinOp) and e.op == op:
        if not uses_any(e.a, loops):
            e = e.b
        elif not uses_any(e.b, loops):
            e = e.a
        else:
            break
    return e


def solve_domains(prim: str, blk: Block, need: dict[Buffer, list[Bounds | None]],
                  an: Analyzer, reverse: bool) -> dict[Var, Bounds]:
    """The range of each iteration variable the regions constrain. compute_at: the instances
    whose writes meet the needed region (united over buffers, as TVM's compute_at);
    reverse_compute_at: the instances whose reads all lie in what the producers wrote in the
    iteration (intersected, as TVM's reverse_compute_at)."""
    ivars = {iv.var: iv for iv in blk.iter_vars}
    reads, writes = effective_regions(blk)
    found: dict[Var, list[Bounds]] = {}
    for buf, dims in _own_windows(prim, blk, reads if reverse else writes, need, an).items():
        for v, b in _region_ranges(prim, blk, buf, dims, need[buf], ivars, an, reverse).items():
            found.setdefault(v, []).append(b)
    join = intersect_bounds if reverse else union_bounds
    return {v: join(items, an) for v, items in found.items()}


def _own_windows(prim: str, blk: Block, regions: list[BufferRegion],
                 need: dict[Buffer, list[Bounds | None]], an: Analyzer
                 ) -> dict[Buffer, list[Bounds]]:
    """Per needed buffer, the block's regions of it united per dimension (as TVM unites a
    block's regions of one buffer), with reduction variables relaxed to their whole range."""
    whole = {iv.var: loop_bounds(iv.dom.min, iv.dom.extent) for iv in blk.iter_vars
             if iv.kind == IterKind.REDUCE}
    grouped: dict[Buffer, list[list[Bounds]]] = {}
    for r in regions:
        if r.buffer not in need:
            continue
        dims: list[Bounds] = []
        for k, rng in enumerate(r.region):
            lo_r = relax(rng.min, whole)
            hi_r = relax(binop("sub", binop("add", rng.min, rng.extent), 1), whole)
            if lo_r is None or hi_r is None:
                raise ScheduleError(f"{prim}: cannot derive the iteration domain of block "
                                    f"\"{blk.name}\": cannot bound dimension {k} of its "
                                    f"region of {r.buffer.name}")
            dims.append((lo_r[0], hi_r[1]))
        grouped.setdefault(r.buffer, []).append(dims)
    out: dict[Buffer, list[Bounds]] = {}
    with an.scope():
        for iv in blk.iter_vars:
            an.bind(iv.var, loop_bounds(iv.dom.min, iv.dom.extent))
        for buf, regs in grouped.items():
            simple = [[(an.simplify(lo), an.simplify(hi)) for lo, hi in reg] for reg in regs]
            out[buf] = [tuple(an.simplify(x) for x in union_bounds([reg[k] for reg in simple],
                                                                   an))  # type: ignore[misc]
                        for k in range(buf.ndim)]
    return out


def _region_ranges(prim: str, blk: Block, buf: Buffer, own: list[Bounds],
                   need: list[Bounds | None], ivars: dict[Var, IterVar], an: Analyzer,
                   reverse: bool) -> dict[Var, Bounds]:
    """Per iteration variable, the range the block's window of `buf` implies against the
    needed region (its dimensions intersect)."""
    dims: list[tuple[Var, PrimExpr, PrimExpr, Bounds, str]] = []
    for k, ((lo_e, hi_e), nb) in enumerate(zip(own, need)):
        where = f"dimension {k} of its region of {buf.name}"
        used = [x for x in free_vars((lo_e, hi_e)) if x in ivars]
        if not used and not reverse:
            continue
        if nb is None:
            raise ScheduleError(f"{prim}: cannot bound the region of {buf.name} needed in "
                                f"dimension {k}")
        if not used:
            if not (prove_le(nb[0], lo_e, an) and prove_le(hi_e, nb[1], an)):
                raise ScheduleError(f"{prim}: block \"{blk.name}\" reads more of {buf.name} "
                                    f"in dimension {k} than its producers write in one "
                                    f"iteration of the loop")
            continue
        v = used[0]
        if len(used) > 1:
            v, lo_e, hi_e = _widen_to_one_var(prim, blk, lo_e, hi_e, used, ivars, where, an)
        dims.append((v, lo_e, hi_e, nb, where))
    siblings = [(lo, nb) for _, lo, hi, nb, _ in dims if const_diff(hi, lo, an) == 0]
    implied: dict[Var, list[Bounds]] = {}
    for v, lo_e, hi_e, nb, where in dims:
        b = _invert(lo_e, hi_e, v, nb, siblings, an, reverse)
        if b is False:
            raise ScheduleError(f"{prim}: cannot derive the iteration domain of block "
                                f"\"{blk.name}\": {where} is not an iteration variable times "
                                f"a positive constant plus an offset (a point or a window), nor "
                                f"a floor division or modulo of one by a constant")
        if b is not None:
            implied.setdefault(v, []).append(b)
    return {v: intersect_bounds(items, an) for v, items in implied.items()}


def _widen_to_one_var(prim: str, blk: Block, lo_e: PrimExpr, hi_e: PrimExpr, used: list[Var],
                      ivars: dict[Var, IterVar], where: str, an: Analyzer
                      ) -> tuple[Var, PrimExpr, PrimExpr]:
    """A dimension indexed by several variables (`B[vi * 4 + vj]`, a flattened write): solve
    for the one with the largest stride and widen the window over the others' whole ranges.
    Computing more (compute_at) or requiring more to be produced (reverse) stays sound."""
    lin = to_linear(lo_e) if exact_linear(lo_e) else None
    coefs = {v: lin.terms.get(v, 0) for v in used} if lin is not None else {}
    if lin is None or any(atom not in coefs and uses_any(atom, set(used)) for atom in lin.terms) \
            or not all(coefs.values()):
        raise ScheduleError(f"{prim}: cannot derive the iteration domain of block "
                            f"\"{blk.name}\": {where} uses several iteration variables, not "
                            f"as a sum of multiples of them")
    top = max(used, key=lambda x: abs(coefs[x]))
    others = {x: loop_bounds(ivars[x].dom.min, ivars[x].dom.extent) for x in used if x is not top}
    lo_r, hi_r = relax(lo_e, others), relax(hi_e, others)
    assert lo_r is not None and hi_r is not None
    return top, an.simplify(lo_r[0]), an.simplify(hi_r[1])


def _affine(e: PrimExpr, v: Var) -> tuple[int, PrimExpr] | None:
    """(a, b) with e == a * v + b and b free of v; None when `e` is not of that form."""
    if not exact_linear(e):
        return None
    lin = to_linear(e)
    a = lin.terms.get(v, 0)
    if not a or any(atom is not v and uses_any(atom, {v}) for atom in lin.terms):
        return None
    rest = lin.copy()
    rest.add_term(v, -a)
    return a, from_linear(rest)


def _ceildiv(x: PrimExpr, a: int) -> PrimExpr:
    """`x` divided by `a`, rounded up."""
    return x if a == 1 else binop("floordiv", binop("add", x, a - 1), a)


def _floordiv(x: PrimExpr, a: int) -> PrimExpr:
    """`x` divided by `a`, rounded down."""
    return x if a == 1 else binop("floordiv", x, a)


def _invert(lo_e: PrimExpr, hi_e: PrimExpr, v: Var, nb: Bounds,
            siblings: list[tuple[PrimExpr, Bounds]], an: Analyzer, reverse: bool) -> Any:
    """The range of `v` for the window [lo_e, hi_e] (functions of v) against `nb`: the values
    whose window meets `nb` (compute_at) or lies inside it (reverse). None: every value;
    False: the form is not understood."""
    lo, hi = nb
    # A clamp by a bound free of v (`T.max(v - 1, 0)`) only narrows the window: dropping it
    # widens the window, which stays sound for both meeting and lying inside.
    lo_e, hi_e = without_clamps(lo_e, "max", {v: v}), without_clamps(hi_e, "min", {v: v})
    w = const_diff(hi_e, lo_e, an)
    if w is None or w < 0:
        return False
    aff = _affine(lo_e, v)
    if aff is not None:
        a, b = aff
        if a < 0:
            return False
        first = binop("sub", binop("sub", lo, b), 0 if reverse else w)
        last = binop("sub", binop("sub", hi, b), w if reverse else 0)
        return an.simplify(_ceildiv(first, a)), an.simplify(_floordiv(last, a))
    e = lo_e
    if w != 0 or not (isinstance(e, BinOp) and isinstance(e.b, IntImm) and e.b.value > 0
                      and e.op in ("floordiv", "floormod")):
        return False
    k = e.b.value
    if e.op == "floordiv":
        return _invert(e.a, e.a, v, (an.simplify(lo * k), an.simplify(hi * k + (k - 1))),
                       siblings, an, reverse)
    if const_diff(lo, const(0, lo.dtype), an) == 0 and \
            const_diff(hi, const(k - 1, hi.dtype), an) == 0:
        return None
    for x, (qlo, qhi) in siblings:
        if isinstance(x, BinOp) and x.op == "floordiv" and is_const_int(x.b, k) and \
                same_expr(x.a, e.a) and const_diff(qhi, qlo, an) == 0:
            return _invert(e.a, e.a, v, (an.simplify(qlo * k + lo), an.simplify(qlo * k + hi)),
                           siblings, an, reverse)
    return False
