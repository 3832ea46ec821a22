"""A size that appears only inside a product in an argument's shape (`A: R.Tensor(("M * N",))`
with `M` given by another parameter): the product of its other factors, so the interpreter and
the entry point can solve the size as the dimension divided by them, as the compound dims of a
graph function's parameters are bound after every size some parameter defines directly."""

from __future__ import annotations

from tirc.ir.expr import BinOp, Cast, IntImm, PrimExpr, Var, binop
from tirc.ir.visitor import post_order_visit


def other_factors(e: PrimExpr, v: Var) -> PrimExpr | None:
    """`e` divided by `v` when `e` is a product (casts allowed) with `v` a factor exactly once
    and nowhere else, else None; `IntImm(1)` when `e` is `v` itself."""
    factors = _factors(e)
    if factors is None or sum(1 for f in factors if f is v) != 1:
        return None
    rest = [f for f in factors if f is not v]
    if any(_mentions(f, v) for f in rest):
        return None
    out: PrimExpr | None = None
    for f in rest:
        out = f if out is None else binop("mul", out, f)
    return out if out is not None else IntImm(1, v.dtype)


def _factors(e: PrimExpr) -> list[PrimExpr] | None:
    """The factors of a product of multiplications (through integer casts)."""
    while isinstance(e, Cast):
        e = e.value
    if isinstance(e, BinOp) and e.op == "mul":
        a, b = _factors(e.a), _factors(e.b)
        return None if a is None or b is None else a + b
    return [e]


def _mentions(e: PrimExpr, v: Var) -> bool:
    """Whether `v` occurs in `e`."""
    found: list[bool] = []
    post_order_visit(e, lambda n: found.append(True) if n is v else None)
    return bool(found)
