"""Arithmetic on index expressions: simplification, bounds and proofs over symbolic variables.

`simplify(expr, bounds)` is the one-call entry; an `Analyzer` keeps variable ranges across many
calls (passes bind loop variables while they descend).
"""

from __future__ import annotations

from collections.abc import Mapping

from tirc.ir.arith.analyzer import Analyzer, BoundLike
from tirc.ir.arith.bounds import Bound, const_int_bound
from tirc.ir.arith.linear import Linear, from_linear, to_linear
from tirc.ir.arith.rewrite import expr_size
from tirc.ir.buffer import Range
from tirc.ir.expr import PrimExpr, Var

VarBounds = Mapping[Var, "Range | tuple[BoundLike, BoundLike] | PrimExpr | int"]


def make_analyzer(bounds: VarBounds | None = None) -> Analyzer:
    """An Analyzer with the given variable bounds bound (Range, inclusive (lo, hi) or value)."""
    an = Analyzer()
    for var, value in (bounds or {}).items():
        an.bind(var, value)
    return an


def simplify(expr: PrimExpr, bounds: VarBounds | None = None) -> PrimExpr:
    """`expr` simplified, knowing `bounds` of its variables; never structurally larger."""
    return make_analyzer(bounds).simplify(expr)


def can_prove(cond: PrimExpr, bounds: VarBounds | None = None) -> bool:
    """True when `cond` holds for all values of its variables within `bounds`."""
    return make_analyzer(bounds).can_prove(cond)


__all__ = [
    "Analyzer", "Bound", "Linear", "can_prove", "const_int_bound", "expr_size", "from_linear",
    "make_analyzer", "simplify", "to_linear",
]
