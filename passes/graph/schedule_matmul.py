"""The default CPU schedule of a matmul block and its elementwise epilogue.

The output is cut into tiles of `ROWS` rows by `TILE` columns. One parallel loop runs over
the tiles, column tiles outermost (each thread reads its own columns of the weights); in it the
tile's accumulators (a local `ROWS x TILE` buffer, kept in registers) are zeroed, accumulated
over the reduction loop with the columns vectorized innermost and the rows unrolled (each
loaded weight vector serves every row), then the epilogue blocks (bias, activation) are
applied to the tile and the result is stored. A row count `n` that `ROWS` does not divide
(symbolic included) gets `ceil(n / ROWS)` row groups, the rows past the end clamped to row
`n - 1` (computed twice, stored with the same value): one parallel region, no remainder
loops. One row (a matrix-vector product, `n == 1` at run time) gets a one-row nest of wider
tiles instead. Intermediate buffers used only inside the group become tile-local too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BinOp, BufferLoad, Call, PrimExpr, Var, binop, cast
from tirc.ir.ops.sinfo_util import INT64, const_dim, dim, dims_equal, product, simplify_dim
from tirc.ir.rebind import fresh_copy, rebind
from tirc.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, post_order_visit
from tirc.passes.graph.annotate_op_pattern import is_fma
from tirc.passes.graph.kernel import TRUE, ZERO, point

TILE = (32, 16, 8)  # columns of a register tile: the first that divides the output's width
ROWS = 8  # rows of a register tile
WIDE = (128, 64, 32, 16, 8)  # columns of a one-row tile (a matrix-vector product)

Indices = tuple[PrimExpr, ...]


def fused_loop(extents: list[PrimExpr], name: str) -> tuple[Var, list[PrimExpr], PrimExpr]:
    """One loop over the product of `extents`, and each dimension's index in it."""
    f = Var(name, INT64)
    total = product(extents)
    values = []
    stride: PrimExpr = dim(1)
    for e in reversed(extents):
        q = binop("floordiv", f, simplify_dim(stride)) if const_dim(stride) != 1 else f
        values.append(binop("floormod", q, e) if len(values) < len(extents) - 1 else q)
        stride = binop("mul", stride, e)
    return f, list(reversed(values)), total


def realize(block: Block, values: list[PrimExpr]) -> BlockRealize:
    """`block` bound to `values`, each in the dtype of its iteration variable."""
    return BlockRealize(tuple(cast(iv.var.dtype, v) for iv, v in zip(block.iter_vars, values)),
                        TRUE, block)


def is_matmul(blk: Block) -> bool:
    """A multiply-accumulate block, spatial iterators first, whose last output dimension is a
    constant multiple of 8 and whose store is at its spatial iterators."""
    spatial = [iv for iv in blk.iter_vars if iv.kind == IterKind.SPATIAL]
    reduce = [iv for iv in blk.iter_vars if iv.kind == IterKind.REDUCE]
    if not spatial or not reduce or blk.init is None or not isinstance(blk.body, BufferStore) \
            or not is_fma(blk.body) or blk.iter_vars[: len(spatial)] != tuple(spatial):
        return False
    last = const_dim(spatial[-1].dom.extent)
    return last is not None and last % 8 == 0 and \
        list(blk.body.indices) == [iv.var for iv in spatial]


def _loads(e: Any) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def epilogue(blocks: list[Block], k: int) -> list[int]:
    """Indices of the elementwise blocks after the matmul `blocks[k]` that can run per tile:
    over the same index space, reading the group's buffers only at their own element."""
    store = blocks[k].body
    assert isinstance(store, BufferStore)
    chain_bufs = {store.buffer}
    shape = store.buffer.shape
    chain: list[int] = []
    for j in range(k + 1, len(blocks)):
        blk = blocks[j]
        s = blk.body
        ivars = [iv.var for iv in blk.iter_vars]
        if not isinstance(s, BufferStore) or list(s.indices) != ivars or \
                any(iv.kind != IterKind.SPATIAL for iv in blk.iter_vars) or \
                len(ivars) != len(shape) or \
                not all(dims_equal(iv.dom.extent, d) for iv, d in zip(blk.iter_vars, shape)):
            break
        group_loads = [ld for ld in _loads(s.value) if ld.buffer in chain_bufs]
        if not group_loads or any(list(ld.indices) != ivars for ld in group_loads):
            break
        chain.append(j)
        chain_bufs.add(s.buffer)
    return chain


def tile_local_buffers(group: list[Block], others: list[Block], root: Block) -> set[Buffer]:
    """Buffers written in the group (but for its last block) that nothing else touches."""
    written = [b.body.buffer for b in group[:-1]]  # type: ignore[union-attr]
    elsewhere = {ld.buffer for blk in others for ld in _loads(blk.body)} | \
        {blk.body.buffer for blk in others}  # type: ignore[union-attr]
    return {b for b in written if b in root.alloc_buffers and b not in elsewhere}


