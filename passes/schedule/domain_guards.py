"""Guards that keep a moved block's bindings inside their domains.

A primitive that takes a block out of some loops (blockize's outer block, the init block of
decompose_reduction or blockize) may no longer see the split-tail guard that kept its bindings
in range (`i_0 * 4 + i_1 < 10` mixing loops it keeps and loops it leaves); these guards put
that bound back where the analyzer cannot prove it.
"""

from __future__ import annotations

from tirc.ir.analysis.regions import and_all
from tirc.ir.arith import Analyzer
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, PrimExpr, binop
from tirc.ir.stmt import IterVar


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
