"""Reductions on the GPU: a block per output element (register partials, then a tree over
shared memory), and rows: a reduction with the reductions and elementwise blocks after it
that work on the same rows, in one kernel of a block per row (softmax, RMS norm)."""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType
from tirc.ir.expr import BinOp, BufferLoad, PrimExpr, Var, binop, const
from tirc.ir.gpu.threads import barrier
from tirc.ir.ops.sinfo_util import INT64, const_dim, dim, dims_equal, product, simplify_dim
from tirc.ir.stmt import Block, BufferStore, For, ForKind, IfThenElse, IterKind, Stmt, seq
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.gpu.schedule_builders import (
    below,
    bound,
    ceil_div,
    guarded,
    i64,
    scratch_buffer,
    spatial_and_reduce,
    typed,
    unflatten,
)
from tirc.passes.graph.kernel import limit
from tirc.passes.graph.schedule_matmul import realize

MAX_REDUCE = 128       # most threads per block of a row reduction
REDUCERS = ("add", "mul", "max", "min")


def reduction_update(blk: Block) -> tuple[str, PrimExpr, PrimExpr] | None:
    """(op, rhs, init value) when the block is `C[idx] = C[idx] op rhs` with init
    `C[idx] = init`, rhs not reading C; else None."""
    store, init = blk.body, blk.init
    if not isinstance(store, BufferStore) or not isinstance(init, BufferStore) or \
            init.buffer is not store.buffer:
        return None
    v = store.value
    if not isinstance(v, BinOp) or v.op not in REDUCERS:
        return None
    for acc, rhs in ((v.a, v.b), (v.b, v.a)):
        if isinstance(acc, BufferLoad) and acc.buffer is store.buffer and \
                list(acc.indices) == list(store.indices) and \
                not _reads(rhs, store.buffer) and list(init.indices) == list(store.indices):
            return v.op, rhs, init.value
    return None


def _reads(e: PrimExpr, buf: Buffer) -> bool:
    """Whether `e` loads from `buf`."""
    found: list[bool] = []
    post_order_visit(e, lambda n: found.append(True) if isinstance(n, BufferLoad) and
                     n.buffer is buf else None)
    return bool(found)


def identity(op: str, dt: DType) -> PrimExpr:
    """The neutral value of a reduction operator in `dt`."""
    if op == "add":
        return const(0, dt)
    if op == "mul":
        return const(1, dt)
    return limit(dt, highest=(op == "min"))


def reduce_threads(total: PrimExpr) -> int:
    """Threads of a row-reduction block: a power of two, 32 to MAX_REDUCE, not far above the
    reduction's length when that is known."""
    c = const_dim(total)
    t = 32
    while t < MAX_REDUCE and (c is None or t < c):
        t *= 2
    return t


def block_reduction(blk: Block, scratch: list[Buffer]) -> Stmt:
    """A block per output element: strided partial folds, then a shared-memory tree."""
    sp_vars, sp_ext, _, rd_ext = spatial_and_reduce(blk)
    threads = reduce_threads(product(tuple(rd_ext)))
    bx, tx = Var(f"{blk.name}_bx", INT64), Var(f"{blk.name}_tx", INT64)
    sp_map = typed(dict(zip(sp_vars, unflatten(bx, sp_ext))))
    phases = reduction_phases(blk, sp_map, tx, threads, scratch)
    rows = product(tuple(sp_ext)) if sp_ext else dim(1)
    return bound(bx, rows, "blockIdx.x", seq(*phases))


def reduction_phases(blk: Block, sp_map: dict[Var, PrimExpr], tx: Var, threads: int,
                     scratch: list[Buffer]) -> list[Stmt]:
    """The reduction of `blk` at the output element `sp_map` by the `threads` threads of a
    block: strided partial folds in registers, a tree over shared memory (a barrier before
    each step), thread 0 stores `init op total`."""
    update = reduction_update(blk)
    assert update is not None
    op, rhs, init_value = update
    store = blk.body
    assert isinstance(store, BufferStore)
    _, _, rd_vars, rd_ext = spatial_and_reduce(blk)
    rd_total = product(tuple(rd_ext))
    dt = store.buffer.dtype
    red = scratch_buffer(f"{blk.name}_red", (threads,), dt, "shared")
    acc = scratch_buffer(f"{blk.name}_acc", (1,), dt, "local")
    scratch += [red, acc]
    r = Var(f"{blk.name}_r", INT64)
    pos = simplify_dim(binop("add", binop("mul", r, i64(threads)), tx))
    rd_map = typed(dict(zip(rd_vars, unflatten(pos, rd_ext))))

    def threads_do(body: Stmt) -> Stmt:
        return bound(tx, i64(threads), "threadIdx.x", body)

    fold = BufferStore(acc, binop(op, acc.vload(i64(0)), substitute(rhs, {**sp_map, **rd_map})),
                       (i64(0),))
    phases: list[Stmt] = [threads_do(seq(
        BufferStore(acc, identity(op, dt), (i64(0),)),
        For(r, i64(0), ceil_div(rd_total, threads), ForKind.SERIAL,
            guarded(below(pos, rd_total, threads), fold)),
        BufferStore(red, acc.vload(i64(0)), (tx,))))]
    half = threads // 2
    while half >= 1:
        other = binop("add", tx, i64(half))
        phases.append(barrier())
        phases.append(threads_do(IfThenElse(binop("lt", tx, i64(half)), BufferStore(
            red, binop(op, red.vload(tx), red.vload(other)), (tx,)))))
        half //= 2
    phases.append(barrier())
    result = binop(op, substitute(init_value, sp_map), red.vload(i64(0)))
    indices = tuple(substitute(i, sp_map) for i in store.indices)
    phases.append(threads_do(IfThenElse(binop("eq", tx, i64(0)),
                                        BufferStore(store.buffer, result, indices))))
    return phases


