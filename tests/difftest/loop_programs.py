"""A seeded generator of random valid loop functions (TensorIR), built as IR.

A program is a chain of one to four stages, each a block in its own loop nest writing a new
tensor (an intermediate `T.alloc_buffer` or an output parameter) from the inputs and the
earlier stages: elementwise maps with broadcasting, row and column reductions (sum, max, min)
with `T.init`, transposes, matmuls, stencils, one-dimensional convolutions (a window read),
gathers through int32 index arrays (an embedding lookup, an ELL SpMM), and casts through
float16 and int32. Shapes are
static or symbolic (`n = T.int64()`); loop nests are plain, split (with `T.where` when the
factor does not divide), fused, or reordered, with parallel, vectorized and unrolled loops
where they are legal. A quarter of the programs end with one more output, a row scan whose
serial loop inside the block leaves early (`break`) or skips elements (`continue`), and a fifth
with a row sum through a scratch buffer local to its block over a loop from a non-zero start,
or a total over two reduction axes with `T.init`, and a fifth with one of the stages of
`loop_extras` (int8/uint8 sums that wrap or widen, rows read backwards, a parallel loop inside a
serial reduction loop, nested selects over a let-bound value), and a quarter with one of the
stages of `loop_views` (a padded shift through `T.if_then_else`, bool masks, a bfloat16
intermediate, tiles viewed through `T.match_buffer` of a sub-region, a guarded split of a
symbolic extent), and a fifth with one of the stages of `loop_index` (floordiv, floormod,
truncdiv and truncmod of negative values in indices, plain, under `T.if_then_else` with side
conditions, or choosing through `T.Select`, and in int32 values), and an eighth with one of
the stages of `loop_calls` (a direct call of another loop function of the module, on the
caller's storage, as a statement or returning a value); each draws from its own stream,
so the stages before it are those the seed always gave.
`random_loop_program(seed)` is deterministic in its seed, so a failing seed is a reproducible
program.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field

from tirc.ir import (
    Block,
    BlockRealize,
    Buffer,
    BufferStore,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    PrimFunc,
    Range,
    Var,
    binop,
    cast,
    make_buffer,
)
from tirc.ir import expr as E
from tirc.ir.analysis.block_regions import infer_regions
from tirc.ir.dtype import BOOL, dtype
from tirc.ir.intrinsics import BREAK_LOOP, CONTINUE_LOOP
from tirc.ir.stmt import Evaluate, IfThenElse, Stmt, seq

from difftest.harness import Program, loop_args
from difftest.loop_calls import stage_call
from difftest.loop_extras import stage_extra
from difftest.loop_index import stage_index
from difftest.loop_views import stage_view
from difftest.values import INPUT_INFO, Info, combine

HANDLE = dtype("handle")
STATIC_EXTENTS = (1, 2, 3, 4, 5, 7, 8, 12, 16, 1, 2, 3, 4, 8, 16, 24, 32, 64, 100)
SYMBOLIC_VALUES = (1, 2, 3, 5, 8, 13)
MAX_STAGES = 4


@dataclass(frozen=True)
class Dim:
    """One extent of the program: a constant, or a symbolic size with its value for a run."""

    expr: PrimExpr
    value: int

    @property
    def static(self) -> bool:
        return isinstance(self.expr, IntImm)


@dataclass(frozen=True)
class Tensor:
    """A buffer of the program with the dims of its shape and what is known of its values."""

    buf: Buffer
    dims: tuple[Dim, ...]
    info: Info


@dataclass
class LoopProgram:
    """A generated function, the values of its symbolic sizes, and its outputs' Infos."""

    func: PrimFunc
    sizes: dict[str, int]
    outputs: dict[str, Info] = field(default_factory=dict)
    helpers: dict[str, PrimFunc] = field(default_factory=dict)


