"""Stages of the random loop functions from a stream of their own (a quarter of the programs
get one, after every other stage), for what no other stage writes:

- `pad_shift`: a row shifted with padding, `T.if_then_else(vj >= s, src[vi, vj - s], c)`
  (or `vj + s < n` and `src[vi, vj + s]`): the load on the untaken side is out of bounds,
  which `T.if_then_else` never evaluates (TVM's semantics), under any nest, vectorized too;
- `mask`: a bool buffer, an input mask choosing between two values, or an intermediate bool
  buffer written by a comparison and read by `T.if_then_else` or `T.Select`;
- `bf16`: an intermediate bfloat16 buffer (`T.Cast("bfloat16", x)`), read back widened;
- `tiles`: a block per tile viewing its rows (or columns) of a static input and of the output
  through `T.match_buffer` of a sub-region, the view declaring no strides, constant strides,
  or stride variables (and then an `elem_offset` variable too) that the match binds;
- `sym_split`: a map over a symbolic extent, its loop split by a constant with a
  `T.where(io * f + ii < n)` guard (the inner loop vectorized, unrolled or serial).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.ir import (
    Block,
    BlockRealize,
    BufferRegion,
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
    make_buffer,
)
from tirc.ir import expr as E
from tirc.ir.analysis.block_regions import infer_regions
from tirc.ir.dtype import BOOL, dtype
from tirc.ir.stmt import MatchBufferRegion, Stmt, seq

from difftest.values import MAGNITUDE_LIMIT, Info

if TYPE_CHECKING:
    from difftest.loop_programs import _Gen

BOOL_INFO = Info("bool", 1.0)


def stage_view(gen: _Gen) -> None:
    """One of the stages above, drawn from `gen.rng` (the views' own stream)."""
    pick = gen.rng.choice((stage_pad_shift, stage_mask, stage_bf16, stage_tiles,
                           stage_sym_split))
    pick(gen)


def _const(k: float, dt: str) -> PrimExpr:
    return IntImm(int(k), dtype(dt)) if dt == "int32" else E.const(k, dt)


def stage_pad_shift(gen: _Gen) -> None:
    """out[vi, vj] = src[vi, vj -+ s] where that is in the row, else a constant: the
    guarded load lies out of bounds on the side `T.if_then_else` does not take."""
    r = gen.rng
    dt = r.choice(("float32", "float32", "int32"))
    src = gen.source(dt, rank=2)
    rows, cols = src.dims
    vi, vj = Var("vi", gen.index), Var("vj", gen.index)
    s = IntImm(r.choice((1, 2)), gen.index)
    if r.random() < 0.5:
        cond = binop("ge", vj, s)
        load = src.buf.vload(vi, binop("sub", vj, s))
    else:
        cond = binop("lt", binop("add", vj, s), cols.expr)
        load = src.buf.vload(vi, binop("add", vj, s))
    pad = _const(r.randint(-2, 2), dt)
    value = E.call("if_then_else", cond, load, pad, dt=dt)
    out = gen.tensor((rows, cols), dt, src.info.with_(mag=max(src.info.mag, 2.0)), "out")
    gen.emit(out, [vi, vj], (rows, cols), [IterKind.SPATIAL] * 2,
             BufferStore(out.buf, value, (vi, vj)))


def stage_mask(gen: _Gen) -> None:
    """A bool input mask choosing src or a constant (or the negated value), or a bool
    intermediate holding `src > c` that a second stage selects through."""
    r = gen.rng
    dt = r.choice(("float32", "int32"))
    src = gen.source(dt)
    if not src.info.exact:
        return
    dims = src.dims
    iv = [Var(f"v{k}", gen.index) for k in range(len(dims))]
    negate, k = r.random() < 0.5, r.randint(-3, 3)

    def other(at: list[Var]) -> PrimExpr:
        return binop("sub", _const(0, dt), src.buf.vload(*at)) if negate else _const(k, dt)

    info = src.info.with_(mag=max(src.info.mag, 3.0))
    choose = E.select if r.random() < 0.5 else (
        lambda c, t, f: E.call("if_then_else", c, t, f, dt=dt))
    if r.random() < 0.5:
        mask = gen.tensor(dims, "bool", BOOL_INFO, "in")
        out = gen.tensor(dims, dt, info, "out")
        gen.emit(out, iv, dims, [IterKind.SPATIAL] * len(dims),
                 BufferStore(out.buf, choose(mask.buf.vload(*iv), src.buf.vload(*iv),
                                             other(iv)), tuple(iv)))
        return
    role = "tmp" if r.random() < 0.7 else "out"
    flag = gen.tensor(dims, "bool", BOOL_INFO, role)
    c = _const(r.randint(-4, 4) / (1 if dt == "int32" else 2), dt)
    gen.emit(flag, iv, dims, [IterKind.SPATIAL] * len(dims),
             BufferStore(flag.buf, binop("gt", src.buf.vload(*iv), c), tuple(iv)))
    iv2 = [Var(f"w{k}", gen.index) for k in range(len(dims))]
    out = gen.tensor(dims, dt, info, "out")
    gen.emit(out, iv2, dims, [IterKind.SPATIAL] * len(dims),
             BufferStore(out.buf, choose(flag.buf.vload(*iv2), src.buf.vload(*iv2), other(iv2)),
                         tuple(iv2)))


def stage_bf16(gen: _Gen) -> None:
    """tmp = bfloat16(src * c) in an intermediate bfloat16 buffer, out = float32(tmp) + src:
    the rounding to bfloat16 is the same everywhere (to nearest, ties to even)."""
    r = gen.rng
    src = gen.source("float32")
    if src.info.mag > 1e4:
        return
    dims = src.dims
    iv = [Var(f"v{k}", gen.index) for k in range(len(dims))]
    scale = r.choice((1.0, 0.5, 3.0, 0.1))
    tmp = gen.tensor(dims, "bfloat16", Info("float32", src.info.mag * scale, 0, True), "tmp")
    gen.emit(tmp, iv, dims, [IterKind.SPATIAL] * len(dims),
             BufferStore(tmp.buf, cast("bfloat16", binop("mul", src.buf.vload(*iv),
                                                            E.const(scale, "float32"))),
                         tuple(iv)))
    iv2 = [Var(f"w{k}", gen.index) for k in range(len(dims))]
    info = Info("float32", src.info.mag * (scale + 1) + 1, 0, True)
    out = gen.tensor(dims, "float32", info, "out")
    gen.emit(out, iv2, dims, [IterKind.SPATIAL] * len(dims),
             BufferStore(out.buf, binop("add", cast("float32", tmp.buf.vload(*iv2)),
                                        src.buf.vload(*iv2)), tuple(iv2)))


def stage_tiles(gen: _Gen) -> None:
    """out[rows of tile t] = 2 * src[rows of t] - src[rows of t, reversed] through views
    `T.match_buffer(src[t * T:t * T + T, 0:cols])` (or tiles of columns), one block per
    tile, the views' strides none, constant, or variables the match binds."""
    from difftest.loop_programs import Dim

    r = gen.rng
    size = r.choice((2, 4))
    count, other = r.choice((1, 2, 3)), r.choice((1, 3, 4, 8))
    by_cols = r.random() < 0.4
    idx = gen.index
    tiled, full = Dim(IntImm(size * count, idx), 0), Dim(IntImm(other, idx), 0)
    dims = (full, tiled) if by_cols else (tiled, full)
    src = gen.tensor(dims, "float32", Info("float32", 4.0, 3), "in")
    out = gen.tensor(dims, "float32", Info("float32", 12.0, 3), "out")
    vt = Var("vt", idx)
    lo = binop("mul", vt, IntImm(size, idx))
    span = (Range(IntImm(0, idx), full.expr), Range(lo, IntImm(size, idx))) if by_cols else \
        (Range(lo, IntImm(size, idx)), Range(IntImm(0, idx), full.expr))
    shape = tuple(rg.extent for rg in span)
    style = r.choice(("none", "const", "vars"))
    views = []
    for base in ("Sv", "Ov"):
        kw: dict = {}
        if style == "const":
            kw["strides"] = (IntImm(dims[1].expr.value, idx), IntImm(1, idx))
        elif style == "vars":
            kw["strides"] = (Var(gen.fresh("s"), idx), Var(gen.fresh("s"), idx))
            kw["elem_offset"] = Var(gen.fresh("off"), idx)
        views.append(make_buffer(gen.fresh(base), shape, "float32", **kw))
    sv, ov = views
    x, y = Var("x", idx), Var("y", idx)
    last = IntImm(shape[1].value - 1, idx)
    value = binop("sub", binop("mul", sv.vload(x, y), E.const(2.0, "float32")),
                  sv.vload(x, binop("sub", last, y)))
    inner_kind = r.choice((ForKind.SERIAL, ForKind.SERIAL, ForKind.UNROLLED,
                           ForKind.VECTORIZED))
    body: Stmt = For(x, IntImm(0, idx), shape[0], ForKind.SERIAL,
                     For(y, IntImm(0, idx), shape[1], inner_kind,
                         BufferStore(ov, value, (x, y))))
    src_region, out_region = BufferRegion(src.buf, span), BufferRegion(out.buf, span)
    block = Block(gen.fresh(f"{gen.name}_tile"),
                  (IterVar(vt, Range(IntImm(0, idx), IntImm(count, idx)), IterKind.SPATIAL),),
                  (src_region,), (out_region,), body,
                  match_buffers=(MatchBufferRegion(sv, src_region),
                                 MatchBufferRegion(ov, out_region)))
    t = Var("t", idx)
    kind = ForKind.PARALLEL if r.random() < 0.5 else ForKind.SERIAL
    gen.stages.append(For(t, IntImm(0, idx), IntImm(count, idx), kind,
                          BlockRealize((t,), IntImm(1, BOOL), block)))


def stage_sym_split(gen: _Gen) -> None:
    """out[v] = src[v] * c + d over a symbolic extent n (one of the program's, or a new one),
    the loop split by a constant factor with `T.where(io * f + ii < n)`."""
    from difftest.loop_programs import Dim

    r = gen.rng
    idx = gen.index
    sym = [d for d in gen.dims if not d.static]
    if sym and r.random() < 0.7:
        n = r.choice(sym)
    else:
        name = gen.fresh("q")
        n = Dim(Var(name, idx), r.choice((1, 3, 5, 8, 13)))
        gen.dims.append(n)
    dt = r.choice(("float32", "int32"))
    src = gen.tensor((n,), dt, Info(dt, 8.0 if dt == "int32" else 4.0, 0 if dt == "int32"
                                     else 3), "in")
    c = r.randint(-3, 3)
    info = src.info.with_(mag=src.info.mag * max(1, abs(c)) + 2)
    if info.mag > MAGNITUDE_LIMIT[dt]:
        return
    out = gen.tensor((n,), dt, info, "out")
    v = Var("v0", idx)
    value = binop("add", binop("mul", src.buf.vload(v), _const(c, dt)), _const(2, dt))
    reads, writes = infer_regions(BufferStore(out.buf, value, (v,)), None, set())
    block = Block(gen.fresh(f"{gen.name}_ss"),
                  (IterVar(v, Range(IntImm(0, idx), n.expr), IterKind.SPATIAL),),
                  reads, writes, BufferStore(out.buf, value, (v,)))
    f = IntImm(r.choice((2, 3, 4, 8)), idx)
    io, ii = Var("io", idx), Var("ii", idx)
    at = binop("add", binop("mul", io, f), ii)
    outer_n = binop("floordiv", binop("add", n.expr, IntImm(f.value - 1, idx)), f)
    kind = r.choice((ForKind.SERIAL, ForKind.VECTORIZED, ForKind.UNROLLED))
    stmt: Stmt = BlockRealize((at,), binop("lt", at, n.expr), block)
    stmt = For(ii, IntImm(0, idx), f, kind, stmt)
    outer = ForKind.PARALLEL if r.random() < 0.4 else ForKind.SERIAL
    gen.stages.append(seq(For(io, IntImm(0, idx), outer_n, outer, stmt)))
