"""Sparse iterations: `with T.sp_iter([I, J, K], "SRS", "spmm") as [i, j, k]:`.

A sparse iteration runs its body once per point of the iteration space of its axes, in the
order written: a dense axis (or an attached axis whose parent is not iterated before it, here
or by an enclosing iteration) over its whole length, an attached axis over the positions stored
under the current position of its parent (iterated before it in this iteration, or else by the
innermost enclosing iteration that iterates it). Variables are bound to *coordinates*; an
access `A[i, j]` to a sparse buffer reads the element stored at those coordinates (a
structural zero reads 0).

`init` runs once per point of the spatial variables before the reduction it starts: for each
binding of the variables before the first reduction variable, over every binding of the
spatial variables after it (which must not depend on a reduction variable), then the whole
rest of the iteration runs. So an empty reduction leaves the init value, not garbage.

`fused` lists runs of consecutive variables iterated as one loop (`T.fuse(I, J)`, or the
`sparse_fuse` schedule): they visit the same points in the same order, so the meaning does
not change; only the lowering does.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir.expr import Var
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import Node
from tirc.ir.sparse.axis import Axis
from tirc.ir.stmt import IterKind, Stmt


@dataclass(frozen=True)
class SpIterVar(Node):
    """One variable of a sparse iteration, over `axis`, spatial or reduction. With `attach`
    (`T.attach(axis, P)`), `axis` (attached to a dense axis as long as `P`) runs under the
    *coordinate* of the earlier variable iterating `P`: the rows of a transposed matrix under
    the current column, for instance."""

    var: Var
    axis: Axis
    kind: IterKind
    attach: Axis | None = None


@dataclass(frozen=True)
class SparseIteration(Stmt):
    """See the module docstring."""

    name: str
    sp_iter_vars: tuple[SpIterVar, ...]
    body: Stmt
    init: Stmt | None = None
    fused: tuple[tuple[int, ...], ...] = ()
    annotations: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def kinds(self) -> str:
        return "".join(v.kind.value for v in self.sp_iter_vars)

    def fused_group(self, k: int) -> tuple[int, ...] | None:
        """The fused run that variable `k` belongs to, if any."""
        for group in self.fused:
            if k in group:
                return group
        return None


def parent_axis(iv: SpIterVar) -> Axis | None:
    """The axis whose variable gives `iv` its rows: the one it is attached to by `T.attach`,
    else its axis's parent."""
    return iv.attach if iv.attach is not None else iv.axis.parent


def iterated_parent(it: SparseIteration, k: int) -> int | None:
    """The index of the variable iterating the parent axis of variable `k`'s axis (or the axis
    `T.attach` names), when that variable comes before `k`; None when `k` iterates its axis on
    its own (dense or detached)."""
    parent = parent_axis(it.sp_iter_vars[k])
    if parent is None:
        return None
    for q in range(k):
        if it.sp_iter_vars[q].axis is parent:
            return q
    return None