class _ToLocal(Mutator):
    """Accesses of the group's buffers become accesses of their tile-local copies at the
    block's position in the tile, `index`."""

    def __init__(self, mapping: dict[Buffer, Buffer], index: Indices) -> None:
        self.mapping = mapping
        self.index = index

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        new = self.generic_visit(e)
        if e.buffer in self.mapping:
            return BufferLoad(self.mapping[e.buffer], self.index, e.dtype)
        return new

    def visit_BufferStore(self, s: BufferStore) -> Any:
        new = self.generic_visit(s)
        if s.buffer in self.mapping:
            return BufferStore(self.mapping[s.buffer], new.value, self.index)
        return new

    def visit_BufferRegion(self, r: BufferRegion) -> Any:
        if r.buffer in self.mapping:
            return BufferRegion(self.mapping[r.buffer], tuple(point(i) for i in self.index))
        return r


@dataclasses.dataclass(frozen=True)
class _Localizer:
    """Gives a block its position in the tile (row `v_r` when there are several rows, column
    `v_c`) as extra iteration variables, and its group buffers' accesses at that position of
    the tile-local buffers. Every group access is at the block's own element (see
    `epilogue`), so the position names it; a row computed twice gets the same position."""

    mapping: dict[Buffer, Buffer]
    rows: int
    tile: int

    def block(self, blk: Block) -> Block:
        """`blk` with its position in the tile and its group accesses made local."""
        extra, index = self.position()
        new = _ToLocal(self.mapping, index).visit(blk)
        return dataclasses.replace(new, iter_vars=tuple(new.iter_vars) + tuple(extra))

    def position(self) -> tuple[list[IterVar], Indices]:
        """New iteration variables for a position in the tile, and the local index."""
        vc = Var("v_c", INT64)
        extra = [IterVar(vc, Range(ZERO, dim(self.tile)), IterKind.SPATIAL)]
        if self.rows == 1:
            return extra, (vc,)
        vr = Var("v_r", INT64)
        return [IterVar(vr, Range(ZERO, dim(self.rows)), IterKind.SPATIAL)] + extra, (vr, vc)

    def write_back(self, out: Buffer) -> Block:
        """`out[i, j] = out_local[r, c]`: the accumulated tile stored to the real buffer."""
        local = self.mapping[out]
        extra, index = self.position()
        vars_ = [Var(f"v{k}", INT64) for k in range(len(out.shape))]
        ivs = tuple(IterVar(v, Range(ZERO, d), IterKind.SPATIAL)
                    for v, d in zip(vars_, out.shape))
        return Block(f"{out.name}_store", ivs + tuple(extra),
                     (BufferRegion(local, tuple(point(i) for i in index)),),
                     (BufferRegion(out, tuple(point(v) for v in vars_)),),
                     BufferStore(out, BufferLoad(local, index, local.dtype), tuple(vars_)))


def _widest(widths: tuple[int, ...], last: int) -> int:
    """The first of `widths` that divides `last` (8 always does)."""
    return next(t for t in widths if last % t == 0)


def tiled_matmul(mm: Block, chain: list[Block], tile_local: set[Buffer]) -> list[Stmt]:
    """The loop nests computing `mm` and its epilogue `chain` tile by tile. The rows are every
    output dimension but the last (a batch of matrices: its rows one after the other)."""
    spatial = [iv for iv in mm.iter_vars if iv.kind == IterKind.SPATIAL]
    last = const_dim(spatial[-1].dom.extent)
    assert last is not None
    n = simplify_dim(product([iv.dom.extent for iv in spatial[:-1]]))
    rows = const_dim(n)
    if rows is not None and rows <= 1:
        return [_nest(mm, chain, tile_local, _widest(WIDE, last), 1, n)]
    tiled = _nest(mm, chain, tile_local, _widest(TILE, last), ROWS, n)
    if rows is not None:
        return [tiled]
    # One row (a matrix-vector product): one row of wide tiles, no rows computed twice.
    one = _nest(fresh_copy(mm), [fresh_copy(b) for b in chain], tile_local,
                _widest(WIDE, last), 1, n)
    return [IfThenElse(binop("eq", n, dim(1)), one, tiled)]


def _unflatten(m: PrimExpr, extents: list[PrimExpr]) -> list[PrimExpr]:
    """The indices of row-major position `m` in a space of `extents`."""
    out: list[PrimExpr] = []
    for e in reversed(extents[1:]):
        out.append(binop("floormod", m, e))
        m = binop("floordiv", m, e)
    return [m] + list(reversed(out))


