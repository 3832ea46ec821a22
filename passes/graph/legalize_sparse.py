"""Legalization of `sparse.matmul`: a loop function in SparseTIR's sparse form.

`R.sparse.matmul(A, B)` becomes `R.call_tir` of the kernel SparseTIR writes for SpMM, built
from the formats (axes `I`, `J` = `sparse_variable(I, ...)` over the matrix's `indptr` and
`indices`, the dense `K`; BSR adds the block axes `BI`, `BJ`):

    with T.sp_iter([I, J, K], "SRS", "sparse_matmul") as [i, j, k]:
        with T.init():
            C[i, k] = 0
        C[i, k] = C[i, k] + A[i, j] * B[j, k]

lower-sparse-iterations turns it into loops like any user-written sparse kernel. A size known
at compile time stays a constant; each symbolic one is a scalar parameter, given by call_tir's
`tir_vars`. The kernel is opaque to fusion (`op_pattern` 8): its loops are data dependent.
"""

from __future__ import annotations

from dataclasses import field

from tirc.ir.attrs import NOALIAS, OP_PATTERN
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, cast, const
from tirc.ir.function import PrimFunc
from tirc.ir.graph import GraphExpr, StructInfo
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.registry import OpCall
from tirc.ir.sparse import Axis, AxisKind, SparseBuffer, SparseIteration, SpIterVar
from tirc.ir.stmt import BufferStore, IterKind
from tirc.passes.graph.annotate_op_pattern import OpPattern
from tirc.passes.graph.legalize_table import legalizer, out_tensor

SPARSE_TIR_LEVEL = "sparse_tir_level"


@dataclass
class SparseKernel:
    """A sparse-form loop function under construction: its symbolic sizes become scalar
    parameters (in the index dtype), given by the graph-level values in `tir_vars`."""

    name: str
    idtype: DType
    args: list[GraphExpr] = field(default_factory=list)
    handles: list[Var] = field(default_factory=list)
    buffer_map: dict[Var, Buffer] = field(default_factory=dict)
    scalars: list[Var] = field(default_factory=list)
    tir_vars: list[PrimExpr] = field(default_factory=list)
    body: SparseIteration | None = None

    def size(self, graph_dim: PrimExpr, name: str) -> PrimExpr:
        """A graph dimension in the kernel: a constant, or a scalar parameter (one per
        distinct graph expression)."""
        if isinstance(graph_dim, IntImm):
            return IntImm(graph_dim.value, self.idtype)
        for v, g in zip(self.scalars, self.tir_vars):
            if g == graph_dim:
                return v
        v = Var(name, self.idtype)
        self.scalars.append(v)
        self.tir_vars.append(graph_dim)
        return v

    def param(self, name: str, buf: Buffer, arg: GraphExpr | None) -> Buffer:
        handle = Var(name, HANDLE)
        self.handles.append(handle)
        self.buffer_map[handle] = buf
        if arg is not None:
            self.args.append(arg)
        return buf

    def array(self, name: str, size: PrimExpr) -> Buffer:
        return Buffer(name=name, shape=(size,), dtype=self.idtype, data=Var(name, HANDLE))

    def build(self) -> tuple[PrimFunc, list[PrimExpr]]:
        """The loop function, and the graph-level values of its scalar parameters."""
        assert self.body is not None
        attrs = {NOALIAS: True, SPARSE_TIR_LEVEL: 2,
                 OP_PATTERN: int(OpPattern.OPAQUE)}
        func = PrimFunc(self.name, (*self.handles, *self.scalars), dict(self.buffer_map),
                        self.body, attrs)
        return func, list(self.tir_vars)


def _sparse_buffer(name: str, axes: tuple[Axis, ...], dt: DType) -> SparseBuffer:
    return SparseBuffer(name=name, shape=tuple(a.length for a in axes), dtype=dt,
                        data=Var(name, HANDLE), axes=axes)


