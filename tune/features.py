"""Per-store features of a candidate's lowered loop nest, for the cost models.

The candidate is lowered just past its blocks (lower-init, lower-blocks, compact-buffers), so
every store sits in plain loops with its indices in loop variables. For each store: the loops
around it (extent, kind), its floating-point operations, and for each buffer it touches the
stride of the flattened index along each loop (read by evaluating the index, so `//` and `%`
of fused and packed loops count as they behave near the origin). From these: how many bytes
the store moves at each cache level (the traffic into L1 and into L2: the footprint of the
loops below the outermost level whose footprint fits, times the trips of the loops above it),
its vector lanes, its independent accumulation chains (reuse of the accumulator across a
reduction loop), and the parallel loops' extent.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import field
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import BinOp, BufferLoad, Call, Cast, IntImm, PrimExpr, Select, Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

LOWERING = ("lower-init", "lower-blocks", "compact-buffers")
FLOAT_OPS = ("add", "sub", "mul", "div", "min", "max")
LINE = 64
UNKNOWN_EXTENT = 64  # a symbolic extent counts as this many iterations


@dataclass(frozen=True)
class Loop:
    var: Var
    extent: int
    kind: ForKind


@dataclass
class Access:
    """One buffer access of a store: element size, and per loop the stride of the flattened
    index and how many distinct places it reaches as that loop alone runs."""

    buffer: Buffer
    elem_bytes: int
    strides: list[int]
    write: bool
    distinct: list[int] = field(default_factory=list)


@dataclass
class Store:
    """A store with the loops around it (outermost first) and what its value computes."""

    loops: list[Loop]
    flops: int                 # floating-point operations per execution
    special: int               # math calls (exp, sqrt, ...) per execution
    accesses: list[Access] = field(default_factory=list)
    reduction: bool = False    # the stored location is also read by the value

    @property
    def trip(self) -> int:
        return math.prod(lp.extent for lp in self.loops)


def lower_for_features(func: PrimFunc) -> PrimFunc:
    """`func` with its blocks lowered to plain loops and its local buffers compacted."""
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pass_base import PassContext
    from tirc.passes.pipeline import build_pipeline

    mod = IRModule(functions={func.name: func})
    out = run_pipeline(mod, build_pipeline(LOWERING), PassContext(opt_level=3))
    result = out.functions[func.name]
    assert isinstance(result, PrimFunc)
    return result


def evaluate(e: Any, env: dict[Var, int]) -> int:
    """An integer index expression at the given loop values (unknown variables are 0)."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env.get(e, 0)
    if isinstance(e, Cast):
        return evaluate(e.value, env)
    if isinstance(e, Select):
        return evaluate(e.true_value, env)
    if isinstance(e, BinOp):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        if e.op == "add":
            return a + b
        if e.op == "sub":
            return a - b
        if e.op == "mul":
            return a * b
        if e.op in ("floordiv", "div"):
            return a // b if b else 0
        if e.op in ("floormod", "mod"):
            return a % b if b else 0
        if e.op == "min":
            return min(a, b)
        if e.op == "max":
            return max(a, b)
    return 0


def _extent(e: PrimExpr) -> int:
    return e.value if isinstance(e, IntImm) else UNKNOWN_EXTENT


def _row_strides(buf: Buffer) -> list[int]:
    dims = [_extent(d) for d in buf.shape]
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


