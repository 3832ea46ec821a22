"""Checking that reverse_compute_at runs every instance of the moved consumer exactly once.

Per iteration of the new loops the consumer runs the instances whose reads are complete; the
ranges of each variable over the iterations must tile its former range like the digits of a
number (`[8 * i0, 8 * i0 + 7]`), or, for a stride that doesn't divide the tile, meet end to
end (`[(3 * i0 + 1) // 2, (3 * i0 + 2) // 2]`).
"""

from __future__ import annotations

from tirc.ir.analysis.regions import (
    Bounds,
    const_diff,
    prove_le,
    uses_any,
)
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import from_linear, is_index_dtype, to_linear
from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var, binop, const, is_const_int
from tirc.ir.stmt import BlockRealize, For, IterKind
from tirc.ir.visitor import substitute
from tirc.passes.schedule.domain_solve import without_clamps
from tirc.passes.schedule.state import ScheduleError


def check_exactly_once(prim: str, br: BlockRealize, ranges: dict[Var, Bounds],
                       origs: dict[Var, Bounds], new_loops: list[For], an: Analyzer) -> None:
    """reverse_compute_at runs, per iteration, the consumer's instances whose reads are
    complete; the iterations must share out the instances so each runs exactly once."""
    blk = br.block
    lname = new_loops[-1].loop_var.name
    loops = {x.loop_var: x for x in new_loops}
    owner: dict[Var, Var] = {}
    for iv in blk.iter_vars:
        if not uses_any(ranges[iv.var], loops):
            # the whole range in every iteration (a guarded split may reach past its end)
            if prove_le(ranges[iv.var][0], origs[iv.var][0], an) and \
                    prove_le(origs[iv.var][1], ranges[iv.var][1], an):
                continue
        if iv.kind != IterKind.SPATIAL or not _tiles(iv.var, ranges[iv.var], origs[iv.var],
                                                      loops, owner, an):
            raise ScheduleError(
                f"{prim}: the iterations of loop {lname} would not run each instance of block "
                f"\"{blk.name}\" exactly once: per iteration it may only run the instances whose "
                f"reads the producers have completed, and the values of {iv.var.name} that "
                f"allows do not tile its range (a read window spanning the producers' tiles?)")
    for lv, x in loops.items():
        if lv not in owner and not is_const_int(an.simplify(x.extent), 1):
            raise ScheduleError(f"{prim}: block \"{blk.name}\" would run all its instances in "
                                f"every iteration of loop {lv.name}: its reads do not depend on "
                                f"that loop")


def _tiles(v: Var, rng: Bounds, orig: Bounds, loops: dict[Var, For], owner: dict[Var, Var],
           an: Analyzer) -> bool:
    """Whether the ranges of `v` over the iterations of `loops` tile `orig` exactly once:
    each loop moves the range by a whole tile, like the digits of a number."""
    lo, hi = without_clamps(rng[0], "max", loops), without_clamps(rng[1], "min", loops)
    if not is_index_dtype(lo.dtype):
        return False
    if _is_div(lo) or _is_div(hi):
        return _div_tiles(v, lo, hi, orig, loops, owner, an)
    width = const_diff(hi, lo, an)
    if width is None or width < 0:
        return False
    lin_lo, lin_hi = to_linear(lo), to_linear(hi)
    steps: list[tuple[int, For]] = []
    for lv, loop in loops.items():
        c = lin_lo.terms.get(lv, 0)
        if c != lin_hi.terms.get(lv, 0) or c < 0:
            return False
        if any(atom is not lv and uses_any(atom, {lv})
               for atom in list(lin_lo.terms) + list(lin_hi.terms)):
            return False
        if c:
            if lv in owner:
                return False
            owner[lv] = v
            steps.append((c, loop))
    span: PrimExpr = const(width + 1, lo.dtype)
    reach = span
    for c, loop in sorted(steps, key=lambda t: t[0]):
        if const_diff(span, const(c, lo.dtype), an) != 0:
            return False
        ext = an.simplify(loop.extent)
        span, reach = an.simplify(binop("mul", ext, c)), an.simplify(_reach(ext, c))
    base = an.simplify(substitute(lo, {lv: x.min for lv, x in loops.items()}))
    top = an.simplify(binop("sub", binop("add", base, reach), 1))
    return prove_le(base, orig[0], an) and prove_le(orig[1], top, an)


