"""Slicing: the layout of a rectangular sub-region, with the region start in the offsets.

The layout is canonicalized and grouped by the tensor shape; each dim's run of iters is
sliced on its own. Within a run, the region `[begin, begin + n)` is a set of row-major
indices: trailing iters that the region covers whole stay, the next iter (the pivot) keeps
`n / (their product)` steps, and the digits of `begin` go into the offsets. A region that
wraps once around the pivot in two equal halves becomes a 2-iter; any other region is not
a tile layout and raises `LayoutError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tirc.ir.layout.algebra import group_iters, shape_dims, shape_text
from tirc.ir.layout.canonical import fuse_adjacent
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.symbolic import (
    Value,
    add,
    as_value,
    divides,
    floordiv,
    format_value,
    mod,
    mul,
    sub,
)

if TYPE_CHECKING:
    from tirc.ir.layout.tile_layout import TileLayout


def slice_layout(layout: TileLayout, shape: Sequence[object], region: Sequence[Any],
                 ) -> TileLayout:
    """The sub-layout of `region` (one `(begin, end)` pair or `range` per dim of `shape`)."""
    dims = shape_dims(shape)
    if len(region) != len(dims):
        raise LayoutError(f"region has {len(region)} ranges but the shape has {len(dims)} dims")
    bounds = [_bounds(r, d, k) for k, (r, d) in enumerate(zip(region, dims))]
    canon = layout.canonicalize()
    iters, seps = group_iters(canon.shard, dims, canon)
    offsets = dict(canon.offset)
    shard: list[Iter] = []
    for k, (begin, extent) in enumerate(bounds):
        run = fuse_adjacent(iters[seps[k]:seps[k + 1]])
        try:
            sliced, run_offsets = _slice_run(run, begin, extent)
        except LayoutError as err:
            raise LayoutError(
                f"cannot slice {layout} over shape {shape_text(dims)}: dim {k}: "
                f"{err}"
            ) from None
        shard += sliced
        for axis, value in run_offsets:
            offsets[axis] = add(offsets.get(axis, 0), value)
    return layout.with_parts(shard, canon.replica, offsets)


def _bounds(r: Any, dim: Value, k: int) -> tuple[Value, Value]:
    if isinstance(r, range):
        if r.step != 1:
            raise LayoutError(f"region range {r} of dim {k} must have step 1")
        begin, end = r.start, r.stop
    else:
        try:
            begin, end = r
        except (TypeError, ValueError):
            raise LayoutError(f"region entry {r!r} of dim {k} is not a (begin, end) pair") from None
    b, e = as_value(begin, "region begin"), as_value(end, "region end")
    n = sub(e, b)
    ints = [v for v in (b, e, dim, n) if isinstance(v, int)]
    if len(ints) == 4 and not 0 <= b < e <= dim:
        raise LayoutError(f"region [{b}, {e}) of dim {k} is empty or outside [0, {dim})")
    return b, n


def _le(a: Value, b: Value) -> bool:
    diff = sub(b, a)
    return isinstance(diff, int) and diff >= 0


def _slice_run(run: Sequence[Iter], begin: Value, n: Value,
               ) -> tuple[list[Iter], list[tuple[str, Value]]]:
    """Slice `[begin, begin + n)` of one dim's run of iters; return iters and offsets."""
    if not run:
        if begin != 0 or n != 1:
            raise LayoutError("a size-1 dim has only the region [0, 1)")
        return [], []
    m = len(run)
    below: list[Value] = [1] * m
    for k in range(m - 2, -1, -1):
        below[k] = mul(below[k + 1], run[k + 1].extent)
    digits = [floordiv(begin, below[0])]
    digits += [mod(floordiv(begin, below[k]), run[k].extent) for k in range(1, m)]
    offsets = [(it.axis.name, mul(d, it.stride)) for it, d in zip(run, digits)]
    if m == 1:
        return [run[0].with_(extent=n)], offsets
    rem, pivot = n, m - 1
    while pivot >= 0 and digits[pivot] == 0 and divides(run[pivot].extent, rem):
        rem = floordiv(rem, run[pivot].extent)
        pivot -= 1
    whole = list(run[pivot + 1:])
    if pivot < 0:
        if rem != 1:
            raise LayoutError(f"region of {format_value(n)} elements does not fit the run")
        return whole, offsets
    it = run[pivot]
    if _le(add(digits[pivot], rem), it.extent):
        return [it.with_(extent=rem), *whole], offsets
    half = floordiv(rem, 2) if isinstance(rem, int) and rem % 2 == 0 else None
    if (
        half is not None
        and pivot > 0
        and run[pivot - 1].axis == it.axis
        and add(digits[pivot], half) == it.extent
        and _le(add(digits[pivot - 1], 2), run[pivot - 1].extent)
    ):
        step = sub(run[pivot - 1].stride, mul(sub(it.extent, half), it.stride))
        return [Iter(2, step, it.axis), it.with_(extent=half), *whole], offsets
    raise LayoutError(
        f"region [{format_value(begin)}, {format_value(add(begin, n))}) of iters "
        f"{', '.join(map(str, run))} is not expressible as a tile layout"
    )