def _access(buf: Buffer, indices: tuple[PrimExpr, ...], loops: list[Loop],
            write: bool) -> Access:
    rows = _row_strides(buf)

    def flat(env: dict[Var, int]) -> int:
        return sum(evaluate(i, env) * r for i, r in zip(indices, rows))

    base = flat({})
    strides, distinct = [], []
    for lp in loops:
        span, count = 0, 1
        for i, r in zip(indices, rows):
            sp, d = spread(i, lp.var, lp.extent)
            span, count = span + sp * r, count * d
        count = min(count, lp.extent, span + 1)
        step = abs(flat({lp.var: 1}) - base)
        if step == 0 and count > 1:  # a fused loop's `//` moves later: its mean step
            step = max(span // (count - 1), 1)
        strides.append(step if count > 1 else 0)
        distinct.append(count)
    return Access(buf, max(buf.dtype.bits // 8, 1) * buf.dtype.lanes, strides, write,
                  distinct)


def spread(e: Any, v: Var, extent: int) -> tuple[int, int]:
    """How far `e` moves and how many distinct values it takes as `v` runs over `extent`
    (the other variables fixed): exact for sums, constant multiples, `//` and `%` by
    constants of such terms, an upper bound otherwise."""
    if isinstance(e, Var):
        return (extent - 1, extent) if e is v else (0, 1)
    if isinstance(e, Cast):
        return spread(e.value, v, extent)
    if isinstance(e, BinOp):
        sa, da = spread(e.a, v, extent)
        sb, db = spread(e.b, v, extent)
        c = e.b.value if isinstance(e.b, IntImm) else None
        if e.op in ("add", "sub", "min", "max"):
            return sa + sb, min(da * db, sa + sb + 1)
        if e.op == "mul":
            k = c if c is not None else (e.a.value if isinstance(e.a, IntImm) else None)
            if k is not None:
                return (sa + sb) * abs(k), max(da, db)
        if e.op in ("floordiv", "div") and c:
            return -(-sa // abs(c)), min(da, -(-sa // abs(c)) + 1)
        if e.op in ("floormod", "mod") and c:
            return min(sa, abs(c) - 1), min(da, abs(c))
        return (sa + 1) * (sb + 1), da * db
    return 0, 1


def _value_ops(e: Any, loads: list[BufferLoad]) -> tuple[int, int]:
    """Floating-point operations and math calls in `e`; loads are collected."""
    if isinstance(e, BufferLoad):
        loads.append(e)
        return 0, 0
    flops = special = 0
    if isinstance(e, BinOp) and e.op in FLOAT_OPS and e.dtype.is_float:
        flops = 1
    if isinstance(e, Call) and e.dtype.is_float:
        special = 1
    kids: list[Any] = []
    if isinstance(e, (BinOp,)):
        kids = [e.a, e.b]
    elif isinstance(e, (Cast,)):
        kids = [e.value]
    elif isinstance(e, Select):
        kids = [e.condition, e.true_value, e.false_value]
    elif isinstance(e, Call):
        kids = list(e.args)
    for k in kids:
        f, s = _value_ops(k, loads)
        flops += f
        special += s
    return flops, special


def stores(stmt: Stmt, loops: list[Loop] | None = None) -> Iterator[Store]:
    """Every store under `stmt`, with its loops."""
    loops = loops or []
    if isinstance(stmt, For):
        yield from stores(stmt.body, loops + [Loop(stmt.loop_var, _extent(stmt.extent),
                                                   stmt.kind)])
    elif isinstance(stmt, SeqStmt):
        for s in stmt.seq:
            yield from stores(s, loops)
    elif isinstance(stmt, IfThenElse):
        yield from stores(stmt.then_case, loops)
        if stmt.else_case is not None:
            yield from stores(stmt.else_case, loops)
    elif isinstance(stmt, BlockRealize):
        yield from stores(stmt.block, loops)
    elif isinstance(stmt, Block):
        if stmt.init is not None:
            yield from stores(stmt.init, loops)
        yield from stores(stmt.body, loops)
    elif isinstance(stmt, (LetStmt, Allocate, AttrStmt)):
        yield from stores(stmt.body, loops)
    elif isinstance(stmt, BufferStore):
        loads: list[BufferLoad] = []
        flops, special = _value_ops(stmt.value, loads)
        st = Store(loops, flops, special)
        st.accesses.append(_access(stmt.buffer, stmt.indices, loops, True))
        for ld in loads:
            st.accesses.append(_access(ld.buffer, ld.indices, loops, False))
            if ld.buffer is stmt.buffer and ld.indices == stmt.indices:
                st.reduction = True
        yield st
    else:
        body = getattr(stmt, "body", None)
        if isinstance(body, Stmt):
            yield from stores(body, loops)


def footprint(st: Store, level: int) -> float:
    """Bytes of distinct cache lines the store touches while loops `level..` run."""
    total = 0.0
    seen: set[int] = set()
    for a in st.accesses:
        if id(a.buffer) in seen and not a.write:
            continue  # the accumulator read of a reduction is the written line
        seen.add(id(a.buffer))
        inner = [(s, d) for s, d in zip(a.strides[level:], a.distinct[level:]) if s]
        elements = math.prod(e for _, e in inner)
        contiguous = 1
        for stride, extent in sorted(inner):
            if stride == contiguous:  # loops that continue a dense run lengthen it
                contiguous *= extent
        run_bytes = contiguous * a.elem_bytes
        lines = elements / contiguous * math.ceil(run_bytes / LINE)
        total += lines * LINE
    return total


def traffic(st: Store, capacity: float) -> float:
    """Bytes moved into a cache of `capacity` bytes. Below the outermost loop level whose
    footprint fits, data stays; each iteration of the loop just above brings in that loop's
    own footprint (lines it shares with the next iteration counted once)."""
    depth = len(st.loops)
    fits = next((level for level in range(depth + 1) if footprint(st, level) <= capacity),
                depth)
    if fits == 0:
        return footprint(st, 0)
    return footprint(st, fits - 1) * math.prod(lp.extent for lp in st.loops[:fits - 1])


def vector_lanes(st: Store, machine_lanes: int) -> float:
    """The lanes the store's innermost vectorized loop fills (1 when scalar); a gather (a
    stride other than 0 or 1 along it) counts a quarter."""
    if not st.loops or st.loops[-1].kind != ForKind.VECTORIZED:
        return 1.0
    lanes = min(st.loops[-1].extent, machine_lanes)
    gather = any(a.strides[-1] not in (0, 1) for a in st.accesses)
    return max(lanes / 4, 1.0) if gather else float(lanes)


def accumulators(st: Store, machine_lanes: int) -> float:
    """Independent accumulation chains of a reduction inside its innermost reduction loop:
    unrolled and vectorized (in whole vectors) spatial loops below it; many for a store that
    carries no reduction."""
    target = st.accesses[0]
    inner_reduce = max((k for k, s in enumerate(target.strides) if s == 0), default=None)
    if not st.reduction or inner_reduce is None:
        return 64.0
    chains = 1.0
    for lp in st.loops[inner_reduce + 1:]:
        if lp.kind == ForKind.UNROLLED:
            chains *= lp.extent
        elif lp.kind == ForKind.VECTORIZED:
            chains *= max(lp.extent / machine_lanes, 1.0)
        elif lp.kind == ForKind.SERIAL:
            chains *= min(lp.extent, 2)  # LLVM interleaves a little
    return chains


def parallel_extent(st: Store) -> int:
    return math.prod(lp.extent for lp in st.loops if lp.kind == ForKind.PARALLEL)


def workload_cost(func: PrimFunc) -> tuple[float, float]:
    """The floating-point operations of an unscheduled function and the bytes of its
    parameter buffers (each read or written once at least)."""
    lowered = lower_for_features(func)
    flops = sum(st.flops * st.trip for st in stores(lowered.body))
    nbytes = sum(math.prod(_extent(d) for d in b.shape) * max(b.dtype.bits // 8, 1)
                 for b in func.buffers)
    return float(flops), float(nbytes)
