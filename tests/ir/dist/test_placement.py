"""Device meshes, placements, balanced shard sizes, and placements as Axe layouts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tirc.ir.dist.axe import from_layout, to_layout
from tirc.ir.dist.mesh import DeviceMesh, MeshError, lookup_mesh, parse_mesh_ref, parse_mesh_shape
from tirc.ir.dist.placement import (
    Owned,
    Partial,
    Placement,
    PlacementError,
    Replicate,
    Shard,
    parse_placement,
)
from tirc.ir.dist.shard_shape import local_slices, shard_extent, shard_offset, shard_sizes
from tirc.ir.layout import LayoutError, parse_layout


@pytest.mark.parametrize("text,items", [
    ("S[1]", (Shard(1),)), ("R", (Replicate(),)), ("P", (Partial("sum"),)),
    ("P[max]", (Partial("max"),)), ("O[1]", (Owned(1),)),
    ("S[0], R", (Shard(0), Replicate())), ("R,S[1]", (Replicate(), Shard(1))),
])
def test_placement_parses_and_prints(text: str, items: tuple) -> None:
    p = parse_placement(text)
    assert p.items == items
    assert parse_placement(str(p)) == p


def test_negative_dimension_counts_from_the_end() -> None:
    assert parse_placement("S[-1]", ndim=3).items == (Shard(2),)


@pytest.mark.parametrize("text,message", [
    ("Q", "each mesh axis takes"), ("P[avg]", "reduces by"), ("S[x]", "each mesh axis takes"),
])
def test_bad_placements(text: str, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        parse_placement(text)


@pytest.mark.parametrize("text,ndim,mesh,message", [
    ("S[2]", 2, 1, "splits dimension 2 of a tensor of rank 2"),
    ("S[0], S[0]", 2, 2, "over two mesh axes"),
    ("R, R", 2, 1, "has 2 entries, but the mesh has 1 axis"),
])
def test_placement_must_fit(text: str, ndim: int, mesh: int, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        parse_placement(text).check(ndim, mesh)


def test_mesh_coordinates_are_row_major() -> None:
    mesh = DeviceMesh((2, 3), axis_names=("dp", "tp"))
    assert [mesh.coords(r) for r in range(6)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1),
                                                   (1, 2)]
    assert all(mesh.rank(mesh.coords(r)) == r for r in range(6))
    assert mesh.axis_index("tp") == 1 and mesh.size == 6
    assert mesh.text() == 'R.device_mesh((2, 3), I.Range(0, 6), axes=("dp", "tp"))'
    with pytest.raises(MeshError, match="no axis 'pp'"):
        mesh.axis_index("pp")
    with pytest.raises(MeshError, match="no axis 2"):
        mesh.axis_index(2)


def test_mesh_references() -> None:
    infos = {"mesh": (DeviceMesh((2,)),)}
    assert parse_mesh_ref("mesh[0]") == ("mesh", 0)
    assert lookup_mesh(infos, "mesh[0]").shape == (2,)
    with pytest.raises(MeshError, match="declares 1 device mesh"):
        lookup_mesh(infos, "mesh[1]")
    with pytest.raises(MeshError, match="no device mesh 'grid'"):
        lookup_mesh(infos, "grid[0]")
    with pytest.raises(MeshError, match="named as"):
        parse_mesh_ref("mesh")
    assert parse_mesh_shape("2x2") == (2, 2) and parse_mesh_shape("4") == (4,)


@given(st.integers(0, 40), st.integers(1, 6))
def test_balanced_split_is_numpys_array_split(n: int, p: int) -> None:
    parts = np.array_split(np.arange(n), p)
    assert shard_sizes(n, p) == [len(a) for a in parts]
    for c, a in enumerate(parts):
        if len(a):
            assert shard_offset(n, p, c) == a[0]
        assert shard_extent(n, p, c) == len(a)


placements_2d = st.tuples(st.sampled_from(["R", "S[0]", "S[1]", "O[1]"]),
                          st.sampled_from(["R", "S[0]", "S[1]", "O[0]"])).filter(
    lambda t: not (t[0] == t[1] and t[0].startswith("S")))


@settings(max_examples=40, deadline=None)
@given(placements_2d)
def test_placement_layouts_place_each_element_where_the_shards_are(items: tuple) -> None:
    """The Axe layout of a placement maps each element to the devices that hold it (by the
    shard slices) and to its row-major offset in the local shard."""
    mesh = DeviceMesh((2, 2))
    shape = (4, 6)
    placement = parse_placement(", ".join(items))
    layout = to_layout(shape, placement, mesh)
    assert from_layout(parse_layout(str(layout)), shape, mesh) == placement
    holders: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for r in range(mesh.size):
        coords = mesh.coords(r)
        sl = local_slices(shape, placement, mesh, coords)
        owned = all(not isinstance(it, Owned) or it.coord == c
                    for it, c in zip(placement.items, coords))
        for i in range(sl[0].start, sl[0].stop):
            for j in range(sl[1].start, sl[1].stop):
                if owned:
                    local = (i - sl[0].start) * (sl[1].stop - sl[1].start) + j - sl[1].start
                    holders.setdefault((i, j), set()).add((coords, local))  # type: ignore[arg-type]
    for (i, j), want in holders.items():
        got = {((p["d0"], p["d1"]), p.get("m", 0)) for p in
               (dict(place) for place in layout.image(i, j, shape=shape))}
        assert got == want


def test_layout_placements_in_both_notations() -> None:
    mesh = DeviceMesh((2,))
    assert str(to_layout((128, 256), parse_placement("S[1]"), mesh)) == \
        "S[(128, 2, 128):(128, 1@d0, 1)]"
    assert str(to_layout((8,), parse_placement("R"), mesh)) == "S[8:1] + R[2:1@d0]"


@pytest.mark.parametrize("text,message", [
    ("S[(128, 2, 128):(128, 1@d1, 1)]", "not an axis of the mesh"),
    ("S[(2, 64, 256):(1@d0, 256, 1)] + R[2:1@d0]", "once"),
    ("S[(128, 128, 2):(128, 1, 1@d0)]", "outermost iter"),
    ("S[(128, 2, 128):(1, 1@d0, 128)]", "row-major"),
    ("S[(128, 256):(256, 1)]", "does not place the tensor on mesh axis 'd0'"),
])
def test_layouts_that_are_not_placements(text: str, message: str) -> None:
    DeviceMesh((2,), axis_names=("d1",))  # d1 is a device axis, but not this mesh's
    with pytest.raises(LayoutError, match=message):
        from_layout(parse_layout(text), (128, 256), DeviceMesh((2,)))


def test_partial_and_uneven_have_no_layout() -> None:
    with pytest.raises(LayoutError, match="partial"):
        to_layout((4, 4), parse_placement("P"), DeviceMesh((2,)))
    with pytest.raises(LayoutError, match="unevenly"):
        to_layout((5, 4), parse_placement("S[0]"), DeviceMesh((2,)))


def test_replicated_placement() -> None:
    assert Placement.replicated(2).is_replicated
    assert parse_placement("S[0], P").has_partial
