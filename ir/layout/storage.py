"""The storage of a buffer with a layout: which axes it has, its size, and element offsets.

A buffer with a layout is stored in one flat allocation. Its storage axes, outermost first,
are the device axes, then the thread axes (in order of first appearance in the layout), then
the memory axis `m`; each axis is as long as the layout's span on it (`m` rounded up to whole
swizzle blocks for a `ComposeLayout`). A physical place {axis: coordinate} is stored at the
row-major offset of its coordinates over those axes: on the CPU, worker `t` of a buffer
sharded over `tid` owns the contiguous chunk `[t * span_m, (t + 1) * span_m)`.
Memory axes other than `m` (tensor-memory lanes, banks) have no storage here.

`ConcreteLayoutMap` gives the offsets for concrete dims and symbol values: the reference
interpreter uses it, so the `lower-layouts` pass (which builds the same offsets as index
expressions, in `lowering`) is checked against an independent computation.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from tirc.ir.layout.axes import MEMORY
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.swizzle import ComposeLayout
from tirc.ir.layout.symbolic import Value, add, floordiv, mul
from tirc.ir.layout.tile_layout import TileLayout, split_coord

Layout = TileLayout | ComposeLayout


def tile_of(layout: Layout) -> TileLayout:
    """The tile layout of `layout` (itself, or the tile under a swizzle)."""
    return layout.tile_layout if isinstance(layout, ComposeLayout) else layout


def layout_symbols(layout: Layout) -> frozenset[str]:
    """The symbol names (`K`, `N`) a layout uses."""
    return tile_of(layout).symbols()


def storage_axes(layout: Layout) -> list[tuple[str, Value]]:
    """(axis name, length) of each storage axis, outermost first; `m` is always last."""
    tile = tile_of(layout)
    axes = tile.axes()
    for axis in axes:
        if axis.is_memory and axis != MEMORY:
            raise LayoutError(f"memory axis '{axis.name}' of layout {layout} has no storage on "
                              f"this target (only 'm' has)")
    order = [a for a in axes if a.is_device] + [a for a in axes if a.is_thread]
    out: list[tuple[str, Value]] = [(a.name, tile.span(a)) for a in order]
    return out + [(MEMORY.name, memory_span(layout))]


def memory_span(layout: Layout) -> Value:
    """Elements along `m`; a swizzle permutes whole blocks, so its span rounds up to them."""
    if isinstance(layout, ComposeLayout):
        span = layout.tile_layout.span(MEMORY)
        block = layout.block
        return mul(floordiv(add(span, block - 1), block), block)
    return layout.span(MEMORY)


def storage_size(layout: Layout) -> Value:
    """Elements of the flat storage: the product of the storage axes' lengths."""
    out: Value = 1
    for _, length in storage_axes(layout):
        out = mul(out, length)
    return out


def axis_multipliers(axes: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """Each storage axis's row-major multiplier (`m` has 1)."""
    out: dict[str, Any] = {}
    scale: Any = 1
    for name, length in reversed(axes):
        out[name] = scale
        scale = mul(scale, length)
    return out


def grouped_digits(tile: TileLayout, dims: Sequence[Value]) -> list[tuple[Iter, ...]] | None:
    """The shard iters of each dim when the layout groups by `dims`, else None."""
    try:
        grouped, seps = tile.group(list(dims))
    except LayoutError:
        return None
    return [tuple(grouped.shard[seps[d]:seps[d + 1]]) for d in range(len(dims))]


class ConcreteLayoutMap:
    """Storage offsets of the elements of a buffer of concrete `dims` with `layout`.

    `symbols` gives the value of every symbol of the layout. Indices may be ints or numpy
    integer arrays (vector accesses). `offsets(index)` lists the base place first, then each
    replica copy.
    """

    def __init__(self, layout: Layout, dims: Sequence[int], symbols: Mapping[str, int]) -> None:
        missing = sorted(layout_symbols(layout) - set(symbols))
        if missing:
            raise LayoutError(f"layout {layout} uses symbol '{missing[0]}', which has no value")
        concrete = layout.substitute(dict(symbols)) if layout_symbols(layout) else layout
        self.layout = concrete
        self.tile = tile_of(concrete)
        self.dims = [int(d) for d in dims]
        self.groups = grouped_digits(self.tile, self.dims)
        axes = storage_axes(concrete)
        self.size = int(storage_size(concrete))
        self.scale = axis_multipliers(axes)
        self.copies = self._replica_deltas()

    def _replica_deltas(self) -> list[dict[str, int]]:
        ranges = []
        for it in self.tile.replica:
            ranges.append(range(int(it.extent)))
        out = []
        for digits in itertools.product(*ranges):
            delta: dict[str, int] = {}
            for it, digit in zip(self.tile.replica, digits):
                delta[it.axis.name] = delta.get(it.axis.name, 0) + digit * int(it.stride)
            out.append(delta)
        return out

    def place(self, index: Sequence[Any]) -> dict[str, Any]:
        """The base physical coordinates {axis: value} of the element at `index`."""
        out: dict[str, Any] = {}
        if self.groups is not None:
            pairs = [(it, digit) for group, x in zip(self.groups, index)
                     for it, digit in zip(group, split_coord(x, [g.extent for g in group]))]
        else:
            flat: Any = 0
            for x, d in zip(index, self.dims):
                flat = flat * d + x
            shard = self.tile.shard
            pairs = list(zip(shard, split_coord(flat, [it.extent for it in shard])))
        for it, digit in pairs:
            out[it.axis.name] = out.get(it.axis.name, 0) + digit * int(it.stride)
        for axis, value in self.tile.offset:
            out[axis] = out.get(axis, 0) + int(value)
        return out

    def offset_of(self, place: Mapping[str, Any]) -> Any:
        """The storage offset of a physical place (the swizzle applied to `m`)."""
        total: Any = 0
        for axis, value in place.items():
            if axis == MEMORY.name and isinstance(self.layout, ComposeLayout):
                value = self.layout.swizzle(value)
            total = total + value * self.scale[axis]
        return total

    def offsets(self, index: Sequence[Any]) -> list[Any]:
        """Storage offsets of every copy of the element at `index`, the base first."""
        base = self.place(index)
        out = []
        for delta in self.copies:
            place = dict(base)
            for axis, d in delta.items():
                place[axis] = place.get(axis, 0) + d
            out.append(self.offset_of(place))
        return out
