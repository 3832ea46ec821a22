"""Group, tile and direct sum: the operations that combine layouts over logical shapes.

`group` splits iters (never merging or reordering) so that runs of iters match a shape's
dims; `tile` and `direct_sum` group two layouts and interleave their runs per dim, `tile`
scaling the outer strides by the inner layout's span on each axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.symbolic import Value, add, as_value, divides, floordiv, format_value, mul

if TYPE_CHECKING:
    from tirc.ir.layout.tile_layout import TileLayout


def shape_dims(shape: Sequence[object]) -> list[Value]:
    """A shape's dims as values, rejecting non-positive constants."""
    dims = [as_value(d, "shape dimension") for d in shape]
    for d in dims:
        if isinstance(d, int) and d < 1:
            raise LayoutError(f"shape dimensions must be positive, got {shape_text(dims)}")
    return dims


def shape_text(dims: Sequence[Value]) -> str:
    return "[" + ", ".join(format_value(d) for d in dims) + "]"


def group_iters(shard: Sequence[Iter], shape: Sequence[object], layout: object,
                ) -> tuple[list[Iter], list[int]]:
    """Split `shard` so consecutive runs have extent products equal to `shape`'s dims.

    Returns the new iters and the run boundaries (`[0, ..., len(iters)]`, one more than the
    number of dims); extent-1 iters are dropped. Fails when a dim boundary falls inside an
    iter in a way that does not divide it, or when the total sizes differ.
    """
    dims = shape_dims(shape)
    out: list[Iter] = []
    seps = [0]
    idx = 0
    prod: Value = 1
    for it in shard:
        extent = it.extent
        prod = mul(prod, extent)
        while idx < len(dims) and divides(dims[idx], prod):
            c = floordiv(prod, dims[idx])
            if not divides(c, extent):
                raise LayoutError(
                    f"layout {layout} cannot be grouped by shape {shape_text(dims)}: dimension "
                    f"{idx} ({format_value(dims[idx])}) does not split iter {it} evenly"
                )
            out.append(Iter(floordiv(extent, c), mul(it.stride, c), it.axis))
            extent, prod = c, c
            idx += 1
            seps.append(len(out))
        if extent != 1:
            if idx >= len(dims):
                raise LayoutError(
                    f"layout {layout} cannot be grouped by shape {shape_text(dims)}: the "
                    f"layout has more elements than the shape"
                )
            out.append(it.with_(extent=extent))
    while idx < len(dims) and dims[idx] == 1 and prod == 1:
        idx += 1
        seps.append(len(out))
    if idx != len(dims):
        raise LayoutError(
            f"layout {layout} cannot be grouped by shape {shape_text(dims)}: dimension {idx} "
            f"({format_value(dims[idx])}) does not end on an iter boundary or the shape has "
            f"more elements than the layout"
        )
    return out, seps


def _interleave(left: Sequence[Iter], left_seps: Sequence[int], right: Sequence[Iter],
                right_seps: Sequence[int]) -> list[Iter]:
    out: list[Iter] = []
    for d in range(len(left_seps) - 1):
        out += left[left_seps[d]:left_seps[d + 1]]
        out += right[right_seps[d]:right_seps[d + 1]]
    return out


def _sum_offsets(*layouts: TileLayout) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for layout in layouts:
        for axis, value in layout.offset:
            out[axis] = add(out.get(axis, 0), value)
    return out


def _check_ranks(name: str, a_shape: Sequence[object], b_shape: Sequence[object]) -> None:
    if len(a_shape) != len(b_shape):
        raise LayoutError(
            f"{name} needs shapes of equal rank, got {len(a_shape)} and {len(b_shape)}"
        )


def tile(inner: TileLayout, outer: TileLayout, outer_shape: Sequence[object],
         inner_shape: Sequence[object]) -> TileLayout:
    """Tile `outer` (over `outer_shape`) by `inner` (over `inner_shape`).

    Both are canonicalized and grouped; each outer shard stride on an axis that the inner
    shard uses is multiplied by the inner span on that axis; the runs interleave per dim as
    [outer run, inner run]; replicas concatenate (inner first) and offsets add, unscaled.
    The result, over the shape `outer_shape[d] * inner_shape[d]`, is canonical.
    """
    _check_ranks("tile", outer_shape, inner_shape)
    outer_c, inner_c = outer.canonicalize(), inner.canonicalize()
    o_iters, o_seps = group_iters(outer_c.shard, outer_shape, outer_c)
    i_iters, i_seps = group_iters(inner_c.shard, inner_shape, inner_c)
    spans = {it.axis: inner_c.span(it.axis) for it in i_iters}
    scaled = [
        it.with_(stride=mul(it.stride, spans[it.axis])) if it.axis in spans else it
        for it in o_iters
    ]
    return inner.with_parts(
        _interleave(scaled, o_seps, i_iters, i_seps),
        inner_c.replica + outer_c.replica,
        _sum_offsets(inner_c, outer_c),
    ).canonicalize()


def direct_sum(right: TileLayout, left: TileLayout, left_shape: Sequence[object],
               right_shape: Sequence[object]) -> TileLayout:
    """`left(a) + right(b)` over the interleaved domain: `tile` without the span scaling."""
    _check_ranks("direct_sum", left_shape, right_shape)
    left_c, right_c = left.canonicalize(), right.canonicalize()
    l_iters, l_seps = group_iters(left_c.shard, left_shape, left_c)
    r_iters, r_seps = group_iters(right_c.shard, right_shape, right_c)
    return right.with_parts(
        _interleave(l_iters, l_seps, r_iters, r_seps),
        left_c.replica + right_c.replica,
        _sum_offsets(left_c, right_c),
    ).canonicalize()
