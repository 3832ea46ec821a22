"""The conversion routine of `decompose_format` into ELL buckets, generated as loop functions.

The columns of a CSR matrix (axis J under the dense I, n columns) are cut into `parts` equal
ranges, partition p holding the columns [p*n/parts, (p+1)*n/parts); within a row, a partition's
columns are a run of its sorted indices, found by `tirc.lower_bound`. Each (row, partition) run
of length L > 0 goes to the first bucket whose width w_b >= L; a longer run is cut into
ceil(L / w_last) chunks of the last bucket. Bucket q = p * len(widths) + b is an ELL matrix of
n_q rows: `rows_q[r]` is the source row of its row r, `cols_q[r, t]` and `vals_q[r, t]` its
coordinates and values, padded with the chunk's last coordinate and value 0 (a padded entry
repeats a real coordinate: a product reads the value 0 there). A bucket of a sparse output
also gets `mask_q[r, t]`, 1 at a real entry and 0 at padding (SparseTIR's hyb mask): a padded
entry would write the element of the real one before it, so the decomposed iteration computes
nothing where the mask is 0 (two iterations writing one element would race in parallel).

Two functions, generated from the source axis, the widths and the partitions:
- `<f>_plan_counts(indptr, indices, counts, m, nnz, n)`: counts[q] = n_q (the row-length
  histogram folded into the buckets), so the caller can size the bucket arrays;
- `<f>_plan_fill(indptr, indices[, data], rows_0, cols_0[, vals_0 | mask_0], ..., m, nnz, n,
  n_0, ...)`: fills them, in row order (`data` and `vals` when the bucket carries values, an
  operand; `mask` for a sparse output, whose values the computation writes).
Both are ordinary loop functions: the interpreter runs them, so their result is checked like
any kernel's.
"""

from __future__ import annotations

from tirc.ir.attrs import GLOBAL_SYMBOL, PRAGMA_UNROLL
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import IntImm, PrimExpr, Var, binop, const
from tirc.ir.function import PrimFunc
from tirc.ir.sparse.search import lower_bound
from tirc.ir.stmt import Allocate, BufferStore, For, ForKind, IfThenElse, LetStmt, Stmt, seq

I32 = DType("int", 32)
MASK = DType("int", 8)


def _buf(name: str, shape: tuple[PrimExpr, ...], dt: DType) -> Buffer:
    return Buffer(name=name, shape=shape, dtype=dt, data=Var(name, HANDLE))


def _loop(var: Var, extent: PrimExpr, body: Stmt, rolled: bool = False) -> Stmt:
    """A serial loop; `rolled` keeps it rolled in LLVM (a bucket's copy loop: unrolled and
    vectorized for each of dozens of buckets it made the plan most of the compile time)."""
    return For(var, IntImm(0, var.dtype), extent, ForKind.SERIAL, body,
               annotations={PRAGMA_UNROLL: 0} if rolled else {})


def _chunks(length: PrimExpr, widths: tuple[int, ...]) -> list[tuple[PrimExpr, PrimExpr]]:
    """Per bucket: (this run goes here, how many chunks)."""
    out: list[tuple[PrimExpr, PrimExpr]] = []
    for b, w in enumerate(widths):
        lower = binop("gt", length, const(widths[b - 1], I32)) if b else \
            binop("gt", length, const(0, I32))
        if b == len(widths) - 1:
            out.append((lower, binop("floordiv", binop("add", length, const(w - 1, I32)),
                                     const(w, I32))))
        else:
            out.append((binop("and", lower, binop("le", length, const(w, I32))), const(1, I32)))
    return out


class _Source:
    """The CSR arrays and sizes both functions take, and the runs of a row's partitions."""

    def __init__(self, parts: int) -> None:
        self.parts = parts
        self.m, self.nnz, self.n = Var("m", I32), Var("nnz", I32), Var("n", I32)
        self.indptr = _buf("indptr", (binop("add", self.m, 1),), I32)
        self.indices = _buf("indices", (self.nnz,), I32)
        self.i = Var("i", I32)

    def bound(self, p: int) -> PrimExpr:
        """The first column of partition p."""
        return binop("floordiv", binop("mul", const(p, I32), self.n), const(self.parts, I32))

    def per_run(self, run: callable) -> Stmt:  # type: ignore[valid-type]
        """For row i: `run(p, begin, length)` for each partition p, with the run's first
        position and length bound as variables."""
        row_begin = self.indptr.vload(self.i)
        row_end = self.indptr.vload(binop("add", self.i, 1))
        edges: list[PrimExpr] = [row_begin]
        for p in range(1, self.parts):
            edges.append(lower_bound(self.indices, self.bound(p), row_begin, row_end))
        edges.append(row_end)
        stmts: list[Stmt] = []
        for p in range(self.parts):
            begin, end = Var(f"begin{p}", I32), Var(f"end{p}", I32)
            length = Var(f"length{p}", I32)
            stmts.append(LetStmt(begin, edges[p], LetStmt(end, edges[p + 1], LetStmt(
                length, binop("sub", end, begin), run(p, begin, length)))))
        return _loop(self.i, self.m, seq(*stmts))


