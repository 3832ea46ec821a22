"""How many elements a buffer's storage spans from its data pointer."""

from __future__ import annotations

from tirc.ir.arith import construct
from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, const, index_dtype


def storage_size(b: Buffer) -> PrimExpr:
    """Elements the storage of `b` spans from its data pointer (offset included)."""
    dt = index_dtype(*b.shape, *b.strides)
    if b.strides:
        size: PrimExpr = const(1, dt)
        for dim, stride in zip(b.shape, b.strides):
            size = construct.add(size, construct.mul(construct.sub(dim, const(1, dt)), stride))
    else:
        size = const(1, dt)
        for dim in b.shape:
            size = construct.mul(size, dim)
    if b.elem_offset is not None:
        size = construct.add(b.elem_offset, size)
    return size
