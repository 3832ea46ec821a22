"""Graph-level IR (Relax-like): struct info, dataflow bindings, operator calls, functions."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import field
from typing import Any

from tirc.ir.dtype import DType
from tirc.ir.expr import PrimExpr
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import IdentityNode, Node

# ---- struct info: the static type and shape of a graph value -----------------------------


@dataclass(frozen=True)
class StructInfo(Node):
    """Base of struct info."""


@dataclass(frozen=True)
class TensorSInfo(StructInfo):
    """`R.Tensor(shape, dtype)`; shape None means unknown rank-`ndim` (-1: unknown rank)."""

    shape: tuple[PrimExpr, ...] | None
    dtype: DType | None
    ndim: int = -1


@dataclass(frozen=True)
class SparseTensorSInfo(StructInfo):
    """`R.SparseTensor((m, n), "float32", nnz=nnz, format="csr")`: a sparse matrix.

    `shape` is its logical (dense) shape; `nnz` the number of stored elements (of stored
    blocks for "bsr"), usually a symbolic size. "csr": `data (nnz,)`, `indptr (m + 1,)`,
    `indices (nnz,)`; "bsr" with `block=(bm, bn)`: `data (nnz, bm, bn)`, `indptr (m/bm + 1,)`,
    `indices (nnz,)` (block columns), `m` and `n` multiples of the block. Index arrays have
    `index_dtype` (int32 by default).
    """

    shape: tuple[PrimExpr, ...]
    dtype: DType
    nnz: PrimExpr
    format: str = "csr"
    block: tuple[int, ...] = ()
    index_dtype: DType = DType("int", 32)

    @property
    def block_rows(self) -> int:
        return self.block[0] if self.block else 1

    @property
    def block_cols(self) -> int:
        return self.block[1] if self.block else 1


SPARSE_FORMATS = ("csr", "bsr")


@dataclass(frozen=True)
class TupleSInfo(StructInfo):
    """`R.Tuple(...)`."""

    fields: tuple[StructInfo, ...]


@dataclass(frozen=True)
class ShapeSInfo(StructInfo):
    """`R.Shape([...])`: a shape value."""

    values: tuple[PrimExpr, ...] | None
    ndim: int = -1


@dataclass(frozen=True)
class PrimSInfo(StructInfo):
    """`R.Prim("int64")`: a scalar; `R.Prim(value=n)` also says which value it holds."""

    dtype: DType
    value: Any = None  # a PrimExpr, or None when unknown


@dataclass(frozen=True)
class ObjectSInfo(StructInfo):
    """`R.Object`: anything."""


# ---- expressions -------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphExpr(Node):
    """Base of graph-level expressions."""


@dataclass(frozen=True, eq=False)
class GVar(IdentityNode, GraphExpr):
    """A graph variable (a parameter or a binding); identity-compared."""

    name: str = ""
    struct_info: StructInfo | None = None
    is_dataflow: bool = False

    def __repr__(self) -> str:
        return f"GVar({self.name})"

    __hash__ = IdentityNode.__hash__
    __eq__ = IdentityNode.__eq__


@dataclass(frozen=True)
class GlobalVar(GraphExpr):
    """A reference to a function of the module by name (`Module.kernel`, `cls.kernel`)."""

    name: str


@dataclass(frozen=True)
class ExternFunc(GraphExpr):
    """A C symbol called through `R.call_dps_packed`."""

    symbol: str


@dataclass(frozen=True)
class Constant(GraphExpr):
    """A constant tensor `R.const(value, dtype)`: a scalar (0-d), or nested tuples of numbers,
    one level per dimension (`R.const([[1.0, 2.0]], "float32")`, shape `(1, 2)`)."""

    value: float | int | bool | tuple[Any, ...]
    dtype: DType

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape: () for a scalar, else the lengths of the nested tuples."""
        out: list[int] = []
        v: Any = self.value
        while isinstance(v, tuple):
            out.append(len(v))
            v = v[0] if v else None
        return tuple(out)


@dataclass(frozen=True)
class PrimValue(GraphExpr):
    """A scalar loop-level expression used as a graph value (`R.prim_value(n)`)."""

    value: PrimExpr


@dataclass(frozen=True)
class StringValue(GraphExpr):
    value: str


@dataclass(frozen=True)
class ShapeExpr(GraphExpr):
    """`R.shape([...])` or a shape literal in an operator argument."""

    values: tuple[PrimExpr, ...]


@dataclass(frozen=True)
class Tuple(GraphExpr):
    fields: tuple[GraphExpr, ...]


@dataclass(frozen=True)
class TupleGetItem(GraphExpr):
    tuple_value: GraphExpr
    index: int


@dataclass(frozen=True)
class GCall(GraphExpr):
    """An operator call: `op` is an operator name ("add", "nn.softmax", "call_tir", ...).

    `attrs` holds keyword arguments (axis, keepdims, ...); `sinfo_args` the `out_sinfo` of
    cross-level calls.
    """

    op: str
    args: tuple[GraphExpr, ...]
    attrs: dict[str, Any] = field(default_factory=dict, hash=False)
    sinfo_args: tuple[StructInfo, ...] = ()


# ---- bindings and functions --------------------------------------------------------------


@dataclass(frozen=True)
class Binding(Node):
    """Base of bindings."""

    var: GVar


@dataclass(frozen=True)
class VarBinding(Binding):
    """`var = value`."""

    value: GraphExpr


@dataclass(frozen=True)
class MatchCast(Binding):
    """`var = R.match_cast(value, struct_info)`: checks and binds shapes at run time."""

    value: GraphExpr
    struct_info: StructInfo


@dataclass(frozen=True)
class BindingBlock(Node):
    """Bindings in order; a dataflow block (`with R.dataflow():`) has no side effects."""

    bindings: tuple[Binding, ...]
    is_dataflow: bool = False
    outputs: tuple[GVar, ...] = ()


@dataclass(frozen=True)
class SeqExpr(GraphExpr):
    """Blocks of bindings, then the returned value."""

    blocks: tuple[BindingBlock, ...]
    body: GraphExpr


@dataclass(frozen=True)
class If(GraphExpr):
    """`if cond: ... else: ...` on an `R.Prim("bool")` value, as Relax's `If`.

    Each branch is a SeqExpr whose body is the branch's result; the `If` is the value of a
    VarBinding whose variable holds the result of the branch that ran.
    """

    cond: GraphExpr
    true_branch: SeqExpr
    false_branch: SeqExpr

    @property
    def branches(self) -> tuple[SeqExpr, SeqExpr]:
        """The true branch, then the false branch."""
        return (self.true_branch, self.false_branch)


@dataclass(frozen=True)
class Function(Node):
    """A graph-level function (`@R.function`)."""

    name: str
    params: tuple[GVar, ...]
    body: SeqExpr
    ret_struct_info: StructInfo | None = None
    attrs: dict[str, Any] = field(default_factory=dict, hash=False)


def with_branches(b: Binding, branch: Callable[[SeqExpr], SeqExpr]) -> Binding:
    """`b` with `branch` applied to each branch of its `If` value (`b` itself when its value is
    not an `if` or neither branch changed): how a pass works inside the branches."""
    value = getattr(b, "value", None)
    if not isinstance(value, If):
        return b
    t, f = branch(value.true_branch), branch(value.false_branch)
    if t is value.true_branch and f is value.false_branch:
        return b
    return dataclasses.replace(b, value=dataclasses.replace(value, true_branch=t,
                                                            false_branch=f))
