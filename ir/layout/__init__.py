"""Axe-style layouts: where each element of a logical tensor lives on named physical axes.

`TileLayout` (shard iters, replica iters, offsets) and `ComposeLayout` (a tile plus an XOR
swizzle) with their algebra: apply, image, size, span, canonicalize and equality, group,
tile, direct_sum, slice, storage, pack/unpack and broadcast. `parse_layout` reads the short
notation `S[(8, 2):(4@laneid, 1)] + R[2:4@warpid] + 5@warpid` and TVMScript's
`T.TileLayout(...)`/`T.ComposeLayout(...)`; `str()` prints the short notation back.
Semantics: /work/shared/LAYOUTS.md.
"""

from tirc.ir.layout.axes import (
    Axis,
    AxisKind,
    get_axis,
    is_axis,
    register_device_axis,
    register_memory_axis,
    registered_axes,
)
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.parse import parse_layout, parse_value
from tirc.ir.layout.swizzle import ComposeLayout
from tirc.ir.layout.symbolic import Sym, Value
from tirc.ir.layout.tile_layout import Place, TileLayout, split_coord

Layout = TileLayout | ComposeLayout

__all__ = [
    "Axis", "AxisKind", "ComposeLayout", "Iter", "Layout", "LayoutError", "Place", "Sym",
    "TileLayout", "Value", "get_axis", "is_axis", "parse_layout", "parse_value",
    "register_device_axis", "register_memory_axis", "registered_axes", "split_coord",
]
