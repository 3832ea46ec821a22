"""The conversion routine of `decompose_format` into ELL buckets, generated as loop functions.

For a CSR axis J under a dense axis I and bucket widths w_0 < ... < w_{B-1}, a nonempty row
of length L goes to the first bucket with w_b >= L; a longer row is cut into ceil(L / w_last)
chunks of the last bucket. Each bucket b is an ELL matrix of n_b rows: `rows_b[r]` is the
source row of its row r, `cols_b[r, t]`/`vals_b[r, t]` its coordinates and values, padded
with coordinate 0 and value 0.

Two functions, generated from the source axis and the widths:
- `<f>_plan_counts(indptr, counts)`: counts[b] = n_b (the row-length histogram folded into the
  buckets), so the caller can size the bucket arrays;
- `<f>_plan_fill(indptr, indices, data, rows_0, cols_0, vals_0, ..., m, nnz, n_0, ...)`: fills
  them, in row order.
Both are ordinary loop functions: the interpreter runs them, so their result is checked like
any kernel's.
"""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import IntImm, PrimExpr, Var, binop, const
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import Allocate, BufferStore, For, ForKind, IfThenElse, LetStmt, Stmt, seq

I32 = DType("int", 32)


def _buf(name: str, shape: tuple[PrimExpr, ...], dt: DType) -> Buffer:
    return Buffer(name=name, shape=shape, dtype=dt, data=Var(name, HANDLE))


def _loop(var: Var, extent: PrimExpr, body: Stmt) -> Stmt:
    return For(var, IntImm(0, var.dtype), extent, ForKind.SERIAL, body)


def _chunks(length: PrimExpr, widths: tuple[int, ...]) -> list[tuple[PrimExpr, PrimExpr]]:
    """Per bucket: (this row goes here, how many chunks)."""
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


def plan_counts(name: str, widths: tuple[int, ...]) -> PrimFunc:
    m = Var("m", I32)
    indptr = _buf("indptr", (binop("add", m, 1),), I32)
    counts = _buf("counts", (const(len(widths), I32),), I32)
    i = Var("i", I32)
    length = Var("length", I32)
    row: list[Stmt] = []
    for b, (here, chunks) in enumerate(_chunks(length, widths)):
        k = const(b, I32)
        row.append(IfThenElse(here, BufferStore(counts, binop("add", counts.vload(k), chunks),
                                                (k,))))
    zero = [BufferStore(counts, const(0, I32), (const(b, I32),)) for b in range(len(widths))]
    body = seq(*zero, _loop(i, m, LetStmt(length, binop("sub", indptr.vload(binop("add", i, 1)),
                                                          indptr.vload(i)), seq(*row))))
    handles = [Var("indptr", HANDLE), Var("counts", HANDLE)]
    return PrimFunc(f"{name}_plan_counts", (*handles, m), dict(zip(handles, (indptr, counts))),
                    body, {"global_symbol": f"{name}_plan_counts"})


def plan_fill(name: str, widths: tuple[int, ...], dt: DType) -> PrimFunc:
    m, nnz = Var("m", I32), Var("nnz", I32)
    sizes = [Var(f"n{b}", I32) for b in range(len(widths))]
    indptr = _buf("indptr", (binop("add", m, 1),), I32)
    indices = _buf("indices", (nnz,), I32)
    data = _buf("data", (nnz,), dt)
    outs = []
    for b, (w, n_b) in enumerate(zip(widths, sizes)):
        outs += [_buf(f"rows{b}", (n_b,), I32), _buf(f"cols{b}", (binop("mul", n_b, w),), I32),
                 _buf(f"vals{b}", (binop("mul", n_b, w),), dt)]
    cursor = _buf("cursor", (const(len(widths), I32),), I32)
    i, c, t = Var("i", I32), Var("c", I32), Var("t", I32)
    length, begin = Var("length", I32), Var("begin", I32)
    row: list[Stmt] = []
    for b, (here, chunks) in enumerate(_chunks(length, widths)):
        w = widths[b]
        rows, cols, vals = outs[3 * b:3 * b + 3]
        k = const(b, I32)
        r = Var("r", I32)
        src = binop("add", binop("add", begin, binop("mul", c, const(w, I32))), t)
        slot = (binop("add", binop("mul", r, const(w, I32)), t),)
        inside = binop("lt", binop("add", binop("mul", c, const(w, I32)), t), length)
        fill = _loop(t, const(w, I32), IfThenElse(
            inside,
            seq(BufferStore(cols, indices.vload(src), slot), BufferStore(vals, data.vload(src),
                                                                         slot)),
            seq(BufferStore(cols, const(0, I32), slot), BufferStore(vals, const(0, dt), slot))))
        chunk = LetStmt(r, binop("add", cursor.vload(k), c),
                        seq(BufferStore(rows, i, (r,)), fill))
        row.append(IfThenElse(here, seq(_loop(c, chunks, chunk),
                                        BufferStore(cursor, binop("add", cursor.vload(k),
                                                                  chunks), (k,)))))
    per_row = LetStmt(begin, indptr.vload(i),
                      LetStmt(length, binop("sub", indptr.vload(binop("add", i, 1)),
                                            indptr.vload(i)), seq(*row)))
    zero = [BufferStore(cursor, const(0, I32), (const(b, I32),)) for b in range(len(widths))]
    body = Allocate(cursor, seq(*zero, _loop(i, m, per_row)))
    buffers = [indptr, indices, data, *outs]
    handles = [Var(bf.name, HANDLE) for bf in buffers]
    return PrimFunc(f"{name}_plan_fill", (*handles, m, nnz, *sizes),
                    dict(zip(handles, buffers)), body, {"global_symbol": f"{name}_plan_fill"})
