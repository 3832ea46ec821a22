"""Stages of the random loop functions drawn from a stream of their own (a fifth of the
programs get one, after the others), for constructs no other stage writes:

- `narrow_sum`: a row or column sum of int8 or uint8 data, accumulated in its own type (it
  wraps, which is defined, so every order gives the same bits) or widened to int32 as a
  quantized dot product does (`T.Cast("int32", a) * T.Cast("int32", b)`);
- `reverse`: a row read backwards (`src[vi, n - 1 - vj]`), over a loop whose binding runs
  backwards too (`vj = n - 1 - j`), under vectorized or unrolled loops;
- `inner_parallel`: a reduction whose serial reduction loop is outermost with the spatial
  loop inside it parallel or vectorized (each iteration of the reduction loop is a parallel
  sweep over the outputs);
- `select_let`: nested selects over a let-bound value, as an expression (`T.Let`) or a
  statement in the block (`x = T.bind(v)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.ir import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Var,
    binop,
    cast,
)
from tirc.ir import expr as E
from tirc.ir.analysis.block_regions import infer_regions
from tirc.ir.dtype import BOOL, dtype
from tirc.ir.stmt import LetStmt, Stmt

from difftest.values import MAGNITUDE_LIMIT, Info, combine

if TYPE_CHECKING:
    from difftest.loop_programs import Dim, Tensor, _Gen

EXACT_INT = Info("int32", 0.0)  # integer outputs: compared bit for bit


def stage_extra(gen: _Gen) -> None:
    """One of the stages above, drawn from `gen.rng` (the extras' own stream)."""
    pick = gen.rng.choice((stage_narrow_sum, stage_reverse, stage_inner_parallel,
                           stage_select_let))
    pick(gen)


def _block(gen: _Gen, base: str, ivars: list[Var], dims: tuple[Dim, ...],
           kinds: list[IterKind], body: Stmt, init: Stmt | None = None) -> Block:
    """A block over `dims` with its regions inferred."""
    reads, writes = infer_regions(body, init, set())
    return Block(gen.fresh(f"{gen.name}_{base}"),
                 tuple(IterVar(v, Range(IntImm(0, gen.index), d.expr), k)
                       for v, d, k in zip(ivars, dims, kinds)),
                 reads, writes, body, init)


def _narrow_input(gen: _Gen, dims: tuple[Dim, ...], dt: str) -> Tensor:
    """A new int8/uint8 input (values anywhere in the dtype: the wrap is what is checked)."""
    return gen.tensor(dims, dt, EXACT_INT, "in")


def stage_narrow_sum(gen: _Gen) -> None:
    """out[i] = init + sum_k a[i, k] (* b[i, k] or b[k]) in int8/uint8, wrapping, or of the
    products widened to int32; by rows or by columns, in a random nest."""
    r = gen.rng
    dt = r.choice(("int8", "uint8"))
    wide = r.random() < 0.5
    acc_dt = "int32" if wide else dt
    rows, cols = gen.dim(), gen.dim()
    a = _narrow_input(gen, (rows, cols), dt)
    by_cols = r.random() < 0.3
    keep, over = (cols, rows) if by_cols else (rows, cols)
    vi, vk = Var("vi", gen.index), Var("vk", gen.index)
    at = (vk, vi) if by_cols else (vi, vk)

    def widen(x: PrimExpr) -> PrimExpr:
        return cast(acc_dt, x) if wide else x

    term = widen(a.buf.vload(*at))
    form = r.choice(("plain", "square", "vector"))
    if form == "square":
        b = _narrow_input(gen, (rows, cols), dt)
        term = binop("mul", term, widen(b.buf.vload(*at)))
    elif form == "vector":
        b = _narrow_input(gen, (over,), dt)
        term = binop("mul", term, widen(b.buf.vload(vk)))
    out = gen.tensor((keep,), acc_dt, EXACT_INT, "out")
    start = r.choice((0, 0, 1, -3 if dt == "int8" or wide else 250))
    gen.emit(out, [vi, vk], (keep, over), [IterKind.SPATIAL, IterKind.REDUCE],
             BufferStore(out.buf, binop("add", out.buf.vload(vi), term), (vi,)),
             init=BufferStore(out.buf, IntImm(start, dtype(acc_dt)), (vi,)))


def stage_reverse(gen: _Gen) -> None:
    """out[vi, vj] = src[vi, n - 1 - vj] op c, the block bound to a loop counting up
    (`vj = j`) or down (`vj = n - 1 - j`), the inner loop serial, vectorized or unrolled."""
    r = gen.rng
    dt = r.choice(("float32", "int32", "int8"))
    if dt == "int8":
        src = _narrow_input(gen, (gen.dim(), gen.dim()), dt)
    else:
        src = gen.source(dt, rank=2)
    rows, cols = src.dims
    vi, vj = Var("vi", gen.index), Var("vj", gen.index)
    one = IntImm(1, gen.index)
    flipped = binop("sub", binop("sub", cols.expr, one), vj)
    value: PrimExpr = src.buf.vload(vi, flipped)
    if dt == "float32":
        value = binop("add", value, E.const(r.randint(-8, 8) / 4, dt))
    elif r.random() < 0.5:
        value = binop("sub", value, src.buf.vload(vi, vj))
    info = src.info.with_(mag=src.info.mag + 2) if dt == "float32" else EXACT_INT
    out = gen.tensor((rows, cols), dt, info, "out")
    block = _block(gen, "rev", [vi, vj], (rows, cols), [IterKind.SPATIAL] * 2,
                   BufferStore(out.buf, value, (vi, vj)))
    i, j = Var("i", gen.index), Var("j", gen.index)
    down = r.random() < 0.5
    bound_j = binop("sub", binop("sub", cols.expr, one), j) if down else j
    stmt: Stmt = BlockRealize((i, bound_j), IntImm(1, BOOL), block)
    inner = r.choice((ForKind.SERIAL, ForKind.VECTORIZED, ForKind.UNROLLED))
    if inner == ForKind.UNROLLED and not cols.static:
        inner = ForKind.SERIAL
    stmt = For(j, IntImm(0, gen.index), cols.expr, inner, stmt)
    outer = ForKind.PARALLEL if r.random() < 0.5 else ForKind.SERIAL
    gen.stages.append(For(i, IntImm(0, gen.index), rows.expr, outer, stmt))


def stage_inner_parallel(gen: _Gen) -> None:
    """out[i] = init + sum_k src[i, k] (or max), the reduction loop outermost and serial, the
    loop over i inside it parallel, vectorized or serial."""
    r = gen.rng
    dt = r.choice(("float32", "int32"))
    src = gen.source(dt, rank=2)
    rows, cols = src.dims
    k_count = max(1, cols.value or cols.expr.value)
    op = r.choice(("sum", "sum", "max"))
    info = src.info.with_(mag=src.info.mag * k_count) if op == "sum" else src.info
    if info.mag > MAGNITUDE_LIMIT[dt]:
        op, info = "max", src.info
    out = gen.tensor((rows,), dt, info, "out")
    vi, vk = Var("vi", gen.index), Var("vk", gen.index)
    update = binop("add" if op == "sum" else "max", out.buf.vload(vi), src.buf.vload(vi, vk))
    init = E.const(0, dt) if op == "sum" else (
        IntImm(-(1 << 31), dtype(dt)) if dt == "int32" else E.const(-1e30, dt))
    block = _block(gen, "kpar", [vi, vk], (rows, cols), [IterKind.SPATIAL, IterKind.REDUCE],
                   BufferStore(out.buf, update, (vi,)), BufferStore(out.buf, init, (vi,)))
    i, k = Var("i", gen.index), Var("k", gen.index)
    kind = r.choice((ForKind.PARALLEL, ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.SERIAL))
    stmt: Stmt = For(i, IntImm(0, gen.index), rows.expr, kind,
                     BlockRealize((i, k), IntImm(1, BOOL), block))
    gen.stages.append(For(k, IntImm(0, gen.index), cols.expr, ForKind.SERIAL, stmt))


def stage_select_let(gen: _Gen) -> None:
    """out[v] = Select(x < c1, Select(x > c2, x * c3, y), x + c4) with x = 2 * src[v] bound
    by a `T.Let` or a let statement in the block (y another load or x itself); exact values
    only, so the comparisons agree at every level."""
    r = gen.rng
    dt = r.choice(("float32", "int32"))
    src = gen.source(dt)
    if not src.info.exact:
        return
    dims = src.dims
    iv = [Var(f"v{k}", gen.index) for k in range(len(dims))]
    x = Var(gen.fresh("x"), dtype(dt))
    value = binop("mul", src.buf.vload(*iv), E.const(2, dt))

    def c(lo: int, hi: int) -> PrimExpr:
        k = r.randint(lo, hi)
        return IntImm(k, dtype(dt)) if dt == "int32" else E.const(k / 2, dt)

    x_info = src.info.with_(mag=2 * src.info.mag)
    y, y_info = gen.leaf(dt, dims, tuple(iv)) if r.random() < 0.6 else (x, x_info)
    inner = E.select(binop("gt", x, c(-6, 2)), binop("mul", x, c(-4, 4)), y)
    body = E.select(binop("lt", x, c(-2, 6)), inner, binop("add", x, c(-4, 4)))
    scale = 4.0 if dt == "int32" else 2.0  # the largest |constant|
    info = combine("max", x_info.with_(mag=x_info.mag * scale + scale, frac=x_info.frac + 1),
                   y_info)
    if info.mag > MAGNITUDE_LIMIT[dt]:
        return
    out = gen.tensor(dims, dt, info, "out")
    if r.random() < 0.5:
        store: Stmt = BufferStore(out.buf, E.Let(x, value, body, dtype(dt)), tuple(iv))
    else:
        store = LetStmt(x, value, BufferStore(out.buf, body, tuple(iv)))
    gen.emit(out, iv, dims, [IterKind.SPATIAL] * len(dims), store)
