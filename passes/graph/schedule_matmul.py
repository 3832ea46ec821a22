"""The default CPU schedule of a matmul block and its elementwise epilogue.

The output is cut into tiles of `R` rows (4, then 2 and 1 for what is left) by `TILE`
columns. One parallel loop runs over the tiles; in it the tile's accumulators (a local
`R x TILE` buffer, kept in registers) are zeroed, accumulated over the reduction loop with the
columns vectorized innermost and the rows unrolled (each loaded weight vector serves R rows),
then the epilogue blocks (bias, activation) are applied to the tile and the result is stored.
A symbolic row count `n` gets a loop over `n // 4` groups of 4 rows, then over the 2-row and
1-row groups that remain (each skipped when empty). Intermediate buffers used only inside the
group become tile-local too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BinOp, BufferLoad, Call, PrimExpr, Var, binop, cast
from tirc.ir.ops.sinfo_util import INT64, const_dim, dim, dims_equal, product, simplify_dim
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
from tirc.passes.rebind import fresh_copy, rebind

TILE = (32, 16, 8)
ROWS = (4, 2, 1)

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
    """Accesses of buffers mapped to tile-local ones get the local indices."""

    def __init__(self, mapping: dict[Buffer, tuple[Buffer, Callable[[Indices], Indices]]]
                 ) -> None:
        self.mapping = mapping

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        new = self.generic_visit(e)
        if e.buffer in self.mapping:
            local, index = self.mapping[e.buffer]
            return BufferLoad(local, index(new.indices), e.dtype)
        return new

    def visit_BufferStore(self, s: BufferStore) -> Any:
        new = self.generic_visit(s)
        if s.buffer in self.mapping:
            local, index = self.mapping[s.buffer]
            return BufferStore(local, new.value, index(new.indices))
        return new

    def visit_BufferRegion(self, r: BufferRegion) -> Any:
        if r.buffer in self.mapping:
            local, index = self.mapping[r.buffer]
            return BufferRegion(local, tuple(point(i) for i in
                                             index(tuple(x.min for x in r.region))))
        return r


def tiled_matmul(mm: Block, chain: list[Block], tile_local: set[Buffer]) -> list[Stmt]:
    """The loop nests computing `mm` and its epilogue `chain` tile by tile."""
    spatial = [iv for iv in mm.iter_vars if iv.kind == IterKind.SPATIAL]
    last = const_dim(spatial[-1].dom.extent)
    assert last is not None
    tile = next(t for t in TILE if last % t == 0)
    if len(spatial) != 2:
        return [_nest(mm, chain, tile_local, tile, 1, ZERO, None)]
    n = spatial[0].dom.extent
    nests: list[Stmt] = []
    done: PrimExpr = ZERO
    for r in ROWS:
        # Rows left after the bigger groups: (n - done) // r groups of r rows each.
        groups = simplify_dim(binop("floordiv", binop("sub", n, done), dim(r)))
        if const_dim(groups) == 0:
            continue
        blocks = (mm, chain) if not nests else (fresh_copy(mm), [fresh_copy(b) for b in chain])
        nests.append(_nest(blocks[0], blocks[1], tile_local, tile, r, done, groups))
        done = simplify_dim(binop("add", done, binop("mul", groups, dim(r))))
    return nests


def _nest(mm: Block, chain: list[Block], tile_local: set[Buffer], tile: int, r: int,
          row_start: PrimExpr, groups: PrimExpr | None) -> Stmt:
    """One parallel loop over (row groups of `r` rows from `row_start`) x (column tiles);
    `groups` None: the rows are every spatial dimension but the last, fused."""
    spatial = [iv for iv in mm.iter_vars if iv.kind == IterKind.SPATIAL]
    reduce = [iv for iv in mm.iter_vars if iv.kind == IterKind.REDUCE]
    ncol = dim(const_dim(spatial[-1].dom.extent) // tile)  # type: ignore[operator]
    f = Var("tile", INT64)
    col = binop("floormod", f, ncol)
    if groups is None:
        row_ext = [iv.dom.extent for iv in spatial[:-1]] + [ncol]
        f, values, total = fused_loop(row_ext, "tile")
        col = values[-1]

        def rows_of(ri: PrimExpr) -> list[PrimExpr]:
            return values[:-1]
    else:
        total = simplify_dim(binop("mul", groups, ncol))
        group = binop("floordiv", f, ncol)

        def rows_of(ri: PrimExpr) -> list[PrimExpr]:
            row = binop("mul", group, dim(r)) if r > 1 else group
            if const_dim(row_start) != 0:
                row = binop("add", row_start, row)
            return [binop("add", row, ri) if r > 1 else row]

    def values_at(ri: PrimExpr, ji: Var) -> list[PrimExpr]:
        return rows_of(ri) + [binop("add", binop("mul", col, dim(tile)), ji)]

    def over_tile(make: Callable[[PrimExpr, Var], Stmt]) -> Stmt:
        ji = Var("j_inner", INT64)
        if r == 1:
            return For(ji, ZERO, dim(tile), ForKind.VECTORIZED, make(ZERO, ji))
        ri = Var("r_inner", INT64)
        return For(ri, ZERO, dim(r), ForKind.UNROLLED,
                   For(ji, ZERO, dim(tile), ForKind.VECTORIZED, make(ri, ji)))

    store = mm.body
    assert isinstance(store, BufferStore) and mm.init is not None
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
    update = over_tile(lambda ri, ji: realize(update_block, values_at(ri, ji) + red))
    for v, iv in reversed(list(zip(red, reduce))):
        update = For(v, ZERO, iv.dom.extent, ForKind.SERIAL, update)
    parts: list[Stmt] = [over_tile(lambda ri, ji: realize(init_block, values_at(ri, ji))),
                         update]
    for blk in chain:
        parts.append(over_tile(lambda ri, ji, blk=blk: realize(blk, values_at(ri, ji))))
    body = seq(*parts)
    body, allocs = _localize(body, mm, chain, tile_local, tile, r, row_start, parts, over_tile,
                             values_at)
    if allocs:
        scope = Block(f"{mm.name}_tile", (), (), (), body, alloc_buffers=allocs)
        body = BlockRealize((), TRUE, scope)
    loop = For(f, ZERO, total, ForKind.PARALLEL, body)
    if const_dim(total) is None:
        # A row count of 0 (the remainder when 4 divides n) starts no thread team.
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


def _localize(body: Stmt, mm: Block, chain: list[Block], tile_local: set[Buffer], tile: int,
              r: int, row_start: PrimExpr, parts: list[Stmt],
              over_tile: Callable[[Callable[[PrimExpr, Var], Stmt]], Stmt],
              values_at: Callable[[PrimExpr, Var], list[PrimExpr]]
              ) -> tuple[Stmt, tuple[Buffer, ...]]:
    """Accumulate in a local tile; tile-local buffers stay local, the matmul's own result is
    written back when something outside the group reads it."""
    store = mm.body
    assert isinstance(store, BufferStore)
    out = store.buffer
    local_of = sorted(tile_local | {out}, key=lambda b: b.name)
    mapping: dict[Buffer, tuple[Buffer, Callable[[Indices], Indices]]] = {}
    tdim = dim(tile)

    def index(idx: Indices) -> Indices:
        col = binop("floormod", idx[-1], tdim)
        if r == 1:
            return (col,)
        first = idx[-2] if const_dim(row_start) == 0 else binop("sub", idx[-2], row_start)
        return (binop("floormod", first, dim(r)), col)

    shape = (dim(tile),) if r == 1 else (dim(r), dim(tile))
    for b in local_of:
        local = Buffer(name=f"{b.name}_local", shape=shape, dtype=b.dtype,
                       data=Var(f"{b.name}_local", b.data.dtype), scope="local")
        mapping[b] = (local, index)
    body = _ToLocal(mapping).visit(body)
    if out not in tile_local:
        body = seq(body, _write_back(out, mapping[out][0], index, over_tile, values_at))
    return body, tuple(m[0] for m in mapping.values())


def _write_back(out: Buffer, local: Buffer, index: Callable[[Indices], Indices],
                over_tile: Callable[[Callable[[PrimExpr, Var], Stmt]], Stmt],
                values_at: Callable[[PrimExpr, Var], list[PrimExpr]]) -> Stmt:
    """`out[tile] = local[...]`: the accumulated tile stored to the real buffer."""
    vars_ = [Var(f"v{k}", INT64) for k in range(len(out.shape))]
    ivs = tuple(IterVar(v, Range(ZERO, d), IterKind.SPATIAL) for v, d in zip(vars_, out.shape))
    idx = tuple(vars_)
    blk = Block(f"{out.name}_store", ivs,
                (BufferRegion(local, tuple(point(i) for i in index(idx))),),
                (BufferRegion(out, tuple(point(v) for v in vars_)),),
                BufferStore(out, BufferLoad(local, index(idx), local.dtype), idx))
    return over_tile(lambda ri, ji: realize(blk, values_at(ri, ji)))