class _Gen:
    """The state of one program being generated."""

    def __init__(self, seed: int, name: str) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.name = name
        self.index = dtype("int64") if self.rng.random() < 0.5 else dtype("int32")
        self.dims: list[Dim] = []
        self.symbols = 0
        self.params: list[Tensor] = []
        self.allocs: list[Buffer] = []
        self.tensors: list[Tensor] = []
        self.outputs: dict[str, Info] = {}
        self.stages: list[Stmt] = []
        self.helpers: dict[str, PrimFunc] = {}  # loop functions the function calls
        self.names = 0
        # Half the programs have plain nests only (serial loops bound one to one to the block's
        # variables): the shape the default schedules take on.
        self.plain = self.rng.random() < 0.5

    # ---- names, dims, tensors --------------------------------------------------------

    def fresh(self, base: str) -> str:
        self.names += 1
        return f"{base}{self.names}"

    def dim(self) -> Dim:
        """An extent: reuse one (shapes then line up for maps and matmuls) or make one."""
        if self.dims and self.rng.random() < 0.5:
            return self.rng.choice(self.dims)
        if self.index.bits == 64 and self.symbols < 2 and self.rng.random() < 0.4:
            self.symbols += 1
            d = Dim(Var("nm"[self.symbols - 1], self.index), self.rng.choice(SYMBOLIC_VALUES))
        else:
            d = Dim(IntImm(self.rng.choice(STATIC_EXTENTS), self.index), 0)
        self.dims.append(d)
        return d

    def tensor(self, dims: tuple[Dim, ...], dt: str, info: Info, role: str) -> Tensor:
        """A new buffer: an input or output parameter, or an intermediate."""
        name = self.fresh({"in": "A", "out": "O", "tmp": "T"}[role])
        buf = make_buffer(name, tuple(d.expr for d in dims), dt)
        t = Tensor(buf, dims, info)
        if role == "tmp":
            self.allocs.append(buf)
        else:
            self.params.append(t)
        if role == "out":
            self.outputs[name] = info
        self.tensors.append(t)
        return t

    def input(self, dims: tuple[Dim, ...], dt: str = "float32") -> Tensor:
        return self.tensor(dims, dt, INPUT_INFO[dt], "in")

    def source(self, dt: str = "float32", rank: int | None = None) -> Tensor:
        """An existing tensor of dtype `dt` (and rank), or a new input."""
        fit = [t for t in self.tensors if str(t.buf.dtype) == dt
               and (rank is None or len(t.dims) == rank)]
        if fit and self.rng.random() < 0.75:
            return self.rng.choice(fit[-3:])
        rank = rank or self.rng.choice((1, 2, 2))
        return self.input(tuple(self.dim() for _ in range(rank)), dt)

    def result(self, dims: tuple[Dim, ...], dt: str, info: Info, last: bool) -> Tensor:
        role = "out" if last or self.rng.random() < 0.25 else "tmp"
        return self.tensor(dims, dt, info, role)

    # ---- expressions -----------------------------------------------------------------

    def leaf(self, dt: str, out_dims: tuple[Dim, ...], idx: tuple[PrimExpr, ...]
             ) -> tuple[PrimExpr, Info]:
        """A load of a tensor whose dims match (or broadcast to) the output's, or a constant."""
        fit = []
        for t in self.tensors:
            if str(t.buf.dtype) != dt:
                continue
            picks = _broadcast_indices(t.dims, out_dims, idx)
            if picks is not None:
                fit.append((t, picks))
        if fit and self.rng.random() < 0.85:
            t, picks = self.rng.choice(fit)
            return t.buf.vload(*picks), t.info
        if dt == "int32":
            k = self.rng.randint(-4, 4)
            return IntImm(k, dtype("int32")), Info("int32", abs(k))
        k = self.rng.randint(-16, 16)
        return E.const(k / 4, dt), Info(dt, abs(k / 4), 2)

    def expr(self, dt: str, out_dims: tuple[Dim, ...], idx: tuple[PrimExpr, ...], depth: int
             ) -> tuple[PrimExpr, Info]:
        """A random expression of dtype `dt` over loads at `idx`."""
        if depth <= 0 or self.rng.random() < 0.3:
            return self.leaf(dt, out_dims, idx)
        a, ia = self.expr(dt, out_dims, idx, depth - 1)
        choice = self.rng.random()
        if choice < 0.55:
            b, ib = self.expr(dt, out_dims, idx, depth - 1)
            op = self.rng.choice(("add", "sub", "mul", "max", "min"))
            info = combine(op, ia, ib)
            if info.mag > _limit(dt):
                op, info = "max", combine("max", ia, ib)
            return binop(op, a, b), info
        if choice < 0.7:
            return self.unary(dt, a, ia)
        if choice < 0.85 and ia.exact:
            b, ib = self.expr(dt, out_dims, idx, depth - 1)
            if ib.exact:
                t, it = self.leaf(dt, out_dims, idx)
                f, iff = self.leaf(dt, out_dims, idx)
                cmp = self.rng.choice(("lt", "le", "eq", "ne"))
                return E.select(binop(cmp, a, b), t, f), combine("max", it, iff)
        return a, ia

    def unary(self, dt: str, a: PrimExpr, ia: Info) -> tuple[PrimExpr, Info]:
        if dt == "int32":
            c = self.rng.choice((2, 3, 4))
            op = self.rng.choice(("floordiv", "floormod", "neg"))
            if op == "neg":
                return binop("sub", IntImm(0, dtype(dt)), a), ia
            info = Info(dt, ia.mag if op == "floordiv" else c - 1)
            return binop(op, a, IntImm(c, dtype(dt))), info
        op = self.rng.choice(("abs", "half", "tanh", "sigmoid", "exp", "sqrt"))
        if op == "abs":
            return E.call("abs", a), ia
        if op == "half":
            return binop("mul", a, E.const(0.5, dt)), ia.with_(mag=ia.mag / 2, frac=ia.frac + 1)
        if dt == "float16":
            return a, ia
        if op == "exp" and ia.mag <= 8:
            return E.call("exp", a), Info(dt, 3000.0, 0, True)
        if op == "sqrt":
            return E.call("sqrt", E.call("abs", a)), Info(dt, max(1.0, ia.mag) ** 0.5, 0, True)
        if op in ("tanh", "sigmoid"):
            return E.call(op, a), Info(dt, 1.0, 0, True)
        return a, ia

    # ---- stages ----------------------------------------------------------------------

    def stage(self, last: bool) -> None:
        kind = self.rng.choice(("map", "map", "reduce", "dot", "transpose", "matmul", "cast",
                                "stencil", "conv", "gather"))
        getattr(self, "stage_" + kind)(last)

    def stage_map(self, last: bool) -> None:
        dt = self.rng.choice(("float32",) * 5 + ("int32", "float16"))
        src = self.source(dt)
        dims = src.dims
        iv = [Var(f"v{k}", self.index) for k in range(len(dims))]
        depth = 1 if dt == "float16" else self.rng.randint(1, 3)
        value, info = self.expr(dt, dims, tuple(iv), depth)
        if dt == "float16" and isinstance(value, E.BinOp) and value.op == "mul":
            info = info.with_(rounded=not info.exact)
        out = self.result(dims, dt, info, last)
        self.emit(out, iv, dims, [IterKind.SPATIAL] * len(dims), BufferStore(out.buf, value,
                                                                            tuple(iv)))

    def stage_reduce(self, last: bool) -> None:
        dt = self.rng.choice(("float32",) * 4 + ("int32",))
        src = self.source(dt, rank=2)
        axis = self.rng.choice((0, 1))
        keep = src.dims[1 - axis]
        vi, vk = Var("vi", self.index), Var("vk", self.index)
        op = self.rng.choice(("sum", "sum", "max", "min"))
        out_info = src.info if op != "sum" else src.info.with_(
            mag=src.info.mag * max(1, src.dims[axis].value or src.dims[axis].expr.value))
        if out_info.mag > _limit(dt):
            op, out_info = "max", src.info
        out = self.result((keep,), dt, out_info, last)
        load = src.buf.vload(*((vk, vi) if axis == 0 else (vi, vk)))
        acc = out.buf.vload(vi)
        update = {"sum": lambda: binop("add", acc, load), "max": lambda: binop("max", acc, load),
                  "min": lambda: binop("min", acc, load)}[op]()
        init = _reduction_init(op, dt)
        self.emit(out, [vi, vk], (keep, src.dims[axis]), [IterKind.SPATIAL, IterKind.REDUCE],
                  BufferStore(out.buf, update, (vi,)), init=BufferStore(out.buf, init, (vi,)))

    def stage_dot(self, last: bool) -> None:
        """out[i] = init + sum_k a[i, k] * b[k] (or * a[i, k], or * c[i, k]): a row norm or a
        matrix-vector product, from float32 or float16 data accumulated in float32."""
        src_dt = self.rng.choice(("float32", "float32", "float16"))
        a = self.source(src_dt, rank=2)
        rows, inner = a.dims
        vi, vk = Var("vi", self.index), Var("vk", self.index)
        choice = self.rng.random()
        if choice < 0.4:
            b = self.input((inner,), src_dt)
            other, other_info = b.buf.vload(vk), b.info
        elif choice < 0.7:
            other, other_info = a.buf.vload(vi, vk), a.info
        else:
            c = self.input((rows, inner), src_dt)
            other, other_info = c.buf.vload(vi, vk), c.info

        def f32(e: PrimExpr) -> PrimExpr:
            return cast("float32", e) if src_dt != "float32" else e

        k = inner.value or inner.expr.value
        info = combine("mul", a.info, other_info).with_(dtype="float32")
        start = self.rng.choice((0.0, 0.0, 0.125, 1.0))
        info = info.with_(mag=info.mag * max(1, k) + start, frac=max(info.frac, 3))
        out = self.result((rows,), "float32", info, last)
        acc = out.buf.vload(vi)
        body = BufferStore(out.buf, binop("add", acc, binop("mul", f32(a.buf.vload(vi, vk)),
                                                            f32(other))), (vi,))
        self.emit(out, [vi, vk], (rows, inner), [IterKind.SPATIAL, IterKind.REDUCE], body,
                  init=BufferStore(out.buf, E.const(start, "float32"), (vi,)))

    def stage_transpose(self, last: bool) -> None:
        dt = self.rng.choice(("float32", "float32", "int32", "float16"))
        src = self.source(dt, rank=2)
        dims = (src.dims[1], src.dims[0])
        vi, vj = Var("vi", self.index), Var("vj", self.index)
        out = self.result(dims, dt, src.info, last)
        self.emit(out, [vi, vj], dims, [IterKind.SPATIAL] * 2,
                  BufferStore(out.buf, src.buf.vload(vj, vi), (vi, vj)))

    def stage_matmul(self, last: bool) -> None:
        dt = self.rng.choice(("float32", "float32", "int32"))
        a = self.source(dt, rank=2)
        rows, inner = a.dims
        cols = self.dim()
        fit = [t for t in self.tensors if str(t.buf.dtype) == dt and len(t.dims) == 2
               and t.dims[0] is inner]
        b = self.rng.choice(fit) if fit and self.rng.random() < 0.5 else self.input((inner, cols),
                                                                                   dt)
        cols = b.dims[1]
        k = inner.value or inner.expr.value
        info = combine("mul", a.info, b.info)
        info = info.with_(mag=info.mag * max(1, k))
        if info.mag > _limit(dt):
            self.stage_map(last)
            return
        out = self.result((rows, cols), dt, info, last)
        vi, vj, vk = (Var(n, self.index) for n in ("vi", "vj", "vk"))
        acc = out.buf.vload(vi, vj)
        body = BufferStore(out.buf, binop("add", acc, binop("mul", a.buf.vload(vi, vk),
                                                            b.buf.vload(vk, vj))), (vi, vj))
        self.emit(out, [vi, vj, vk], (rows, cols, inner), [IterKind.SPATIAL, IterKind.SPATIAL,
                                                           IterKind.REDUCE],
                  body, init=BufferStore(out.buf, E.const(0, dt), (vi, vj)))

    def stage_cast(self, last: bool) -> None:
        pairs = [("float32", "float16"), ("float16", "float32"), ("float32", "int32"),
                 ("int32", "float32"), ("int32", "float16")]
        src_dt, dst_dt = self.rng.choice(pairs)
        src = self.source(src_dt)
        if not src.info.exact or src.info.mag > _limit(dst_dt):
            self.stage_map(last)
            return
        iv = [Var(f"v{k}", self.index) for k in range(len(src.dims))]
        value: PrimExpr = src.buf.vload(*iv)
        info = Info(dst_dt, src.info.mag, src.info.frac)
        if src_dt == "float32" and dst_dt == "int32":
            value = binop("mul", value, E.const(8.0 if src.info.frac <= 3 else 1.0, src_dt))
            info = Info(dst_dt, src.info.mag * 8)
        if dst_dt == "float16" and not info.exact:
            info = info.with_(frac=24)
        out = self.result(src.dims, dst_dt, info, last)
        self.emit(out, iv, src.dims, [IterKind.SPATIAL] * len(iv),
                  BufferStore(out.buf, cast(dst_dt, value), tuple(iv)))

    def stage_stencil(self, last: bool) -> None:
        """out[i] = src[i] op src[i + 1] over one fewer element (static extents only)."""
        src = self.source("float32", rank=2)
        if not src.dims[1].static or src.dims[1].expr.value < 2:
            self.stage_map(last)
            return
        narrow = Dim(IntImm(src.dims[1].expr.value - 1, self.index), 0)
        dims = (src.dims[0], narrow)
        vi, vj = Var("vi", self.index), Var("vj", self.index)
        op = self.rng.choice(("add", "sub", "max"))
        value = binop(op, src.buf.vload(vi, vj), src.buf.vload(vi, vj + 1))
        out = self.result(dims, "float32", combine(op, src.info, src.info), last)
        self.emit(out, [vi, vj], dims, [IterKind.SPATIAL] * 2, BufferStore(out.buf, value,
                                                                           (vi, vj)))

    def stage_conv(self, last: bool) -> None:
        """out[f, j] = sum_{c, r} src[c, j + r] * w[f, c, r]: a one-dimensional convolution
        over channels (a window read; static widths only)."""
        src = self.source("float32", rank=2)
        taps = self.rng.choice((2, 3))
        if not src.dims[1].static or src.dims[1].expr.value < taps:
            self.stage_map(last)
            return
        chans, width = src.dims
        filters = self.dim()
        r = Dim(IntImm(taps, self.index), 0)
        w = self.input((filters, chans, r), "float32")
        narrow = Dim(IntImm(width.expr.value - taps + 1, self.index), 0)
        c = chans.value or chans.expr.value
        info = combine("mul", src.info, w.info)
        info = info.with_(mag=info.mag * max(1, c) * taps)
        if info.mag > _limit("float32"):
            self.stage_map(last)
            return
        out = self.result((filters, narrow), "float32", info, last)
        vf, vj, vc, vr = (Var(n, self.index) for n in ("vf", "vj", "vc", "vr"))
        acc = out.buf.vload(vf, vj)
        body = BufferStore(out.buf, binop("add", acc, binop(
            "mul", src.buf.vload(vc, vj + vr), w.buf.vload(vf, vc, vr))), (vf, vj))
        self.emit(out, [vf, vj, vc, vr], (filters, narrow, chans, r),
                  [IterKind.SPATIAL, IterKind.SPATIAL, IterKind.REDUCE, IterKind.REDUCE], body,
                  init=BufferStore(out.buf, E.const(0, "float32"), (vf, vj)))

    def stage_gather(self, last: bool) -> None:
        """Rows of a table picked by an index array, `src[floormod(ids[i], rows), k]` (an
        embedding lookup), or summed with weights over a fixed number of picks per row,
        `sum_j a[i, j] * src[floormod(ids[i, j], rows), k]` (SpMM over an ELL matrix); the
        indices are int32 inputs, in range by the floormod."""
        dt = self.rng.choice(("float32", "float32", "int32"))
        src = self.source(dt, rank=2)
        rows, feats = src.dims
        n = self.dim()
        vi, vk, vj = (Var(v, self.index) for v in ("vi", "vk", "vj"))

        def pick(*at: PrimExpr) -> PrimExpr:
            picked = binop("floormod", ids.buf.vload(*at), cast("int32", rows.expr))
            return src.buf.vload(cast(str(self.index), picked), vk)

        if self.rng.random() < 0.5:
            ids = self.input((n,), "int32")
            out = self.result((n, feats), dt, src.info, last)
            self.emit(out, [vi, vk], (n, feats), [IterKind.SPATIAL] * 2,
                      BufferStore(out.buf, pick(vi), (vi, vk)))
            return
        width = Dim(IntImm(self.rng.choice((1, 2, 3, 4, 8)), self.index), 0)
        ids = self.input((n, width), "int32")
        a = self.input((n, width), dt)
        info = combine("mul", a.info, src.info)
        info = info.with_(mag=info.mag * width.expr.value)
        out = self.result((n, feats), dt, info, last)
        acc = out.buf.vload(vi, vk)
        body = BufferStore(out.buf, binop("add", acc, binop("mul", a.buf.vload(vi, vj),
                                                            pick(vi, vj))), (vi, vk))
        self.emit(out, [vi, vk, vj], (n, feats, width),
                  [IterKind.SPATIAL, IterKind.SPATIAL, IterKind.REDUCE], body,
                  init=BufferStore(out.buf, E.const(0, dt), (vi, vk)))

    # ---- loop nests ------------------------------------------------------------------

    def emit(self, out: Tensor, ivars: list[Var], dims: tuple[Dim, ...], kinds: list[IterKind],
             body: Stmt, init: Stmt | None = None) -> None:
        """Wrap a block computing `out` in a random loop nest over `dims`."""
        reads, writes = infer_regions(body, init, set())
        block = Block(self.fresh(f"{self.name}_b"),
                      tuple(IterVar(v, Range(IntImm(0, self.index), d.expr), k)
                            for v, d, k in zip(ivars, dims, kinds)),
                      reads, writes, body, init)
        order = list(range(len(dims)))
        if kinds[-1] == IterKind.REDUCE and not self.plain and self.rng.random() < 0.3:
            order = [order[-1]] + order[:-1]          # the reduction loop outermost
        loops: list[tuple[Var, PrimExpr, ForKind]] = []
        values: list[PrimExpr] = [IntImm(0, self.index)] * len(dims)
        predicate: PrimExpr = IntImm(1, BOOL)
        style = self.rng.random() if not self.plain else 1.0
        if style < 0.15 and len(order) >= 2 and all(k == IterKind.SPATIAL for k in kinds):
            # One fused loop over every spatial axis.
            total: PrimExpr = dims[0].expr
            for d in dims[1:]:
                total = total * d.expr
            f = Var("f", self.index)
            rest: PrimExpr = f
            for k in reversed(range(len(dims))):
                values[k] = binop("floormod", rest, dims[k].expr) if k else rest
                if k:
                    rest = binop("floordiv", rest, dims[k].expr)
            loops.append((f, total, self.kind(kinds, [True])))
        else:
            conds: list[PrimExpr] = []
            for pos, k in enumerate(order):
                d = dims[k]
                spatial = [kinds[k] == IterKind.SPATIAL]
                first, innermost = pos == 0, pos == len(order) - 1
                if d.static and d.expr.value > 2 and not self.plain and self.rng.random() < 0.25:
                    factor = self.rng.choice((2, 3, 4))
                    outer_n = -(-d.expr.value // factor)
                    vo, vi = Var(f"i{k}o", self.index), Var(f"i{k}i", self.index)
                    loops.append((vo, IntImm(outer_n, self.index),
                                  self.kind(kinds, spatial, inner=False, outer=first)))
                    loops.append((vi, IntImm(factor, self.index),
                                  self.kind(kinds, spatial, inner=innermost, outer=False)))
                    values[k] = vo * factor + vi
                    if outer_n * factor != d.expr.value:
                        conds.append(binop("lt", values[k], d.expr))
                else:
                    v = Var(f"i{k}", self.index)
                    loops.append((v, d.expr, self.kind(kinds, spatial, inner=innermost,
                                                       outer=first)))
                    values[k] = v
            for c in conds:
                predicate = c if isinstance(predicate, IntImm) else binop("and", predicate, c)
        stmt: Stmt = BlockRealize(tuple(values), predicate, block)
        for v, extent, kind in reversed(loops):
            stmt = For(v, IntImm(0, self.index), extent, kind, stmt)
        self.stages.append(stmt)

    def kind(self, kinds: list[IterKind], spatial: list[bool], inner: bool = True,
             outer: bool = True) -> ForKind:
        """A legal loop kind: parallel, vectorized or unrolled only over spatial axes."""
        r = self.rng.random()
        if not all(spatial) or r < 0.6 or self.plain:
            return ForKind.SERIAL
        if r < 0.75 and outer:
            return ForKind.PARALLEL
        if r < 0.9 and inner:
            return ForKind.VECTORIZED
        return ForKind.UNROLLED if inner else ForKind.SERIAL

    def stage_scan(self) -> None:
        """out[i] = the sum of row i of a float32 matrix up to its first element above a
        threshold (`break`), or of its elements that are not below it (`continue`): a serial
        loop with a jump inside a block over the rows (which may be parallel)."""
        src = self.source("float32", rank=2)
        rows, cols = src.dims
        mag = src.info.mag * max(1, cols.value or cols.expr.value)
        if mag > _limit("float32"):
            return
        jump = self.rng.choice((BREAK_LOOP, CONTINUE_LOOP))
        threshold = E.const(self.rng.choice((-1, 0, 1, 2)) / 2, "float32")
        out = self.tensor((rows,), "float32", src.info.with_(mag=mag), "out")
        vi, k = Var("vi", self.index), Var("k", self.index)
        x = src.buf.vload(vi, k)
        test = binop("gt", x, threshold) if jump == BREAK_LOOP else binop("lt", x, threshold)
        loop = For(k, IntImm(0, self.index), cols.expr, ForKind.SERIAL,
                   seq(IfThenElse(test, Evaluate(E.call(jump, dt="int32"))),
                       BufferStore(out.buf, binop("add", out.buf.vload(vi), x), (vi,))))
        body = seq(BufferStore(out.buf, E.const(0, "float32"), (vi,)), loop)
        reads, writes = infer_regions(body, None, set())
        block = Block(self.fresh(f"{self.name}_scan"),
                      (IterVar(vi, Range(IntImm(0, self.index), rows.expr), IterKind.SPATIAL),),
                      reads, writes, body)
        i = Var("i", self.index)
        kind = ForKind.PARALLEL if not self.plain and self.rng.random() < 0.5 else ForKind.SERIAL
        self.stages.append(For(i, IntImm(0, self.index), rows.expr, kind,
                               BlockRealize((i,), IntImm(1, BOOL), block)))

    def stage_scratch(self) -> None:
        """out[i] = the sum over k in [lo, cols) of a row of `2 * src` staged in a scratch
        buffer local to the block (`T.alloc_buffer` in the block, one per row), the sum's
        loop starting at a non-zero `lo` (`T.serial(lo, cols)`)."""
        src = self.source("float32", rank=2)
        rows, cols = src.dims
        mag = 2 * src.info.mag * max(1, cols.value or cols.expr.value)
        if mag > _limit("float32") or not cols.static:
            return  # a GPU's local buffers have constant sizes
        out = self.tensor((rows,), "float32", src.info.with_(mag=mag), "out")
        scratch = make_buffer(self.fresh("S"), (cols.expr,), "float32", scope="local")
        vi, k, j = Var("vi", self.index), Var("k", self.index), Var("j", self.index)
        lo = IntImm(self.rng.choice((1, 2)), self.index)
        fill = For(k, IntImm(0, self.index), cols.expr, ForKind.SERIAL,
                   BufferStore(scratch, binop("mul", src.buf.vload(vi, k),
                                              E.const(2.0, "float32")), (k,)))
        extent = IntImm(max(0, cols.expr.value - lo.value), self.index)
        add = BufferStore(out.buf, binop("add", out.buf.vload(vi), scratch.vload(j)), (vi,))
        total = For(j, lo, extent, ForKind.SERIAL, add)
        body = seq(fill, BufferStore(out.buf, E.const(0, "float32"), (vi,)), total)
        reads, writes = infer_regions(body, None, {scratch})
        block = Block(self.fresh(f"{self.name}_scratch"),
                      (IterVar(vi, Range(IntImm(0, self.index), rows.expr), IterKind.SPATIAL),),
                      reads, writes, body, alloc_buffers=(scratch,))
        i = Var("i", self.index)
        kind = ForKind.PARALLEL if not self.plain and self.rng.random() < 0.5 else ForKind.SERIAL
        self.stages.append(For(i, IntImm(0, self.index), rows.expr, kind,
                               BlockRealize((i,), IntImm(1, BOOL), block)))

    def stage_total(self) -> None:
        """out[0] = init + the sum (or max) of every element of a matrix: one block with two
        reduction axes and a `T.init`, in a plain, reordered or fused-free nest."""
        dt = self.rng.choice(("float32", "int32"))
        src = self.source(dt, rank=2)
        rows, cols = src.dims
        op = self.rng.choice(("sum", "max"))
        count = max(1, rows.value or rows.expr.value) * max(1, cols.value or cols.expr.value)
        info = src.info.with_(mag=src.info.mag * count) if op == "sum" else src.info
        if info.mag > _limit(dt):
            op, info = "max", src.info
        one = Dim(IntImm(1, self.index), 0)
        out = self.tensor((one,), dt, info, "out")
        vi, vj = Var("vi", self.index), Var("vj", self.index)
        zero = IntImm(0, self.index)
        acc, load = out.buf.vload(zero), src.buf.vload(vi, vj)
        update = binop("add" if op == "sum" else "max", acc, load)
        self.emit(out, [vi, vj], (rows, cols), [IterKind.REDUCE, IterKind.REDUCE],
                  BufferStore(out.buf, update, (zero,)),
                  init=BufferStore(out.buf, _reduction_init(op, dt), (zero,)))

    # ---- the function ----------------------------------------------------------------

    def build(self) -> LoopProgram:
        n = self.rng.randint(1, MAX_STAGES)
        for k in range(n):
            self.stage(last=k == n - 1)
        jumps = random.Random(self.seed * 7919 + 17)
        if jumps.random() < 0.25:
            self.rng = jumps
            self.stage_scan()
        idioms = random.Random(self.seed * 7919 + 31)
        if idioms.random() < 0.2:
            self.rng = idioms
            self.rng.choice((self.stage_scratch, self.stage_total))()
        extras = random.Random(self.seed * 7919 + 43)
        if extras.random() < 0.2:
            self.rng = extras
            stage_extra(self)
        views = random.Random(self.seed * 7919 + 59)
        if views.random() < 0.25:
            self.rng = views
            stage_view(self)
        index = random.Random(self.seed * 7919 + 97)
        if index.random() < 0.2:
            self.rng = index
            stage_index(self)
        calls = random.Random(self.seed * 7919 + 101)
        if calls.random() < 0.125:
            self.rng = calls
            stage_call(self)
        body = seq(*self.stages)
        if self.allocs or self.plain:
            body = BlockRealize((), IntImm(1, BOOL), Block("root", (), (), (), body,
                                                           alloc_buffers=tuple(self.allocs)))
        handles = [Var(t.buf.name.lower(), HANDLE) for t in self.params]
        func = PrimFunc(self.name, tuple(handles),
                        {h: t.buf for h, t in zip(handles, self.params)}, body,
                        {"global_symbol": self.name})
        sizes = {d.expr.name: d.value for d in self.dims if not d.static}
        return LoopProgram(func, sizes, self.outputs, self.helpers)


def _reduction_init(op: str, dt: str) -> PrimExpr:
    """The identity of a sum, max or min (a value below or above every input for max/min)."""
    if op == "sum":
        return E.const(0, dt)
    if dt == "int32":
        return IntImm(-(1 << 31) if op == "max" else (1 << 31) - 1, dtype(dt))
    return E.const(-1e30 if op == "max" else 1e30, dt)


def _limit(dt: str) -> float:
    from difftest.values import MAGNITUDE_LIMIT

    return MAGNITUDE_LIMIT[dt]


def _broadcast_indices(src: tuple[Dim, ...], out: tuple[Dim, ...], idx: tuple[PrimExpr, ...]
                       ) -> tuple[PrimExpr, ...] | None:
    """Indices into a tensor of dims `src` at output position `idx`: the same dims, the
    output's trailing dims (a row broadcast), or its leading one (a column broadcast)."""
    if src == out:
        return idx
    if len(src) < len(out) and src == out[len(out) - len(src):]:
        return idx[len(out) - len(src):]
    if len(src) == 1 and src[0] == out[0]:
        return idx[:1]
    return None


def random_loop_program(seed: int, name: str | None = None) -> LoopProgram:
    """The loop function of `seed` (named `f<seed>` unless `name` is given)."""
    return _Gen(seed, name or f"f{seed}").build()


def loop_case(seed: int) -> Program:
    """The program of `seed` as the harness takes it (arguments drawn from the seed)."""
    prog = random_loop_program(seed)
    return Program(seed, prog.func.name, prog.func, loop_args(prog.func, prog.sizes),
                   prog.outputs, helpers=prog.helpers)


def empty_loop_case(seed: int) -> Program | None:
    """The program of `seed` with every symbolic size 0: its loops over them are empty, so
    reductions over them never run their init, and every level must leave what they would
    have written as the interpreter leaves it. A temporary such a reduction never writes
    holds undefined values (NaN in the interpreter, anything compiled), which later stages
    read: a NaN the interpreter gives matches anything. None for a program without symbolic
    sizes."""
    prog = random_loop_program(seed)
    if not prog.sizes:
        return None
    zero = dict.fromkeys(prog.sizes, 0)
    outputs = {k: dataclasses.replace(v, undefined_nan=True) for k, v in prog.outputs.items()}
    return Program(seed, prog.func.name, prog.func, loop_args(prog.func, zero), outputs,
                   helpers=prog.helpers)
