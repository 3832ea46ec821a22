"""The conversion routine of `decompose_format(sp, "bsr", block=(bm, bn))`, generated.

A CSR matrix (m x n, axis J under the dense I) becomes BSR with blocks of bm x bn: block row
ib covers rows [ib*bm, ib*bm + bm), block column jb the columns [jb*bn, jb*bn + bn); a block
is stored when any of its elements is. The last block row and column may reach past m and n
(their outside elements are 0). Three functions, each run by the interpreter in the tests and
by the runtime when the decomposed function is called with the CSR matrix:

- `<f>_plan_counts(indptr, indices, block_indptr, m, nnz, n, mb, nb)`: block_indptr, the
  number of stored blocks of each block row (so nnzb = block_indptr[mb]);
- `<f>_plan_fill(indptr, indices, block_indptr, block_indices, m, nnz, n, mb, nb, nnzb)`: the
  block columns of each block row, increasing.

Both walk a block row's bm rows together (a merge of their sorted indices: the smallest block
column left, then past it in every row by `tirc.lower_bound`).

- `<f>_plan_values`: the values, in sparse form: an iteration over the BSR axes that reads the
  CSR matrix at each block element's coordinates (a coordinate not stored reads 0). It is
  derived from the two formats alone and lowered like any sparse kernel.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir.attrs import GLOBAL_SYMBOL
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, const
from tirc.ir.function import PrimFunc
from tirc.ir.sparse import Axis, AxisKind, SparseBuffer, SparseIteration, SpIterVar
from tirc.ir.sparse.search import lower_bound
from tirc.ir.stmt import (
    Allocate,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    LetStmt,
    Stmt,
    While,
    seq,
)

I32 = DType("int", 32)


def _buf(name: str, shape: tuple[PrimExpr, ...], dt: DType = I32) -> Buffer:
    return Buffer(name=name, shape=shape, dtype=dt, data=Var(name, HANDLE))


def _loop(var: Var, extent: PrimExpr, body: Stmt) -> Stmt:
    return For(var, IntImm(0, var.dtype), extent, ForKind.SERIAL, body)


def _c(v: int) -> PrimExpr:
    return const(v, I32)


class _Blocks:
    """The arrays and sizes of both structure functions, and the merge over a block row."""

    def __init__(self, block: tuple[int, int]) -> None:
        self.bm, self.bn = block
        self.m, self.nnz, self.n = Var("m", I32), Var("nnz", I32), Var("n", I32)
        self.mb, self.nb = Var("mb", I32), Var("nb", I32)
        self.indptr = _buf("indptr", (binop("add", self.m, 1),))
        self.indices = _buf("indices", (self.nnz,))
        self.block_indptr = _buf("block_indptr", (binop("add", self.mb, 1),))

    def merge(self, ib: Var, emit: Callable[[PrimExpr], Stmt]) -> Stmt:
        """`emit(block column)` for each stored block of block row `ib`, increasing."""
        cur, end = _buf("cur", (_c(self.bm),)), _buf("end", (_c(self.bm),))
        best, going = _buf("best", (_c(1),)), _buf("going", (_c(1),))
        r = Var("r", I32)
        row = binop("min", binop("add", binop("mul", ib, _c(self.bm)), r), self.m)
        after = binop("min", binop("add", row, _c(1)), self.m)
        start = seq(BufferStore(cur, self.indptr.vload(row), (r,)),
                    BufferStore(end, self.indptr.vload(after), (r,)))
        col = binop("floordiv", self.indices.vload(cur.vload(r)), _c(self.bn))
        smallest = IfThenElse(binop("lt", cur.vload(r), end.vload(r)),
                              BufferStore(best, binop("min", best.vload(_c(0)), col), (_c(0),)))
        past = binop("mul", binop("add", best.vload(_c(0)), _c(1)), _c(self.bn))
        advance = BufferStore(cur, lower_bound(self.indices, past, cur.vload(r), end.vload(r)),
                              (r,))
        found = binop("lt", best.vload(_c(0)), self.nb)
        step = seq(BufferStore(best, self.nb, (_c(0),)), _loop(r, _c(self.bm), smallest),
                   IfThenElse(found, seq(emit(best.vload(_c(0))),
                                         _loop(r, _c(self.bm), advance)),
                              BufferStore(going, _c(0), (_c(0),))))
        body = seq(_loop(r, _c(self.bm), start), BufferStore(going, _c(1), (_c(0),)),
                   While(binop("eq", going.vload(_c(0)), _c(1)), step))
        return Allocate(cur, Allocate(end, Allocate(best, Allocate(going, body))))


def plan_counts(name: str, block: tuple[int, int]) -> PrimFunc:
    """`<name>_plan_counts`: block_indptr of the BSR form."""
    s = _Blocks(block)
    ib = Var("ib", I32)
    count = _buf("count", (_c(1),))
    row = seq(BufferStore(count, _c(0), (_c(0),)),
              s.merge(ib, lambda col: BufferStore(count, binop("add", count.vload(_c(0)),
                                                              _c(1)), (_c(0),))),
              BufferStore(s.block_indptr, binop("add", s.block_indptr.vload(ib),
                                                count.vload(_c(0))), (binop("add", ib, 1),)))
    body = seq(BufferStore(s.block_indptr, _c(0), (_c(0),)), Allocate(count, _loop(ib, s.mb,
                                                                                  row)))
    buffers = [s.indptr, s.indices, s.block_indptr]
    handles = [Var(b.name, HANDLE) for b in buffers]
    fname = f"{name}_plan_counts"
    return PrimFunc(fname, (*handles, s.m, s.nnz, s.n, s.mb, s.nb),
                    dict(zip(handles, buffers)), body, {GLOBAL_SYMBOL: fname})


def plan_fill(name: str, block: tuple[int, int]) -> PrimFunc:
    """`<name>_plan_fill`: block_indices of the BSR form."""
    s = _Blocks(block)
    nnzb = Var("nnzb", I32)
    block_indices = _buf("block_indices", (nnzb,))
    ib = Var("ib", I32)
    at = _buf("at", (_c(1),))

    def emit(col: PrimExpr) -> Stmt:
        return seq(BufferStore(block_indices, col, (at.vload(_c(0)),)),
                   BufferStore(at, binop("add", at.vload(_c(0)), _c(1)), (_c(0),)))

    row = seq(BufferStore(at, s.block_indptr.vload(ib), (_c(0),)), s.merge(ib, emit))
    buffers = [s.indptr, s.indices, s.block_indptr, block_indices]
    handles = [Var(b.name, HANDLE) for b in buffers]
    fname = f"{name}_plan_fill"
    return PrimFunc(fname, (*handles, s.m, s.nnz, s.n, s.mb, s.nb, nnzb),
                    dict(zip(handles, buffers)), Allocate(at, _loop(ib, s.mb, row)),
                    {GLOBAL_SYMBOL: fname})


def plan_values(name: str, block: tuple[int, int], dt: DType) -> PrimFunc:
    """`<name>_plan_values`: the BSR values read from the CSR matrix by coordinates."""
    bm, bn = block
    m, n, nnz = Var("m", I32), Var("n", I32), Var("nnz", I32)
    mb, nb, nnzb = Var("mb", I32), Var("nb", I32), Var("nnzb", I32)
    indptr, indices = _buf("J_indptr", (binop("add", m, 1),)), _buf("J_indices", (nnz,))
    bindptr, bindices = _buf("JB_indptr", (binop("add", mb, 1),)), _buf("JB_indices", (nnzb,))
    row, col = Axis("I", AxisKind.DENSE_FIXED, m), None
    col = Axis("J", AxisKind.SPARSE_VARIABLE, n, row, nnz, indptr, indices)
    brow = Axis("IB", AxisKind.DENSE_FIXED, mb)
    bcol = Axis("JB", AxisKind.SPARSE_VARIABLE, nb, brow, nnzb, bindptr, bindices)
    bi, bj = (Axis(nm, AxisKind.DENSE_FIXED, _c(size)) for nm, size in (("BI", bm), ("BJ", bn)))
    a = SparseBuffer(name="A", shape=(m, n), dtype=dt, data=Var("A", HANDLE), axes=(row, col))
    ab = SparseBuffer(name="AB", shape=(mb, nb, _c(bm), _c(bn)), dtype=dt,
                      data=Var("AB", HANDLE), axes=(brow, bcol, bi, bj))
    ivs = tuple(SpIterVar(Var(nm, I32), ax, IterKind.SPATIAL)
                for nm, ax in zip(("ib", "jb", "bi", "bj"), (brow, bcol, bi, bj)))
    vib, vjb, vbi, vbj = (iv.var for iv in ivs)
    i, j = Var("i", I32), Var("j", I32)
    at = (vib, vjb, vbi, vbj)
    inside = binop("and", binop("lt", i, m), binop("lt", j, n))
    body = LetStmt(i, binop("add", binop("mul", vib, _c(bm)), vbi), LetStmt(
        j, binop("add", binop("mul", vjb, _c(bn)), vbj),
        IfThenElse(inside, BufferStore(ab, BufferLoad(a, (i, j), dt), at),
                   BufferStore(ab, const(0, dt), at))))
    names = ("a", "indptr", "indices", "ab", "block_indptr", "block_indices")
    handles = [Var(nm, HANDLE) for nm in names]
    fname = f"{name}_plan_values"
    bmap = dict(zip(handles, (a, indptr, indices, ab, bindptr, bindices)))
    return PrimFunc(fname, (*handles, m, n, nnz, mb, nb, nnzb), bmap,
                    SparseIteration(f"{name}_values", ivs, body),
                    {GLOBAL_SYMBOL: fname, "sparse_tir_level": 2})
