"""Sparse axes: the composable pieces of a sparse format (SparseTIR's axis model).

An axis is one dimension of a sparse tensor. It has a coordinate range (`length`) and a set of
*positions*, the places where its stored elements sit in flat storage:

- `dense_fixed(length)`: every coordinate is stored; position = coordinate.
- `dense_variable(parent, (max_length, nnz), indptr)`: under parent position p, the coordinates
  0 .. indptr[p+1]-indptr[p]-1 are stored at positions indptr[p] + c (ragged rows).
- `sparse_fixed(parent, (length, nnz_cols), indices)`: under parent position p, `nnz_cols`
  coordinates indices[p*nnz_cols + t] at positions p*nnz_cols + t (ELL).
- `sparse_variable(parent, (length, nnz), (indptr, indices))`: under parent position p, the
  coordinates indices[q] for q in indptr[p] .. indptr[p+1]-1 at positions q (CSR).

Axes are definitions (identity-compared, like variables); `indptr`/`indices` are ordinary
one-dimensional buffers, parameters of the function.
"""

from __future__ import annotations

import enum
from dataclasses import field

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT32, DType
from tirc.ir.expr import IntImm, PrimExpr, binop
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import IdentityNode


class AxisKind(enum.Enum):
    """The four axis kinds of SparseTIR, by their constructor names."""

    DENSE_FIXED = "dense_fixed"
    DENSE_VARIABLE = "dense_variable"
    SPARSE_FIXED = "sparse_fixed"
    SPARSE_VARIABLE = "sparse_variable"


@dataclass(frozen=True, eq=False)
class Axis(IdentityNode):
    """One axis. `nnz` is the total number of positions of a variable axis, or the number of
    stored coordinates per parent position (`nnz_cols`) of a sparse_fixed one."""

    name: str = ""
    kind: AxisKind = AxisKind.DENSE_FIXED
    length: PrimExpr = field(default_factory=lambda: IntImm(0))
    parent: Axis | None = None
    nnz: PrimExpr | None = None
    indptr: Buffer | None = None
    indices: Buffer | None = None
    idtype: DType = INT32

    __hash__ = IdentityNode.__hash__
    __eq__ = IdentityNode.__eq__

    def __repr__(self) -> str:
        return f"Axis({self.name}: {self.kind.value})"

    @property
    def is_sparse(self) -> bool:
        """Coordinates come from an `indices` buffer."""
        return self.kind in (AxisKind.SPARSE_FIXED, AxisKind.SPARSE_VARIABLE)

    @property
    def is_variable(self) -> bool:
        """Positions per parent position come from an `indptr` buffer."""
        return self.kind in (AxisKind.DENSE_VARIABLE, AxisKind.SPARSE_VARIABLE)

    @property
    def attached(self) -> bool:
        return self.parent is not None


def ancestors(axis: Axis) -> list[Axis]:
    """The chain of parents of `axis`, root first, `axis` last."""
    chain = [axis]
    while chain[0].parent is not None:
        chain.insert(0, chain[0].parent)
    return chain


def num_positions(axis: Axis) -> PrimExpr:
    """How many stored positions `axis` has over all positions of its parents."""
    if axis.kind == AxisKind.DENSE_FIXED or axis.parent is None:
        return axis.length
    if axis.kind == AxisKind.SPARSE_FIXED:
        assert axis.nnz is not None
        return binop("mul", num_positions(axis.parent), axis.nnz)
    assert axis.nnz is not None
    return axis.nnz


def row_range(axis: Axis, parent_pos: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """The positions [begin, end) of `axis` under the parent position `parent_pos`."""
    if axis.kind == AxisKind.SPARSE_FIXED:
        assert axis.nnz is not None
        begin = binop("mul", parent_pos, axis.nnz)
        return begin, binop("add", begin, axis.nnz)
    assert axis.indptr is not None
    return (axis.indptr.vload(parent_pos), axis.indptr.vload(binop("add", parent_pos, 1)))
