"""The default GPU matmul: TILE x TILE outputs per block, one per thread, X and Y tiles staged
through shared memory between barriers; the elementwise epilogue applied in registers."""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import BinOp, BufferLoad, PrimExpr, Var, binop, cast, const
from tirc.ir.gpu.threads import barrier
from tirc.ir.ops.sinfo_util import INT64, product, simplify_dim
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import Block, BufferStore, For, ForKind, Stmt, seq
from tirc.ir.visitor import Mutator, substitute
from tirc.passes.gpu.schedule_builders import (
    below,
    both,
    bound,
    ceil_div,
    guarded,
    i64,
    scratch_buffer,
    spatial_and_reduce,
    typed,
    unflatten,
)
from tirc.passes.gpu.schedule_reduction import reduction_update

TILE = 16              # matmul tile edge (TILE x TILE threads per block)


def matmul_operands(blk: Block) -> tuple[PrimExpr, PrimExpr] | None:
    """(X, Y) of a block `C[..] = C[..] + X * Y` over spatial iterators (batch.., i, j) then
    one reduction iterator k, X free of j and Y free of i; else None."""
    update = reduction_update(blk)
    if update is None or update[0] != "add":
        return None
    sp_vars, _, rd_vars, _ = spatial_and_reduce(blk)
    if len(sp_vars) < 2 or len(rd_vars) != 1 or \
            [iv.var for iv in blk.iter_vars] != sp_vars + rd_vars:
        return None
    prod = update[1]
    if not isinstance(prod, BinOp) or prod.op != "mul":
        return None
    i, j = sp_vars[-2], sp_vars[-1]
    for x, y in ((prod.a, prod.b), (prod.b, prod.a)):
        xv, yv = used_vars(x), used_vars(y)
        if j not in xv and i not in yv:
            return x, y
    return None


def tiled_matmul(blk: Block, x: PrimExpr, y: PrimExpr, scratch: list[Buffer],
                 chain: list[Block] | None = None, private: set[Buffer] | None = None) -> Stmt:
    """TILE x TILE outputs per block, X and Y staged through shared memory (see the module
    docstring). The elementwise `chain` after the matmul (its epilogue, as default-schedule's
    `epilogue` finds it) is applied by each thread to its output element in registers; buffers
    in `private` are used only there and are not stored."""
    update = reduction_update(blk)
    assert update is not None
    init_value = update[2]
    store = blk.body
    assert isinstance(store, BufferStore)
    sp_vars, sp_ext, rd_vars, rd_ext = spatial_and_reduce(blk)
    k, kext = rd_vars[0], rd_ext[0]
    i, j = sp_vars[-2], sp_vars[-1]
    m, n = sp_ext[-2], sp_ext[-1]
    name = blk.name
    xs = scratch_buffer(f"{name}_x_tile", (TILE, TILE), x.dtype, "shared")
    ys = scratch_buffer(f"{name}_y_tile", (TILE, TILE), y.dtype, "shared")
    acc = scratch_buffer(f"{name}_acc", (1,), store.buffer.dtype, "local")
    scratch += [xs, ys, acc]
    bz, by, bx = (Var(f"{name}_b{c}", INT64) for c in "zyx")
    ty, tx = Var(f"{name}_ty", INT64), Var(f"{name}_tx", INT64)
    kt, kk = Var(f"{name}_kt", INT64), Var(f"{name}_kk", INT64)
    row = simplify_dim(binop("add", binop("mul", by, i64(TILE)), ty))
    col = simplify_dim(binop("add", binop("mul", bx, i64(TILE)), tx))
    batch = dict(zip(sp_vars[:-2], unflatten(bz, sp_ext[:-2])))
    zero = i64(0)

    def threads_do(body: Stmt) -> Stmt:
        return bound(ty, i64(TILE), "threadIdx.y", bound(tx, i64(TILE), "threadIdx.x", body))

    def k_at(t: Var) -> PrimExpr:
        return simplify_dim(binop("add", binop("mul", kt, i64(TILE)), t))

    x_at = substitute(x, typed({**batch, i: row, k: k_at(tx)}))
    y_at = substitute(y, typed({**batch, j: col, k: k_at(ty)}))
    load = seq(
        guarded(both(below(row, m, TILE), below(k_at(tx), kext, TILE)),
                BufferStore(xs, x_at, (ty, tx)), BufferStore(xs, const(0, x.dtype), (ty, tx))),
        guarded(both(below(k_at(ty), kext, TILE), below(col, n, TILE)),
                BufferStore(ys, y_at, (ty, tx)), BufferStore(ys, const(0, y.dtype), (ty, tx))))
    term = binop("mul", xs.vload(ty, kk), ys.vload(kk, tx))
    step = For(kk, zero, i64(TILE), ForKind.SERIAL, BufferStore(
        acc, binop("add", acc.vload(zero), cast(acc.dtype, term)), (zero,)))
    k_loop = For(kt, zero, ceil_div(kext, TILE), ForKind.SERIAL,
                 seq(threads_do(load), barrier(), threads_do(step), barrier()))
    out_map = {**batch, i: row, j: col}
    total = binop("add", substitute(init_value, typed(out_map)), acc.vload(zero))
    write = epilogue_stores(blk, total,
                            [out_map[v] for v in sp_vars], chain or [], private or set(),
                            scratch)
    body = seq(threads_do(BufferStore(acc, const(0, acc.dtype), (zero,))), k_loop,
               threads_do(guarded(both(below(row, m, TILE), below(col, n, TILE)), write)))
    stmt: Stmt = bound(bx, ceil_div(n, TILE), "blockIdx.x", body)
    stmt = bound(by, ceil_div(m, TILE), "blockIdx.y", stmt)
    if sp_vars[:-2]:
        stmt = bound(bz, product(tuple(sp_ext[:-2])), "blockIdx.z", stmt)
    return stmt


class _Registers(Mutator):
    """Loads of the epilogue's buffers (at the thread's own element) read its registers."""

    def __init__(self, regs: dict[Buffer, Buffer]) -> None:
        self.regs = regs

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        if e.buffer in self.regs:
            return self.regs[e.buffer].vload(i64(0))
        return self.generic_visit(e)


def epilogue_stores(mm: Block, value: PrimExpr, at: list[PrimExpr], chain: list[Block],
                    private: set[Buffer], scratch: list[Buffer]) -> Stmt:
    """The matmul's result `value` at output index `at`, then each epilogue block's value
    there: each kept in a register (a local buffer), and stored unless it is `private`."""
    store = mm.body
    assert isinstance(store, BufferStore)
    regs: dict[Buffer, Buffer] = {}
    stmts: list[Stmt] = []

    def emit(buf: Buffer, v: PrimExpr, name: str) -> None:
        reg = scratch_buffer(f"{name}_reg", (1,), buf.dtype, "local")
        scratch.append(reg)
        stmts.append(BufferStore(reg, v, (i64(0),)))
        if buf not in private:
            stmts.append(BufferStore(buf, reg.vload(i64(0)), tuple(at)))
        regs[buf] = reg

    emit(store.buffer, value, mm.name)
    for blk in chain:
        s = blk.body
        assert isinstance(s, BufferStore)
        v = substitute(s.value, typed({iv.var: a for iv, a in zip(blk.iter_vars, at)}))
        emit(s.buffer, _Registers(regs).visit(v), blk.name)
    return seq(*stmts)
