"""Builders of the position-search intrinsics a sparse lowering emits (declared in ir/intrinsics).

`tirc.lower_bound(data, value, begin, end)` is the first position p in [begin, end) with
data[p] >= value (end when none); `tirc.upper_bound` the first with data[p] > value. `data` is
the storage handle of a one-dimensional integer buffer whose slice [begin, end) is sorted.
"""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Call, PrimExpr, cast
from tirc.ir.intrinsics import LOWER_BOUND, UPPER_BOUND


def _search(op: str, buf: Buffer, value: PrimExpr, begin: PrimExpr, end: PrimExpr) -> PrimExpr:
    dt = buf.dtype
    args = (buf.data, cast(dt, value) if value.dtype != dt else value,
            cast(dt, begin) if begin.dtype != dt else begin,
            cast(dt, end) if end.dtype != dt else end)
    return Call(op, args, dt)


def lower_bound(buf: Buffer, value: PrimExpr, begin: PrimExpr, end: PrimExpr) -> PrimExpr:
    return _search(LOWER_BOUND, buf, value, begin, end)


def upper_bound(buf: Buffer, value: PrimExpr, begin: PrimExpr, end: PrimExpr) -> PrimExpr:
    return _search(UPPER_BOUND, buf, value, begin, end)
