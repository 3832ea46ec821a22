"""Guards that keep a moved block's bindings inside their domains.

A primitive that takes a block out of some loops (blockize's outer block, the init block of
decompose_reduction or blockize) may no longer see the split-tail guard that kept its bindings
in range (`i_0 * 4 + i_1 < 10` mixing loops it keeps and loops it leaves); these guards put
that bound back where the analyzer cannot prove it. A block that stands for a reduction's
init, or for its result (rfactor's write-back, cache_write's copy of a reduction), runs only
where the reduction ran at all (`first_point_guards`): over n = 0 its output keeps its values.
"""

from __future__ import annotations

from tirc.ir.analysis.regions import and_all, conjuncts, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, PrimExpr, binop
from tirc.ir.stmt import For, IterVar
from tirc.ir.visitor import substitute


def domain_guards(ivs: list[IterVar], values: list[PrimExpr], pred: list[PrimExpr],
                  an: Analyzer) -> list[PrimExpr]:
    """`min <= v < min + extent` for each binding `v` of `ivs` that the analyzer (knowing the
    loops' ranges) cannot prove under the conditions `pred`."""
    guards: list[PrimExpr] = []
    with an.scope(), an.constraint(and_all(pred, IntImm(1, BOOL))):
        for iv, v in zip(ivs, values):
            lo = iv.dom.min
            for cond in (binop("ge", v, lo), binop("lt", v, lo + iv.dom.extent)):
                if not an.can_prove(cond):
                    guards.append(an.simplify(cond))
    return guards


def first_point_guards(pred: PrimExpr, loops: list[For], known: list[PrimExpr],
                       an: Analyzer) -> list[PrimExpr]:
    """The conditions that a block predicated by `pred` ran at the first point of `loops` (its
    reduction loops): each has an iteration, and `pred`'s conjuncts over them hold with them
    at their minimum (`k < n` is `0 < n`). Those the analyzer proves under `known` go, and so
    do those still over `loops` (an extent or minimum that depends on another of them)."""
    gone = {x.loop_var for x in loops}
    first = {x.loop_var: x.min for x in loops}
    wanted = [substitute(c, first) for c in conjuncts(pred) if uses_any(c, gone)]
    wanted += [binop("gt", x.extent, IntImm(0, x.extent.dtype)) for x in loops]
    guards: list[PrimExpr] = []
    for cond in wanted:
        if uses_any(cond, gone):
            continue
        with an.scope(), an.constraint(and_all(known + guards, IntImm(1, BOOL))):
            if an.can_prove(cond):
                continue
        guards.append(an.simplify(cond))
    return guards
