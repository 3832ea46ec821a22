"""Placements as Axe layouts over device axes, and back.

The placement `S[1]` of a (128, 256) tensor on a mesh whose axis `d0` has 2 devices is the
layout `S[(128, 2, 128):(128, 1@d0, 1)]`: the column index splits into a device coordinate on
`d0` and a local column, and each device stores its (128, 128) shard row-major. `R` on an
axis adds the replica `R[2:1@d0]`; `O[k]` adds the offset `k@d0`. So sharding over a mesh is
the same mechanism as tiling over threads (LAYOUTS.md), and a placement can be written either
way in `R.DTensor(..., "mesh[0]", ...)`. A partial value (`P`) and an uneven split have no
exact layout: `to_layout` says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.dist.mesh import DeviceMesh
from tirc.ir.dist.placement import Item, Owned, Partial, Placement, PlacementError, Replicate, Shard
from tirc.ir.layout import Iter, LayoutError, TileLayout, get_axis


def to_layout(shape: Sequence[int], placement: Placement, mesh: DeviceMesh) -> TileLayout:
    """The Axe layout of a static-shape tensor placed on `mesh`."""
    placement.check(len(shape), mesh.ndim)
    split = placement.sharded_dims()
    local = list(shape)
    for d, axis in split.items():
        p = mesh.shape[axis]
        if shape[d] % p:
            raise LayoutError(f"dimension {d} ({shape[d]}) splits unevenly over mesh axis "
                              f"'{mesh.axis_names[axis]}' ({p}); an uneven split has no exact "
                              "Axe layout")
        local[d] = shape[d] // p
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * local[d + 1]
    shard: list[Iter] = []
    for d, n in enumerate(shape):
        if d in split:
            shard.append(Iter(mesh.shape[split[d]], 1, mesh.axis_names[split[d]]))
        shard.append(Iter(local[d], strides[d]))
    replica: list[Iter] = []
    offset: list[tuple[str, int]] = []
    for axis, item in enumerate(placement.items):
        name = mesh.axis_names[axis]
        if isinstance(item, Replicate):
            replica.append(Iter(mesh.shape[axis], 1, name))
        elif isinstance(item, Owned):
            offset.append((name, item.coord))
        elif isinstance(item, Partial):
            raise LayoutError(f"a partial value ({item}) on mesh axis '{name}' has no layout: "
                              "it says how values combine, not where they are")
    if not shard:
        shard = [Iter(1, 1)]
    return TileLayout(shard, replica, offset)


def from_layout(layout: TileLayout, shape: Sequence[int], mesh: DeviceMesh) -> Placement:
    """The placement an Axe layout over `mesh`'s axes describes; LayoutError when the layout
    is not one (a device axis inside a dimension, non-row-major storage, a mesh axis it does
    not place the tensor on)."""
    grouped, seps = layout.group(list(shape))
    items: list[Item | None] = [None] * mesh.ndim

    def mesh_axis(name: str, what: str) -> int:
        """The position of mesh axis `name`; a LayoutError naming `what` otherwise."""
        if name not in mesh.axis_names:
            raise LayoutError(f"{what} is on axis '{name}', which is not an axis of the mesh "
                              f"(axes: {', '.join(mesh.axis_names)})")
        return mesh.axis_names.index(name)

    for d in range(len(shape)):
        for k, it in enumerate(grouped.shard[seps[d]:seps[d + 1]]):
            if not it.axis.is_device:
                continue
            a = mesh_axis(it.axis.name, f"dimension {d}'s iter {it}")
            if k != 0 or it.stride != 1 or it.extent != mesh.shape[a]:
                raise LayoutError(f"dimension {d}: the device iter {it} must be the outermost "
                                  f"iter of its dimension, with stride 1 and extent "
                                  f"{mesh.shape[a]} (the size of mesh axis '{it.axis.name}')")
            if items[a] is not None:
                raise LayoutError(f"mesh axis '{it.axis.name}' is used twice by the layout")
            items[a] = Shard(d)
    for it in layout.replica:
        a = mesh_axis(it.axis.name, f"the replica {it}")
        if items[a] is not None or it.stride != 1 or it.extent != mesh.shape[a]:
            raise LayoutError(f"the replica {it} must cover mesh axis '{it.axis.name}' once "
                              f"(extent {mesh.shape[a]}, stride 1)")
        items[a] = Replicate()
    for name, value in layout.offset:
        if not get_axis(name).is_device:
            continue
        a = mesh_axis(name, "an offset")
        if items[a] is not None or not isinstance(value, int) or \
                not 0 <= value < mesh.shape[a]:
            raise LayoutError(f"the offset {value}@{name} must be a coordinate of mesh axis "
                              f"'{name}' the layout does not otherwise use")
        items[a] = Owned(value)
    missing = [mesh.axis_names[a] for a, it in enumerate(items) if it is None]
    if missing:
        raise LayoutError(f"the layout does not place the tensor on mesh axis "
                          f"'{missing[0]}' (add R[{mesh.shape[mesh.axis_names.index(missing[0])]}"
                          f":1@{missing[0]}] to replicate it)")
    placement = Placement(tuple(it for it in items if it is not None))
    try:
        expected = to_layout(shape, placement, mesh)
    except (LayoutError, PlacementError) as exc:
        raise LayoutError(str(exc)) from None
    if expected != layout:
        raise LayoutError(f"the layout places the tensor as \"{placement}\" but does not store "
                          f"each device's part row-major (expected {expected})")
    return placement
