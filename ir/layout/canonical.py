"""Canonical form of a tile layout's parts, the basis of layout equality.

In order: drop extent-1 shard iters (keeping one `1:1@axis` if the shard would become empty)
and extent-1 replicas; drop zero offsets; on a GPU target, fuse intra-CTA thread axes by
scope (`laneid` + `warpid` become `tx`); fuse adjacent shard iters on one axis when
`stride_k == extent_{k+1} * stride_{k+1}` (never reordering); sort replicas and offsets.
Each step preserves the map and the result is a fixed point.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.layout.axes import get_axis, gpu_fusion_map, is_gpu_target
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.symbolic import Value, add, mul, prove_equal

Parts = tuple[list[Iter], list[Iter], list[tuple[str, Value]]]


def canonical_parts(shard: Sequence[Iter], replica: Sequence[Iter],
                    offset: Sequence[tuple[str, Value]], target: object = None) -> Parts:
    """The canonical (shard, replica, offset) of a layout; see the module docstring."""
    kept = [it for it in shard if it.extent != 1]
    if not kept and shard:
        kept = [Iter(1, 1, shard[0].axis)]
    reps = [it for it in replica if it.extent != 1]
    offs = [(a, v) for a, v in offset if v != 0]
    if is_gpu_target(target):
        kept, reps, offs = fuse_thread_axes(kept, reps, offs)
    kept = fuse_adjacent(kept)
    if len(kept) == 1 and kept[0].extent == 1:
        kept = [Iter(1, 1, kept[0].axis)]
    reps.sort(key=Iter.sort_key)
    offs = sorted(((a, v) for a, v in offs if v != 0), key=lambda t: t[0])
    return kept, reps, offs


def fuse_adjacent(shard: Sequence[Iter]) -> list[Iter]:
    """Merge runs of adjacent iters on one axis that step contiguously into single iters."""
    out: list[Iter] = []
    cur = 0
    while cur < len(shard):
        extent = shard[cur].extent
        nxt = cur + 1
        while (
            nxt < len(shard)
            and shard[nxt].axis == shard[cur].axis
            and prove_equal(mul(shard[nxt].extent, shard[nxt].stride), shard[nxt - 1].stride)
        ):
            extent = mul(extent, shard[nxt].extent)
            nxt += 1
        out.append(shard[cur] if nxt == cur + 1 else shard[nxt - 1].with_(extent=extent))
        cur = nxt
    return out


def fuse_thread_axes(shard: Sequence[Iter], replica: Sequence[Iter],
                     offset: Sequence[tuple[str, Value]]) -> Parts:
    """Rewrite intra-CTA GPU thread axes onto the one axis their scope chain spans."""
    used = {it.axis for it in list(shard) + list(replica)} | {get_axis(a) for a, _ in offset}
    fusion = gpu_fusion_map(used)
    if not fusion:
        return list(shard), list(replica), list(offset)

    def move(it: Iter) -> Iter:
        if it.axis not in fusion:
            return it
        axis, scale = fusion[it.axis]
        return Iter(it.extent, mul(it.stride, scale), axis)

    offs: dict[str, Value] = {}
    for name, value in offset:
        axis, scale = fusion.get(get_axis(name), (get_axis(name), 1))
        offs[axis.name] = add(offs.get(axis.name, 0), mul(value, scale))
    return [move(it) for it in shard], [move(it) for it in replica], list(offs.items())
