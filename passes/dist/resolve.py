"""Choosing how one operator runs on a mesh: which factor each mesh axis splits.

Given the placements its operands arrive with, `resolve` picks, per mesh axis, one factor of
the operator's rule to split (the one whose split operands are largest; a hint from the
consumers breaks ties when no operand is split), the placement every operand must have for
that (split along the factor, whole otherwise; partial operands stay partial when the
operator is linear in them, else are reduced) and the placement of each result.
"""

from __future__ import annotations

from collections.abc import Sequence
from tirc.ir.lean_dataclass import dataclass

from tirc.ir.dist.mesh import DeviceMesh
from tirc.ir.dist.placement import Item, Owned, Partial, Placement, Replicate, Shard
from tirc.ir.dist.shard_shape import is_even
from tirc.ir.graph import TensorSInfo
from tirc.ir.ops.sinfo_util import const_dim
from tirc.passes.dist.rules import Rule

REPLICATE = Replicate()
BIG = 1 << 62


@dataclass
class Resolution:
    """Where each operand must be, where each result will be, and why an operand is made
    whole (for the warning), per operand."""

    operands: list[Placement]
    results: list[Placement]
    why: list[str]


def _size(s: TensorSInfo) -> int:
    """A tensor's bytes (a symbolic dimension counts as large): the weight of a split."""
    n = 1
    for d in s.shape or ():
        c = const_dim(d)
        n *= c if c is not None else 1 << 20
    return n * (s.dtype.bytes if s.dtype is not None else 4)


def resolve(rule: Rule, operands: Sequence[TensorSInfo], placements: Sequence[Placement],
            mesh: DeviceMesh, hint: Placement | None = None,
            splittable: frozenset[int] = frozenset()) -> Resolution:
    """The placements an operator needs and gives. `splittable` lists replicated factors
    that may be split anyway (the operator will be decomposed)."""
    n_ops, n_res = len(operands), len(rule.results)
    targets: list[list[Item]] = [list(p.items) for p in placements]
    results: list[list[Item]] = [[REPLICATE] * mesh.ndim for _ in range(n_res)]
    why = [""] * n_ops
    used: set[int] = set()
    for a in range(mesh.ndim):
        items: list[Item] = [p[a] for p in placements]
        items = [REPLICATE if isinstance(it, Owned) else it for it in items]
        pops = [it.op if isinstance(it, Partial) else None for it in items]
        keep_partial: str | None = None
        if any(pops):
            res = rule.partial(pops)
            others_split = any(isinstance(it, Shard) for it, p in zip(items, pops) if p is None)
            if res is not None and not others_split:
                keep_partial = res
        f = None
        if keep_partial is None:
            f = _choose(rule, operands, items, mesh, a, used, splittable, why)
            if f is None and hint is not None:
                f = _hinted(rule, operands, hint[a], mesh, a, used, splittable)
        if f is not None:
            used.add(f)
        for i in range(n_ops):
            if keep_partial is not None and pops[i] is not None:
                targets[i][a] = items[i]
                continue
            d = rule.dim_of(rule.operands[i], f) if f is not None else None
            targets[i][a] = Shard(d) if d is not None else REPLICATE
            if isinstance(items[i], Shard) and d is None and not why[i]:
                why[i] = "its operands are split differently"
        for r in range(n_res):
            if keep_partial is not None:
                results[r][a] = Partial(keep_partial)
            elif f is None:
                results[r][a] = REPLICATE
            elif f in rule.reduction:
                results[r][a] = Partial(rule.reduction[f])
            else:
                d = rule.dim_of(rule.results[r], f)
                results[r][a] = Shard(d) if d is not None else REPLICATE
    return Resolution([Placement(tuple(t)) for t in targets],
                      [Placement(tuple(r)) for r in results], why)


def _allowed(rule: Rule, f: int, operands: Sequence[TensorSInfo], mesh: DeviceMesh, a: int,
             used: set[int], splittable: frozenset[int]) -> str:
    """Why factor `f` may not be split over mesh axis `a` ("" when it may)."""
    if f in used:
        return "another mesh axis splits the same dimension"
    if f in rule.replicated and f not in splittable:
        return "the operator needs that dimension whole"
    if f in rule.even_only:
        for s, fs in zip(operands, rule.operands):
            d = rule.dim_of(fs, f)
            if d is not None and s.shape is not None and not is_even(s.shape[d], mesh.shape[a]):
                return "a reshape cannot move an uneven split"
    return ""


def _choose(rule: Rule, operands: Sequence[TensorSInfo], items: Sequence[Item],
            mesh: DeviceMesh, a: int, used: set[int], splittable: frozenset[int],
            why: list[str]) -> int | None:
    """The factor the split operands on mesh axis `a` agree on, the largest winning; records why
    the others must be gathered."""
    weight: dict[int, int] = {}
    for i, it in enumerate(items):
        if not isinstance(it, Shard):
            continue
        f = rule.operands[i][it.dim] if it.dim < len(rule.operands[i]) else None
        if f is None:
            why[i] = "the operator cannot split that dimension"
            continue
        reason = _allowed(rule, f, operands, mesh, a, used, splittable)
        if reason:
            why[i] = reason
            continue
        weight[f] = weight.get(f, 0) + _size(operands[i])
    if not weight:
        return None
    return max(weight, key=lambda f: (weight[f], -f))


def _hinted(rule: Rule, operands: Sequence[TensorSInfo], want: Item, mesh: DeviceMesh, a: int,
            used: set[int], splittable: frozenset[int]) -> int | None:
    """The factor a consumer's wish for the first result asks for, if it may be split."""
    f = None
    if isinstance(want, Shard) and rule.results and want.dim < len(rule.results[0]):
        f = rule.results[0][want.dim]
    elif isinstance(want, Partial):
        f = next((g for g, op in rule.reduction.items() if op == want.op), None)
    if f is None or _allowed(rule, f, operands, mesh, a, used, splittable):
        return None
    if not any(rule.dim_of(fs, f) is not None for fs in rule.operands) and \
            f not in [g for r in rule.results for g in r]:
        return None
    return f