@legalizer("sparse.matmul")
def sparse_matmul(oc: OpCall, out: StructInfo) -> SparseKernel:
    """SpMM (or SpMV for a vector) over a CSR or BSR matrix; BSR reads and writes the dense
    operands at element coordinates `j * bn + bj`, `i * bm + bi`."""
    s = oc.sparse("a")
    b_info, c_info = oc.tensor("b"), out_tensor(out)
    assert b_info.shape is not None and c_info.dtype is not None
    k = SparseKernel("sparse_matmul" if not s.block else "bsr_matmul", s.index_dtype)
    idt = k.idtype
    bm, bn = s.block or (1, 1)
    rows = Axis("I", AxisKind.DENSE_FIXED, k.size(_block_count(s.shape[0], bm), "m"), idtype=idt)
    n = k.size(_block_count(s.shape[1], bn), "n")
    nnz = k.size(s.nnz, "nnz")
    indptr = k.array("J_indptr", binop("add", rows.length, IntImm(1, idt)))
    indices = k.array("J_indices", nnz)
    cols = Axis("J", AxisKind.SPARSE_VARIABLE, n, rows, nnz, indptr, indices, idt)
    blocks = tuple(Axis(nm, AxisKind.DENSE_FIXED, IntImm(size, idt), idtype=idt)
                   for nm, size in zip(("BI", "BJ"), s.block))
    feature = (Axis("K", AxisKind.DENSE_FIXED, k.size(b_info.shape[1], "feat_size"),
                    idtype=idt),) if len(b_info.shape) == 2 else ()
    if blocks:
        b_rows = Axis("N", AxisKind.DENSE_FIXED, k.size(s.shape[1], "n_elems"), idtype=idt)
        c_rows = Axis("M", AxisKind.DENSE_FIXED, k.size(s.shape[0], "m_elems"), idtype=idt)
    else:
        b_rows, c_rows = Axis("J_detach", AxisKind.DENSE_FIXED, n, idtype=idt), rows
    acc = c_info.dtype
    a = k.param("a", _sparse_buffer("A", (rows, cols, *blocks), s.dtype), oc.values["a"])
    b = k.param("b", _sparse_buffer("B", (b_rows, *feature), b_info.dtype or s.dtype),
                oc.values["b"])
    c = k.param("c", _sparse_buffer("C", (c_rows, *feature), acc), None)
    k.param("indptr", indptr, None)
    k.param("indices", indices, None)
    axes = (rows, cols, *blocks, *feature)
    names = ("i", "j", "bi", "bj")[:2 + len(blocks)] + ("f",) * len(feature)
    kinds = "SRSR"[:2 + len(blocks)] + "S" * len(feature)
    ivs = tuple(SpIterVar(Var(nm, idt), ax, IterKind(kd))
                for nm, ax, kd in zip(names, axes, kinds))
    v = {iv.var.name: iv.var for iv in ivs}
    f = (v["f"],) if feature else ()
    if blocks:
        a_idx = (v["i"], v["j"], v["bi"], v["bj"])
        b_idx = (_element(v["j"], bn, v["bj"]), *f)
        c_idx = (_element(v["i"], bm, v["bi"]), *f)
    else:
        a_idx, b_idx, c_idx = (v["i"], v["j"]), (v["j"], *f), (v["i"], *f)

    def load(buf: Buffer, idx: tuple[PrimExpr, ...]) -> PrimExpr:
        value = BufferLoad(buf, idx, buf.dtype)
        return value if buf.dtype == acc else cast(acc, value)

    update = binop("add", BufferLoad(c, c_idx, acc), binop("mul", load(a, a_idx), load(b, b_idx)))
    k.body = SparseIteration(k.name, ivs, BufferStore(c, update, c_idx),
                             BufferStore(c, const(0, acc), c_idx))
    return k


def _element(block: Var, size: int, inner: Var) -> PrimExpr:
    """The element coordinate of position `inner` in block `block`."""
    return binop("add", binop("mul", block, IntImm(size, block.dtype)), inner)


def _block_count(size: PrimExpr, block: int) -> PrimExpr:
    """How many blocks of `block` a dimension holds (the dimension itself for 1)."""
    if block == 1:
        return size
    if isinstance(size, IntImm):
        return IntImm(size.value // block, size.dtype)
    return binop("floordiv", size, IntImm(block, size.dtype))
