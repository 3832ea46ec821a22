"""Redistribution plans: the collectives that take a tensor from one placement to another.

Per mesh axis, from one entry to another:

    S[d] -> R      all-gather along d          P -> R      all-reduce
    S[d] -> S[e]   all-to-all (split e, concat d)   P -> S[d]   reduce-scatter along d
    R -> S[d]      shard: keep the local part, nothing moves
    O[k] -> R      broadcast from coordinate k     R -> O[k]   nothing (the others drop it)
    O[k] -> S[d]   scatter from coordinate k

Axes whose target is not a split go first (gathers and reductions), then the splits, each
once no other axis splits its dimension (axes that swap dimensions gather one first), so no
dimension is ever split over two axes at once. A step that cannot be made (a replicated value
becoming partial) is a PlanError.
"""

from __future__ import annotations

from dataclasses import field
from tirc.ir.lean_dataclass import dataclass
from typing import Any

from tirc.ir.dist.placement import Item, Owned, Partial, Placement, Replicate, Shard

REPLICATE = Replicate()


class PlanError(ValueError):
    """A redistribution tirc cannot make."""


@dataclass(frozen=True)
class Step:
    """One collective of a plan, on mesh axis `mesh_axis`, taking `before` to `after`."""

    op: str
    mesh_axis: int
    attrs: dict[str, Any] = field(default_factory=dict)
    before: Placement = field(default_factory=lambda: Placement(()))
    after: Placement = field(default_factory=lambda: Placement(()))


def plan(src: Placement, dst: Placement) -> list[Step]:
    """The collectives that turn a tensor placed as `src` into one placed as `dst`."""
    cur = src
    steps: list[Step] = []

    def go(axis: int, target: Item) -> None:
        """Append the steps that take mesh axis `axis` to `target`."""
        nonlocal cur
        for op, attrs, item in _transition(cur[axis], target):
            after = cur.replace(axis, item)
            if op:
                steps.append(Step(op, axis, attrs, cur, after))
            cur = after

    for a in range(len(dst)):
        u, t = cur[a], dst[a]
        if u == t or isinstance(t, Shard):
            continue
        go(a, t)
    while any(cur[a] != dst[a] for a in range(len(dst))):
        progress = False
        for a in range(len(dst)):
            t = dst[a]
            if cur[a] == t or any(b != a and cur[b] == t for b in range(len(dst))):
                continue  # another axis still splits that dimension: it moves first
            go(a, t)
            progress = True
        if not progress:  # axes swapping dimensions: gather one, then split it again
            go(next(a for a in range(len(dst)) if cur[a] != dst[a]), REPLICATE)
    return steps


def _transition(u: Item, t: Item) -> list[tuple[str, dict[str, Any], Item]]:
    """(operator, attributes, entry after) for each step from `u` to `t` on one axis."""
    if u == t:
        return []
    if isinstance(u, Owned) and isinstance(t, Shard):
        return [("ccl.scatter", {"root": u.coord, "axis": t.dim}, t)]
    if isinstance(u, Owned):
        return [("ccl.broadcast", {"root": u.coord}, REPLICATE)] + _transition(REPLICATE, t)
    if isinstance(u, Partial):
        if isinstance(t, Shard):
            return [("ccl.reduce_scatter", {"op_type": u.op, "axis": t.dim}, t)]
        return [("ccl.allreduce", {"op_type": u.op}, REPLICATE)] + _transition(REPLICATE, t)
    if isinstance(u, Shard):
        if isinstance(t, Shard):
            return [("ccl.all_to_all", {"split_axis": t.dim, "concat_axis": u.dim}, t)]
        return [("ccl.allgather", {"axis": u.dim}, REPLICATE)] + _transition(REPLICATE, t)
    if isinstance(t, Shard):
        return [("ccl.shard", {"axis": t.dim}, t)]
    if isinstance(t, Owned):
        return [("", {}, t)]
    raise PlanError(f"a replicated value cannot become partial ({t}); only a contraction "
                    "or a reduction over a split dimension leaves one")