def _is_div(e: PrimExpr) -> bool:
    """Whether `e` is a floor division by a positive constant."""
    return isinstance(e, BinOp) and e.op == "floordiv" and isinstance(e.b, IntImm) \
        and e.b.value > 0


def _div_tiles(v: Var, lo: PrimExpr, hi: PrimExpr, orig: Bounds, loops: dict[Var, For],
               owner: dict[Var, Var], an: Analyzer) -> bool:
    """`_tiles` for ranges `[N_lo // a, N_hi // a]` moved by one loop L (a tile of the
    producer that the consumer's stride doesn't divide): consecutive iterations meet exactly
    when N_lo(L + 1) == N_hi(L) + a, and the first and last iterations reach the ends."""
    a = max(x.b.value for x in (lo, hi) if _is_div(x))  # type: ignore[attr-defined]
    nums = []
    for x in (lo, hi):
        if _is_div(x):
            if x.b.value != a:  # type: ignore[attr-defined]
                return False
            nums.append(x.a)  # type: ignore[attr-defined]
        else:
            nums.append(binop("mul", x, a))
    n_lo, n_hi = to_linear(an.simplify(nums[0])), to_linear(an.simplify(nums[1]))
    used = [lv for lv in loops if uses_any(nums, {lv})]
    if len(used) != 1:
        return False
    lv = used[0]
    f = n_lo.terms.get(lv, 0)
    if f <= 0 or n_hi.terms.get(lv, 0) != f or lv in owner or any(
            atom is not lv and uses_any(atom, {lv}) for atom in list(n_lo.terms) +
            list(n_hi.terms)):
        return False
    gap = n_lo.copy()
    gap.const += f
    gap.add(n_hi, -1)
    if from_linear(gap) != const(a, lo.dtype) and const_diff(from_linear(gap),
                                                             const(a, lo.dtype), an) != 0:
        return False
    owner[lv] = v
    loop = loops[lv]
    last = an.simplify(binop("sub", binop("add", loop.min, loop.extent), 1))
    base = an.simplify(substitute(lo, {lv: loop.min}))
    top = an.simplify(substitute(hi, {lv: last}))
    return prove_le(base, orig[0], an) and prove_le(orig[1], top, an)


def div_extent_bound(lo: PrimExpr, hi: PrimExpr, an: Analyzer) -> int | None:
    """A constant bound of `hi - lo + 1` for `[N_lo // a, N_hi // a]` with N_hi - N_lo a
    constant d: at most d // a + 2 values."""
    if not (_is_div(lo) or _is_div(hi)):
        return None
    a = max(x.b.value for x in (lo, hi) if _is_div(x))  # type: ignore[attr-defined]
    nums = [x.a if _is_div(x) and x.b.value == a else  # type: ignore[attr-defined]
            binop("mul", x, a) if not _is_div(x) else None for x in (lo, hi)]
    if nums[0] is None or nums[1] is None:
        return None
    d = const_diff(nums[1], nums[0], an)
    return None if d is None or d < 0 else d // a + 2


def min_bound(a: int | None, b: int | None) -> int | None:
    """The smaller of two optional bounds."""
    return b if a is None else a if b is None else min(a, b)


def _reach(extent: PrimExpr, c: int) -> PrimExpr:
    """A lower bound of `extent * c`, seeing through a split's division: `(n + 7) // 8 * 8`
    is at least `n + 7 - 7`, which the analyzer can't find by itself."""
    if isinstance(extent, BinOp) and extent.op == "floordiv" and is_const_int(extent.b, c):
        return binop("sub", extent.a, c - 1)
    return binop("mul", extent, c)
