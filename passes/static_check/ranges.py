"""Does an integer expression provably leave [lo, hi) on some iteration that runs?

First, a quick proof of the common case: an index linear in loop variables of constant ranges
stays in a constant range at the corners of the iteration box, so no iteration leaves it
(conditions only take iterations away). Then two exact methods, tried in turn:
- over every point of the loops it depends on (tirc.passes.static_check.points), with the
  conditions it runs under masking points out;
- with symbolic loop bounds (`range(n)`), for an expression linear in the loop variables and
  no condition on them: its largest and smallest values are at the corners of the iteration
  box, and the arith Analyzer proves the corner outside the range (knowing each loop runs at
  least once, as it must for the access to run at all).
An answer is a witness (the value reached and the loop values reaching it); None means no
iteration was shown to leave the range (it may still, with data-dependent conditions or
non-linear symbolic indices: `-fbounds-check` checks those at run time).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack

from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import from_linear, is_index_dtype, to_linear
from tirc.ir.expr import IntImm, PrimExpr, Var, binop
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.printer import print_node
from tirc.passes.static_check.points import (
    NotEnumerable,
    enumerate_points,
    evaluate,
    free_vars,
    relevant_loops,
)
from tirc.passes.static_check.sites import Loop


@dataclass(frozen=True)
class Witness:
    """The value an expression reaches outside its range, and where (loop variable values,
    as integers or as expressions over symbolic sizes)."""

    value: str
    at: tuple[tuple[str, str], ...]
    above: bool

    def where(self) -> str:
        return ", ".join(f"{name} = {value}" for name, value in self.at) or "every iteration"


def find_outside(e: PrimExpr, lo: PrimExpr, hi: PrimExpr, loops: Sequence[Loop],
                 guards: Sequence[PrimExpr]) -> Witness | None:
    """A witness that `e` takes a value outside [lo, hi) on an iteration that runs."""
    if e.dtype.lanes != 1 or not e.dtype.is_int:
        return None
    if _inside_at_corners(e, lo, hi, loops):
        return None
    try:
        return _by_points(e, lo, hi, loops, guards)  # exact, with narrow types' wrap-around
    except NotEnumerable:
        pass
    if not is_index_dtype(e.dtype):
        return None  # the corners of a linear form say nothing of a type that wraps
    return _by_corners(e, lo, hi, loops, guards)


def _inside_at_corners(e: PrimExpr, lo: PrimExpr, hi: PrimExpr, loops: Sequence[Loop]) -> bool:
    """Whether `e`, linear in loop variables of constant ranges (an index type, which does not
    wrap), stays in the constant range [lo, hi) over the whole iteration box."""
    if not (isinstance(lo, IntImm) and isinstance(hi, IntImm) and is_index_dtype(e.dtype)):
        return False
    ranges = {lp.var: (lp.min, lp.extent) for lp in loops}
    lin = to_linear(e)
    low = high = lin.const
    for atom, coef in lin.terms.items():
        bounds = ranges.get(atom) if isinstance(atom, Var) else None
        if bounds is None or not all(isinstance(b, IntImm) for b in bounds):
            return False
        first, extent = bounds[0].value, bounds[1].value  # type: ignore[union-attr]
        if extent < 1:
            return True  # the loop never runs: neither does the access
        ends = (coef * first, coef * (first + extent - 1))
        low, high = low + min(ends), high + max(ends)
    return lo.value <= low and high < hi.value


def _by_points(e: PrimExpr, lo: PrimExpr, hi: PrimExpr, loops: Sequence[Loop],
               guards: Sequence[PrimExpr]) -> Witness | None:
    import numpy as np  # only here: a compile whose indices the corners decide never loads it

    pts = enumerate_points([e, lo, hi, *guards], loops)
    n = len(pts.valid)
    if n == 0:
        return None
    runs = pts.valid.copy()
    for g in guards:
        runs &= np.broadcast_to(evaluate(g, pts.env, n), runs.shape)
    values = np.broadcast_to(evaluate(e, pts.env, n), runs.shape)
    low = np.broadcast_to(evaluate(lo, pts.env, n), runs.shape)
    high = np.broadcast_to(evaluate(hi, pts.env, n), runs.shape)
    above = runs & (values >= high)
    below = runs & (values < low)
    if above.any():
        k = int(np.argmax(np.where(above, values, np.iinfo(np.int64).min)))
    elif below.any():
        k = int(np.argmin(np.where(below, values, np.iinfo(np.int64).max)))
    else:
        return None
    at = tuple((name, str(v)) for name, v in pts.at(k).items())
    return Witness(str(int(values[k])), at, bool(above.any()))


def _by_corners(e: PrimExpr, lo: PrimExpr, hi: PrimExpr, loops: Sequence[Loop],
                guards: Sequence[PrimExpr]) -> Witness | None:
    chosen = relevant_loops([e], loops)
    loop_vars = {lp.var for lp in chosen}
    if any(free_vars([g]) & loop_vars for g in guards) or \
            any(free_vars([lp.min, lp.extent]) & loop_vars for lp in chosen):
        return None
    lin = to_linear(e)
    for atom in lin.terms:
        if not isinstance(atom, Var) and free_vars([atom]) & loop_vars:
            return None              # a non-linear use of a loop variable
    an = Analyzer()
    with ExitStack() as stack:
        for lp in chosen:
            one = IntImm(1, lp.extent.dtype)
            stack.enter_context(an.constraint(binop("ge", lp.extent, one)))
        for upper in (True, False):
            corner = lin.copy()
            at: list[tuple[str, str]] = []
            for lp in chosen:
                coef = lin.terms.get(lp.var, 0)
                if not coef:
                    continue
                last = binop("sub", binop("add", lp.min, lp.extent), 1)
                pick = last if (coef > 0) == upper else lp.min
                corner.add_term(lp.var, -coef)
                corner.add(to_linear(_as(pick, lp.var)), coef)
                at.append((lp.var.name, print_node(an.simplify(pick))))
            value = an.simplify(from_linear(corner))
            bound = binop("ge", value, _as(hi, value)) if upper else \
                binop("lt", value, _as(lo, value))
            if an.can_prove(bound):
                return Witness(print_node(value), tuple(at), upper)
    return None


def _as(e: PrimExpr, like: PrimExpr) -> PrimExpr:
    from tirc.ir.expr import cast

    return e if e.dtype == like.dtype else cast(like.dtype, e)
