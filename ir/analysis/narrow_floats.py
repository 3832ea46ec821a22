"""Where a loop function first uses a narrow float (float8/float6/float4), for the backends'
refusal: the interpreter runs these dtypes (through ml_dtypes), no backend has code for them."""

from __future__ import annotations

from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType
from tirc.ir.function import PrimFunc
from tirc.ir.span import Span
from tirc.ir.visitor import post_order_visit


def first_narrow_float(func: PrimFunc) -> tuple[DType, Span | None] | None:
    """The first narrow-float dtype `func` uses (a value's or an accessed buffer's) and the
    span of the nearest node that has one; None when it uses none."""
    found: list[tuple[DType, Span | None]] = []
    for buf in func.buffers:
        if buf.dtype.is_narrow_float:
            found.append((buf.dtype, func.span))
            break

    def visit(n: Any) -> None:
        if found and found[0][1] is not func.span:
            return
        dt = getattr(n, "dtype", None)
        buf = getattr(n, "buffer", None)
        if not isinstance(dt, DType) or not dt.is_narrow_float:
            dt = buf.dtype if isinstance(buf, Buffer) else None
        if isinstance(dt, DType) and dt.is_narrow_float and getattr(n, "span", None) is not None:
            found[:] = [(dt, n.span)]

    post_order_visit(func.body, visit)
    return found[0] if found else None


def refuse_narrow_floats(func: PrimFunc, backend: str) -> None:
    """A CompileError at the first narrow-float use of `func` for `backend` (none if unused)."""
    hit = first_narrow_float(func)
    if hit is not None:
        dt, span = hit
        raise CompileError(f"dtype {dt.element()} is not supported by the {backend} backend "
                           "yet (the interpreter runs it; compute in float16/float32 and cast "
                           "at the buffers)", span)
