"""Small builders the default GPU schedules share: thread-bound loops, bounds checks, flat
indices, scratch buffers, and a grid of one element per thread."""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, DType
from tirc.ir.expr import IntImm, PrimExpr, Var, binop, cast
from tirc.ir.ops.sinfo_util import INT64, const_dim, simplify_dim
from tirc.ir.stmt import Block, For, ForKind, IfThenElse, IterKind, Stmt
from tirc.ir.visitor import substitute
from tirc.passes.graph.schedule_matmul import fused_loop

THREADS = 256          # threads per block of an elementwise kernel


def i64(v: int) -> PrimExpr:
    """An int64 constant."""
    return IntImm(v, INT64)


def ceil_div(a: PrimExpr, b: int) -> PrimExpr:
    """`(a + b - 1) // b`, folded when `a` is constant."""
    return simplify_dim(binop("floordiv", binop("add", a, i64(b - 1)), i64(b)))


def bound(var: Var, extent: PrimExpr, tag: str, body: Stmt) -> For:
    """`for var in T.thread_binding(extent, thread=tag): body`."""
    return For(var, i64(0), extent, ForKind.THREAD_BINDING, body, thread_tag=tag)


def guarded(cond: PrimExpr | None, body: Stmt, other: Stmt | None = None) -> Stmt:
    """`if cond: body` (else `other`), or just `body` when there is nothing to check."""
    return body if cond is None else IfThenElse(cond, body, other)


def below(value: PrimExpr, extent: PrimExpr, step: int) -> PrimExpr | None:
    """`value < extent`, or None when `extent` is a constant multiple of `step` (the check
    always holds for indices built as `block * step + thread`)."""
    c = const_dim(extent)
    if c is not None and c % step == 0:
        return None
    return binop("lt", value, extent)


def both(a: PrimExpr | None, b: PrimExpr | None) -> PrimExpr | None:
    """`a and b`, either of which may be absent (None: nothing to check)."""
    if a is None or b is None:
        return a if b is None else b
    return binop("and", a, b)


def unflatten(flat: PrimExpr, extents: list[PrimExpr]) -> list[PrimExpr]:
    """The index of each dimension of `extents` at row-major position `flat`."""
    if not extents:
        return []
    f, values, _ = fused_loop(extents, "flat")
    return [simplify_dim(substitute(v, {f: flat})) for v in values]


def scratch_buffer(name: str, shape: tuple[int, ...], dt: DType, scope: str) -> Buffer:
    """A shared or local buffer of constant shape that a schedule adds."""
    return Buffer(name=name, shape=tuple(i64(d) for d in shape), dtype=dt,
                  data=Var(name, HANDLE), scope=scope)


def spatial_and_reduce(blk: Block) -> tuple[list[Var], list[PrimExpr], list[Var],
                                             list[PrimExpr]]:
    """The spatial iterators and extents, then the reduction ones, of a block."""
    sp = [iv for iv in blk.iter_vars if iv.kind == IterKind.SPATIAL]
    rd = [iv for iv in blk.iter_vars if iv.kind != IterKind.SPATIAL]
    return ([iv.var for iv in sp], [iv.dom.extent for iv in sp], [iv.var for iv in rd],
            [iv.dom.extent for iv in rd])


def over_grid(total: PrimExpr, name: str, body: Callable[[PrimExpr], Stmt]) -> Stmt:
    """Blocks of up to THREADS threads over `total` flat positions; `body(flat)` per thread."""
    c = const_dim(total)
    threads = THREADS if c is None else max(1, min(THREADS, c))
    bx, tx = Var(f"{name}_bx", INT64), Var(f"{name}_tx", INT64)
    flat = simplify_dim(binop("add", binop("mul", bx, i64(threads)), tx))
    inner = guarded(below(flat, total, threads), body(flat))
    return bound(bx, ceil_div(total, threads), "blockIdx.x",
                 bound(tx, i64(threads), "threadIdx.x", inner))


def typed(mapping: dict[Var, PrimExpr]) -> dict[Var, PrimExpr]:
    """`mapping` with each value cast to its variable's dtype (int32 iterators of a block get
    int32 indices, so the expressions they are substituted into keep their dtype)."""
    return {v: cast(v.dtype, e) for v, e in mapping.items()}
