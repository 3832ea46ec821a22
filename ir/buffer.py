"""Buffers: named, typed, shaped regions of memory that loop IR reads and writes."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import IdentityNode, Node

SCOPES = ("global", "shared", "shared.dyn", "local", "warp", "event")


@dataclass(frozen=True, eq=False)
class Buffer(IdentityNode):
    """A buffer; identity-compared like a variable, since it is a definition."""

    name: str = ""
    shape: tuple[PrimExpr, ...] = ()
    dtype: DType = field(default_factory=lambda: DType("float", 32))
    data: Var = field(default_factory=lambda: Var("data", HANDLE))
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr | None = None
    scope: str = "global"
    layout: Any = None  # a tirc.ir.layout layout, or None for row-major
    align: int = 64
    offset_factor: int = 1
    axis_separators: tuple[int, ...] = ()  # TVM's physical axes; logical indexing unchanged

    def __repr__(self) -> str:
        return f"Buffer({self.name}: {self.dtype}{list(self.shape)})"

    __hash__ = IdentityNode.__hash__
    __eq__ = IdentityNode.__eq__

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def vload(self, *indices: PrimExpr) -> PrimExpr:
        from tirc.ir.expr import BufferLoad

        return BufferLoad(self, tuple(indices), self.dtype)


def make_buffer(name: str, shape: tuple[PrimExpr | int, ...], dt: DType | str = "float32",
                scope: str = "global", **kw: Any) -> Buffer:
    """Convenience constructor: ints in the shape become int32 (or int64) constants."""
    from tirc.ir.dtype import dtype
    from tirc.ir.expr import const

    dims = tuple(const(s) if isinstance(s, int) else s for s in shape)
    return Buffer(name=name, shape=dims, dtype=dtype(dt), data=Var(name, HANDLE), scope=scope, **kw)


@dataclass(frozen=True)
class Range(Node):
    """The half-open interval [min, min + extent)."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_extent(extent: PrimExpr) -> Range:
        return Range(IntImm(0, extent.dtype), extent)


@dataclass(frozen=True)
class BufferRegion(Node):
    """A rectangular region of a buffer: what a block reads or writes."""

    buffer: Buffer
    region: tuple[Range, ...]
