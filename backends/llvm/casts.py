"""Conversions between dtypes on register values (`T.cast`), with C/numpy semantics.

Integers truncate or extend by the signedness of the source; floats convert to integers by
truncation toward zero; anything converts to bool by comparison with zero (NaN is true).
bfloat16 values are floats in registers, so converting to bfloat16 rounds the float.
"""

from __future__ import annotations

from llvmlite import ir
from tirc.backends.llvm.types import bf16_round, const_like, reg_type, splat
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType


def _float_bits(dt: DType) -> int:
    """Register width of a float dtype (bfloat16 lives in a float)."""
    return 32 if dt.kind == "bfloat" else dt.bits


def convert(b: ir.IRBuilder, value: ir.Value, src: DType, dst: DType) -> ir.Value:
    """Convert `value` of dtype `src` to dtype `dst` (lanes broadcast from 1 if needed)."""
    if src.lanes == 1 and dst.lanes > 1:
        value = splat(b, value, dst.lanes)
        src = src.with_lanes(dst.lanes)
    if src.lanes != dst.lanes:
        raise CompileError(f"codegen: cannot convert {src} to {dst} (lanes differ)")
    if src == dst:
        return value
    to = reg_type(dst)
    if dst.is_bool:
        if src.is_float:
            return b.fcmp_unordered("!=", value, const_like(value.type, 0.0))
        return b.icmp_unsigned("!=", value, const_like(value.type, 0))
    if src.is_bool:
        if dst.is_float:
            out = b.uitofp(value, to)
            return out
        return b.zext(value, to)
    if src.is_int and dst.is_int:
        if dst.bits < src.bits:
            return b.trunc(value, to)
        if dst.bits > src.bits:
            return b.sext(value, to) if src.kind == "int" else b.zext(value, to)
        return value
    if src.is_int and dst.is_float:
        out = b.sitofp(value, to) if src.kind == "int" else b.uitofp(value, to)
        return bf16_round(b, out) if dst.kind == "bfloat" else out
    if src.is_float and dst.is_int:
        return b.fptosi(value, to) if dst.kind == "int" else b.fptoui(value, to)
    if src.is_float and dst.is_float:
        sb, db = _float_bits(src), _float_bits(dst)
        if db > sb:
            out = b.fpext(value, to)
        elif db < sb:
            out = b.fptrunc(value, to)
        else:
            out = value
        return bf16_round(b, out) if dst.kind == "bfloat" else out
    raise CompileError(f"codegen: cannot convert {src} to {dst}")
