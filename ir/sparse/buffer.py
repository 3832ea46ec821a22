"""Sparse buffers: a tensor stored over sparse axes (`T.match_sparse_buffer(a, (I, J), ...)`).

A sparse buffer is a Buffer whose `shape` is its logical (dense) shape, one entry per axis, and
whose accesses are written in coordinates. Its storage is flat: the axes split into *groups*,
each a root axis followed by the axes attached to it in a chain (each one's parent is the axis
before it); a group is one storage dimension whose extent is the number of positions of its
last axis. An attached axis whose parent is not right before it in the buffer stands for its
*detached* dense form (SparseTIR's `J_detach`, inferred when not written): every coordinate in
its length is stored. So CSR (I, J) stores (nnz,), BSR (I, J, BI, BJ) stores (nnzb, BI, BJ),
a dense (J, K) stores (n, K).
"""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.sparse.axis import Axis, num_positions


@dataclass(frozen=True, eq=False)
class SparseBuffer(Buffer):
    """A buffer over sparse axes; identity-compared like every buffer."""

    axes: tuple[Axis, ...] = ()

    __hash__ = Buffer.__hash__
    __eq__ = Buffer.__eq__

    def __repr__(self) -> str:
        return f"SparseBuffer({self.name}: {self.dtype}[{', '.join(a.name for a in self.axes)}])"


def axis_groups(axes: tuple[Axis, ...]) -> list[list[int]]:
    """The storage groups of a buffer's axes, as lists of axis positions in the buffer."""
    groups: list[list[int]] = []
    for k, axis in enumerate(axes):
        if groups and axis.parent is not None and axis.parent is axes[groups[-1][-1]]:
            groups[-1].append(k)
        else:
            groups.append([k])
    return groups


def is_detached(axes: tuple[Axis, ...], k: int) -> bool:
    """Whether axis `k` of a buffer is stored in its detached (dense) form."""
    axis = axes[k]
    return axis.parent is not None and not (k > 0 and axes[k - 1] is axis.parent)


def storage_shape(axes: tuple[Axis, ...]) -> tuple[PrimExpr, ...]:
    """The flat storage shape of a buffer over `axes` (one extent per group)."""
    dims: list[PrimExpr] = []
    for group in axis_groups(axes):
        last = axes[group[-1]]
        dims.append(last.length if len(group) == 1 else num_positions(last))
    return tuple(dims)


def is_dense(buf: SparseBuffer) -> bool:
    """Every axis stored densely: the storage is the logical shape."""
    return all(len(g) == 1 for g in axis_groups(buf.axes))
