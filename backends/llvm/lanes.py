"""One lane of a vector expression as a scalar expression, for code that must go lane by lane.

Used where a vector operation has no vector instruction: gathers and scatters through
non-contiguous indices, and `if_then_else` on vectors (whose untaken side must not be loaded).
"""

from __future__ import annotations

from tirc.ir import intrinsics as intrin
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    Var,
    binop,
)
from tirc.ir.visitor import substitute


def lane_of(e: PrimExpr, i: int) -> PrimExpr:
    """The scalar expression computing lane `i` of `e` (scalars are returned unchanged)."""
    if e.dtype.lanes == 1:
        return e
    elem = e.dtype.element()
    if isinstance(e, Ramp):
        return binop("add", e.base, binop("mul", e.stride, IntImm(i, e.stride.dtype)))
    if isinstance(e, Broadcast):
        return e.value
    if isinstance(e, Var):
        return Call(intrin.EXTRACT_LANE, (e, IntImm(i)), elem)
    if isinstance(e, BinOp):
        return BinOp(e.op, lane_of(e.a, i), lane_of(e.b, i), elem)
    if isinstance(e, Not):
        return Not(lane_of(e.a, i), elem)
    if isinstance(e, Select):
        return Select(lane_of(e.condition, i), lane_of(e.true_value, i),
                      lane_of(e.false_value, i), elem)
    if isinstance(e, Cast):
        return Cast(lane_of(e.value, i), elem)
    if isinstance(e, Call):
        return Call(e.op, tuple(lane_of(a, i) for a in e.args), elem)
    if isinstance(e, BufferLoad):
        return BufferLoad(e.buffer, tuple(lane_of(x, i) for x in e.indices), elem)
    if isinstance(e, Shuffle):
        k = e.indices[i]
        for v in e.vectors:
            if k < v.dtype.lanes:
                return lane_of(v, k)
            k -= v.dtype.lanes
    if isinstance(e, Let):
        scalar = Var(e.var.name, e.var.dtype.element())
        body = substitute(e.body, {e.var: scalar}) if e.var.dtype.lanes > 1 else e.body
        return Let(scalar, lane_of(e.value, i), lane_of(body, i), elem)
    raise CompileError(f"codegen: cannot split {type(e).__name__} of dtype {e.dtype} into lanes",
                       e.span)