def plan_counts(name: str, widths: tuple[int, ...], parts: int = 1) -> PrimFunc:
    """`<name>_plan_counts`: how many rows each bucket gets (see the module docstring)."""
    src = _Source(parts)
    nb = len(widths)
    counts = _buf("counts", (const(parts * nb, I32),), I32)

    def run(p: int, begin: Var, length: Var) -> Stmt:
        stmts: list[Stmt] = []
        for b, (here, chunks) in enumerate(_chunks(length, widths)):
            k = const(p * nb + b, I32)
            stmts.append(IfThenElse(here, BufferStore(counts, binop("add", counts.vload(k),
                                                                    chunks), (k,))))
        return seq(*stmts)

    zero = [BufferStore(counts, const(0, I32), (const(q, I32),)) for q in range(parts * nb)]
    body = seq(*zero, src.per_run(run))
    buffers = [src.indptr, src.indices, counts]
    handles = [Var(b.name, HANDLE) for b in buffers]
    fname = f"{name}_plan_counts"
    return PrimFunc(fname, (*handles, src.m, src.nnz, src.n), dict(zip(handles, buffers)),
                    body, {GLOBAL_SYMBOL: fname})


def plan_fill(name: str, widths: tuple[int, ...], dt: DType | None, parts: int = 1
              ) -> PrimFunc:
    """`<name>_plan_fill`: the bucket arrays (values when `dt` is given, else masks)."""
    src = _Source(parts)
    nb = len(widths)
    sizes = [Var(f"n{q}", I32) for q in range(parts * nb)]
    data = _buf("data", (src.nnz,), dt) if dt is not None else None
    outs: list[list[Buffer]] = []
    for q, n_q in enumerate(sizes):
        w = widths[q % nb]
        group = [_buf(f"rows{q}", (n_q,), I32), _buf(f"cols{q}", (binop("mul", n_q, w),), I32)]
        if dt is not None:
            group.append(_buf(f"vals{q}", (binop("mul", n_q, w),), dt))
        else:
            group.append(_buf(f"mask{q}", (binop("mul", n_q, w),), MASK))
        outs.append(group)
    cursor = _buf("cursor", (const(parts * nb, I32),), I32)
    c, t, r = Var("c", I32), Var("t", I32), Var("r", I32)

    def run(p: int, begin: Var, length: Var) -> Stmt:
        stmts: list[Stmt] = []
        for b, (here, chunks) in enumerate(_chunks(length, widths)):
            w = const(widths[b], I32)
            q = p * nb + b
            k = const(q, I32)
            start = binop("mul", c, w)
            real = binop("lt", binop("add", start, t), length)
            last = binop("sub", binop("min", binop("add", start, w), length), const(1, I32))
            pos = binop("add", begin, binop("add", start, t))
            slot = (binop("add", binop("mul", r, w), t),)
            stores = [BufferStore(outs[q][1], src.indices.vload(pos), slot)]
            pads = [BufferStore(outs[q][1], src.indices.vload(binop("add", begin, last)), slot)]
            if data is not None:
                stores.append(BufferStore(outs[q][2], data.vload(pos), slot))
                pads.append(BufferStore(outs[q][2], const(0, data.dtype), slot))
            else:
                stores.append(BufferStore(outs[q][2], const(1, MASK), slot))
                pads.append(BufferStore(outs[q][2], const(0, MASK), slot))
            fill = _loop(t, w, IfThenElse(real, seq(*stores), seq(*pads)), rolled=True)
            chunk = LetStmt(r, binop("add", cursor.vload(k), c),
                            seq(BufferStore(outs[q][0], src.i, (r,)), fill))
            stmts.append(IfThenElse(here, seq(_loop(c, chunks, chunk), BufferStore(
                cursor, binop("add", cursor.vload(k), chunks), (k,)))))
        return seq(*stmts)

    zero = [BufferStore(cursor, const(0, I32), (const(q, I32),)) for q in range(parts * nb)]
    body = Allocate(cursor, seq(*zero, src.per_run(run)))
    buffers = [src.indptr, src.indices, *([data] if data is not None else []),
               *(b for group in outs for b in group)]
    handles = [Var(b.name, HANDLE) for b in buffers]
    fname = f"{name}_plan_fill"
    return PrimFunc(fname, (*handles, src.m, src.nnz, src.n, *sizes),
                    dict(zip(handles, buffers)), body, {GLOBAL_SYMBOL: fname})