# ---- rows: reductions and the elementwise blocks around them in one kernel --------------


def row_dims(blk: Block) -> int | None:
    """How many leading spatial dimensions of a reduction block are its rows (the spatial
    dimensions after them all have extent 1, as keepdims leaves them); None when it is not
    a reduction with a known combiner, spatial iterators first."""
    if reduction_update(blk) is None:
        return None
    sp_vars, sp_ext, rd_vars, _ = spatial_and_reduce(blk)
    if [iv.var for iv in blk.iter_vars] != sp_vars + rd_vars:
        return None
    rows = len(sp_ext)
    while rows > 0 and const_dim(sp_ext[rows - 1]) == 1:
        rows -= 1
    return rows


def _row_aligned(blk: Block, rows: int, row_ext: list[PrimExpr], group: set[Buffer]) -> bool:
    """`blk` works on whole rows: its first `rows` iterators span them, its store and every
    load of a buffer the group writes are at the block's own row."""
    ivs = blk.iter_vars
    store = blk.body
    if len(ivs) < rows or not isinstance(store, BufferStore) or \
            any(iv.kind != IterKind.SPATIAL for iv in ivs[:rows]) or \
            any(not dims_equal(iv.dom.extent, e) for iv, e in zip(ivs, row_ext)):
        return False
    own = [iv.var for iv in ivs[:rows]]
    loads: list[BufferLoad] = []
    post_order_visit(store.value, lambda n: loads.append(n) if isinstance(n, BufferLoad) and
                     n.buffer in group else None)
    return all(len(x.indices) >= rows and list(x.indices[:rows]) == own
               for x in [store, *loads])


def _loaded(blk: Block) -> set[Buffer]:
    """The buffers the body of `blk` loads from."""
    found: set[Buffer] = set()
    post_order_visit(blk.body, lambda n: found.add(n.buffer) if isinstance(n, BufferLoad)
                     else None)
    return found


def row_group(blocks: list[Block], k: int) -> tuple[int, list[Block]]:
    """The row dimensions and the blocks from `k` on that run as one kernel, a block per row:
    a reduction with rows, then the row-aligned reductions and elementwise blocks after it."""
    rows = row_dims(blocks[k])
    if not rows:
        return 0, [blocks[k]]
    row_ext = [iv.dom.extent for iv in blocks[k].iter_vars[:rows]]
    group = [blocks[k]]
    written = {blocks[k].body.buffer}  # type: ignore[union-attr]
    if not _row_aligned(blocks[k], rows, row_ext, written):
        return 0, [blocks[k]]
    read = _loaded(blocks[k])
    for blk in blocks[k + 1:]:
        spatial = all(iv.kind == IterKind.SPATIAL for iv in blk.iter_vars)
        # (a block may not overwrite what an earlier one read: other rows may still read it)
        if not (spatial or row_dims(blk) == rows) or \
                blk.body.buffer in read - written or \
                not _row_aligned(blk, rows, row_ext, written):  # type: ignore[union-attr]
            break
        group.append(blk)
        written.add(blk.body.buffer)  # type: ignore[union-attr]
        read |= _loaded(blk)
    return rows, group


def row_kernel(group: list[Block], rows: int, scratch: list[Buffer]) -> Stmt:
    """The blocks of `group` one after another for one row per block, a barrier between
    them: reductions over a shared-memory tree, elementwise blocks strided over the
    threads."""
    first = group[0]
    row_ext = [iv.dom.extent for iv in first.iter_vars[:rows]]
    widths = [product(tuple(iv.dom.extent for iv in blk.iter_vars[rows:])) for blk in group]
    known = [const_dim(w) for w in widths]
    threads = reduce_threads(dim(max(known)) if None not in known else widths[0])
    bx, tx = Var(f"{first.name}_bx", INT64), Var(f"{first.name}_tx", INT64)
    row_vals = unflatten(bx, row_ext)
    phases: list[Stmt] = []
    for blk in group:
        if phases:
            phases.append(barrier())
        if any(iv.kind != IterKind.SPATIAL for iv in blk.iter_vars):
            sp_vars = spatial_and_reduce(blk)[0]
            sp_map = typed({v: row_vals[d] if d < rows else i64(0)
                            for d, v in enumerate(sp_vars)})
            phases += reduction_phases(blk, sp_map, tx, threads, scratch)
            continue
        inner = [iv.dom.extent for iv in blk.iter_vars[rows:]]
        total = product(tuple(inner)) if inner else dim(1)
        r = Var(f"{blk.name}_r", INT64)
        pos = simplify_dim(binop("add", binop("mul", r, i64(threads)), tx))
        body = realize(blk, row_vals + unflatten(pos, inner))
        phases.append(bound(tx, i64(threads), "threadIdx.x", For(
            r, i64(0), ceil_div(total, threads), ForKind.SERIAL,
            guarded(below(pos, total, threads), body))))
    return bound(bx, product(tuple(row_ext)), "blockIdx.x", seq(*phases))