def _nest(mm: Block, chain: list[Block], tile_local: set[Buffer], tile: int, r: int,
          n: PrimExpr) -> Stmt:
    """One parallel loop over (column tiles) x (groups of `r` of the `n` rows), column tiles
    outermost so that each thread reads its own part of the weights; the last group's rows
    past `n` repeat row `n - 1`."""
    spatial = [iv for iv in mm.iter_vars if iv.kind == IterKind.SPATIAL]
    reduce = [iv for iv in mm.iter_vars if iv.kind == IterKind.REDUCE]
    lead = [iv.dom.extent for iv in spatial[:-1]]
    ncol = dim(const_dim(spatial[-1].dom.extent) // tile)  # type: ignore[operator]
    f = Var("tile", INT64)
    groups = simplify_dim(binop("floordiv", binop("add", n, dim(r - 1)), dim(r)))
    total = simplify_dim(binop("mul", groups, ncol))
    col = binop("floordiv", f, groups)
    group = binop("floormod", f, groups)
    rows = const_dim(n)
    exact = rows is not None and rows % r == 0

    def rows_of(ri: PrimExpr) -> list[PrimExpr]:
        if r == 1:
            return _unflatten(group, lead)
        row = binop("add", binop("mul", group, dim(r)), ri)
        return _unflatten(row if exact else binop("min", row, binop("sub", n, dim(1))), lead)

    def values_at(ri: PrimExpr, ji: Var) -> list[PrimExpr]:
        return rows_of(ri) + [binop("add", binop("mul", col, dim(tile)), ji)]

    def over_tile(blk: Block) -> Stmt:
        """`blk` (with its tile position as its last iteration variables) over the tile."""
        ji = Var("j_inner", INT64)
        if r == 1:
            return For(ji, ZERO, dim(tile), ForKind.VECTORIZED,
                       realize(blk, values_at(ZERO, ji) + [ji]))
        ri = Var("r_inner", INT64)
        inner = For(ji, ZERO, dim(tile), ForKind.VECTORIZED,
                    realize(blk, values_at(ri, ji) + [ri, ji]))
        return For(ri, ZERO, dim(r), ForKind.UNROLLED, inner)

    store = mm.body
    assert isinstance(store, BufferStore) and mm.init is not None
    out = store.buffer
    local_of = sorted(tile_local | {out}, key=lambda b: b.name)
    shape = (dim(tile),) if r == 1 else (dim(r), dim(tile))
    mapping = {b: Buffer(name=f"{b.name}_local", shape=shape, dtype=b.dtype,
                         data=Var(f"{b.name}_local", b.data.dtype), scope="local")
               for b in local_of}
    local = _Localizer(mapping, r, tile)

    init_vars = [Var(iv.var.name, iv.var.dtype) for iv in spatial]
    init_store = rebind(mm.init, dict(zip([iv.var for iv in spatial], init_vars)))
    init_block = Block(f"{mm.name}_init",
                       tuple(IterVar(v, iv.dom, IterKind.SPATIAL)
                             for v, iv in zip(init_vars, spatial)), (),
                       (BufferRegion(store.buffer, tuple(point(v) for v in init_vars)),),
                       init_store)
    update_block = dataclasses.replace(mm, name=f"{mm.name}_update", init=None,
                                       body=_as_fma(store))
    red = [Var(f"k{k}", INT64) for k in range(len(reduce))]
    update_local = local.block(update_block)
    ji = Var("j_inner", INT64)
    if r == 1:
        update: Stmt = For(ji, ZERO, dim(tile), ForKind.VECTORIZED,
                           realize(update_local, values_at(ZERO, ji) + red + [ji]))
    else:
        ri = Var("r_inner", INT64)
        update = For(ri, ZERO, dim(r), ForKind.UNROLLED,
                     For(ji, ZERO, dim(tile), ForKind.VECTORIZED,
                         realize(update_local, values_at(ri, ji) + red + [ri, ji])))
    for v, iv in reversed(list(zip(red, reduce))):
        update = For(v, ZERO, iv.dom.extent, ForKind.SERIAL, update)
    parts: list[Stmt] = [over_tile(local.block(init_block)), update]
    parts += [over_tile(local.block(blk)) for blk in chain]
    if out not in tile_local:
        parts.append(over_tile(local.write_back(out)))
    scope = Block(f"{mm.name}_tile", (), (), (), seq(*parts),
                  alloc_buffers=tuple(mapping.values()))
    loop = For(f, ZERO, total, ForKind.PARALLEL, BlockRealize((), TRUE, scope))
    if const_dim(total) is None:
        # No rows: no thread team.
        return IfThenElse(binop("gt", total, ZERO), loop)
    return loop


def _as_fma(store: BufferStore) -> BufferStore:
    """`C = C + A * B` as `C = T.fma(A, B, C)` (one rounding; the CPU's fused multiply-add)."""
    v = store.value
    assert isinstance(v, BinOp)
    acc, prod = (v.a, v.b) if isinstance(v.b, BinOp) and v.b.op == "mul" else (v.b, v.a)
    if not (isinstance(prod, BinOp) and prod.op == "mul" and prod.dtype.is_float
            and prod.dtype == acc.dtype):
        return store
    return dataclasses.replace(store, value=Call("fma", (prod.a, prod.b, acc), acc.dtype))
