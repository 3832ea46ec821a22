"""Vector lanes and broadcast: unpack, pack and broadcast of a tile layout.

`unpack(n)` views each element as `n` contiguous narrower elements (an `float32x2` layout
becomes a `float32` one): for the new layout `L'`, `L'(c * n + k) = L(c)` with the value on
the memory axis multiplied by `n` and `k` added. So every stride, replica stride and offset
on that memory axis is multiplied by `n`, and an iter `n:1` on it is appended innermost;
thread and device parts are unchanged.

`pack(n)` is the inverse: `L'(c) = L(c * n)` with the memory value divided by `n`. It needs
the innermost shard iter (of the layout, or failing that of its canonical form) to be on
that axis with stride 1 and an extent divisible by `n`, and every other stride and offset on
the axis divisible by `n`, so that each group of `n` logical neighbours is contiguous.

`broadcast(n, position, axis)` inserts a shard iter `n:0@axis` at `position` (list-insert
position; -1 appends innermost): a new logical dim of extent `n` whose indices all reach
the same place, as when one stored value is read `n` times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.ir.layout.axes import Axis, get_axis
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.symbolic import divides, floordiv, mul

if TYPE_CHECKING:
    from tirc.ir.layout.tile_layout import TileLayout


def _count(n: object, what: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise LayoutError(f"{what} needs a positive integer, got {n!r}")
    return n


def _memory_axis(axis: str | Axis) -> Axis:
    ax = get_axis(axis)
    if not ax.is_memory:
        raise LayoutError(f"vector lanes live on a memory axis, not on {ax.kind.value} axis {ax}")
    return ax


def unpack(layout: TileLayout, n: int, axis: str | Axis) -> TileLayout:
    """Each element becomes `n` contiguous elements on `axis` (see the module docstring)."""
    n, ax = _count(n, "unpack"), _memory_axis(axis)

    def scale(it: Iter) -> Iter:
        return it.with_(stride=mul(it.stride, n)) if it.axis == ax else it

    return layout.with_parts(
        [scale(it) for it in layout.shard] + [Iter(n, 1, ax)],
        [scale(it) for it in layout.replica],
        [(a, mul(v, n) if a == ax.name else v) for a, v in layout.offset],
    )


def pack(layout: TileLayout, n: int, axis: str | Axis) -> TileLayout:
    """`n` contiguous elements on `axis` become one (see the module docstring)."""
    n, ax = _count(n, "pack"), _memory_axis(axis)
    if n == 1:
        return layout
    reason = None
    for candidate in (layout, layout.canonicalize()):
        reason = _pack_obstacle(candidate, n, ax)
        if reason is None:
            return _packed(candidate, n, ax)
    raise LayoutError(f"cannot pack {layout} by {n} on {ax}: {reason}")


def _pack_obstacle(layout: TileLayout, n: int, ax: Axis) -> str | None:
    if not layout.shard:
        return "the shard is empty"
    last = layout.shard[-1]
    if last.axis != ax or last.stride != 1 or not divides(n, last.extent):
        return f"the innermost iter {last} is not `k*{n}:1` on {ax}"
    for it in layout.shard[:-1] + layout.replica:
        if it.axis == ax and not divides(n, it.stride):
            return f"stride of {it} is not a multiple of {n}"
    for a, v in layout.offset:
        if a == ax.name and not divides(n, v):
            return f"offset {v} on {a} is not a multiple of {n}"
    return None


def _packed(layout: TileLayout, n: int, ax: Axis) -> TileLayout:
    def shrink(it: Iter) -> Iter:
        return it.with_(stride=floordiv(it.stride, n)) if it.axis == ax else it

    last = layout.shard[-1]
    return layout.with_parts(
        [shrink(it) for it in layout.shard[:-1]] + [last.with_(extent=floordiv(last.extent, n))],
        [shrink(it) for it in layout.replica],
        [(a, floordiv(v, n) if a == ax.name else v) for a, v in layout.offset],
    )


def broadcast(layout: TileLayout, n: int, position: int, axis: str | Axis) -> TileLayout:
    """Insert `n:0@axis` into the shard at list-insert `position` (-1: innermost)."""
    n, ax = _count(n, "broadcast"), get_axis(axis)
    size = len(layout.shard)
    at = position if position >= 0 else size + 1 + position
    if not 0 <= at <= size:
        raise LayoutError(f"broadcast position {position} is outside a shard of {size} iters")
    shard = list(layout.shard)
    shard.insert(at, Iter(n, 0, ax))
    return layout.with_parts(shard=shard)
