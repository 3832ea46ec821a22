"""Redistribution plans: applying a plan's collectives (with their numpy meaning) to every
device's part of a tensor gives exactly the parts of the target placement."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tirc.ir.dist import numpy_collectives
from tirc.ir.dist.mesh import DeviceMesh
from tirc.ir.dist.placement import Owned, Partial, Placement, parse_placement
from tirc.ir.dist.simulate import gather, scatter
from tirc.passes.dist.plan import PlanError, plan

MESH = DeviceMesh((2, 3))
ITEMS = ["R", "S[0]", "S[1]", "P", "P[max]", "O[1]"]


def _valid(items: tuple[str, str]) -> bool:
    return not (items[0] == items[1] and items[0].startswith("S"))


def _apply(parts: dict, steps: list) -> dict:
    for st_ in steps:
        a = st_.mesh_axis
        out = dict(parts)
        for key in {c[:a] + c[a + 1:] for c in parts}:
            members = [key[:a] + (k,) + key[a:] for k in range(MESH.shape[a])]
            for m, v in zip(members, numpy_collectives.run(st_.op, [parts[m] for m in members],
                                                           st_.attrs)):
                out[m] = v
        parts = out
    return parts


@settings(max_examples=120, deadline=None)
@given(st.tuples(st.sampled_from(ITEMS), st.sampled_from(ITEMS)).filter(_valid),
       st.tuples(st.sampled_from([i for i in ITEMS if not i.startswith("P")]),
                 st.sampled_from([i for i in ITEMS if not i.startswith("P")])).filter(_valid))
def test_plans_reach_the_target_parts(src_items: tuple, dst_items: tuple) -> None:
    rng = np.random.default_rng(0)
    whole = rng.integers(-5, 5, (5, 7)).astype(np.float64)
    src, dst = parse_placement(", ".join(src_items)), parse_placement(", ".join(dst_items))
    devices = [MESH.coords(r) for r in range(MESH.size)]
    parts = {c: scatter(whole, src, MESH, c) for c in devices}
    if any(isinstance(i, Partial) and i.op != "sum" for i in src.items):
        parts = _partial_values(whole, src)
    got = _apply(parts, plan(src, dst))
    assert np.array_equal(gather(got, dst, MESH), whole)
    for c in devices:
        owner = all(not isinstance(it, Owned) or it.coord == k for it, k in zip(dst.items, c))
        if owner:
            np.testing.assert_array_equal(got[c], scatter(whole, dst, MESH, c))


def _partial_values(whole: np.ndarray, src: Placement) -> dict:
    """Parts whose max/min over a partial axis is `whole` (zeros would not be)."""
    out = {}
    for r in range(MESH.size):
        c = MESH.coords(r)
        base = scatter(whole, Placement(tuple(
            parse_placement("R").items[0] if isinstance(i, Partial) else i
            for i in src.items)), MESH, c)
        shift = 0.0
        for it, k in zip(src.items, c):
            if isinstance(it, Partial) and it.op in ("max", "min") and k != 0:
                shift += -100.0 if it.op == "max" else 100.0
            elif isinstance(it, Partial) and it.op == "sum" and k != 0:
                base = np.zeros_like(base)
        out[c] = base + shift
    return out


def test_plan_steps_in_order() -> None:
    steps = plan(parse_placement("P, S[0]"), parse_placement("S[0], R"))
    assert [(s.op, s.mesh_axis, s.attrs) for s in steps] == [
        ("ccl.allgather", 1, {"axis": 0}), ("ccl.reduce_scatter", 0, {"op_type": "sum", "axis": 0})]
    steps = plan(parse_placement("S[1], S[0]"), parse_placement("S[0], S[1]"))
    assert [s.op for s in steps] == ["ccl.allgather", "ccl.all_to_all", "ccl.shard"]


def test_a_replicated_value_cannot_become_partial() -> None:
    with pytest.raises(PlanError, match="cannot become partial"):
        plan(parse_placement("R"), parse_placement("P"))
