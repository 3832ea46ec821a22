"""CPU rule for matmul and batch matmul with their elementwise epilogue.

The block is `C[batch, i, j] += A[batch, i, k] * B[batch, k, j]` by its regions (block_info's
MatmulRoles). The output is cut into register tiles of `<block>_tile_i` rows by
`<block>_tile_j` columns: each tile accumulates in a local buffer (`cache_write`, which
compact-buffers shrinks to the tile so LLVM keeps it in vector registers) over the whole
reduction loop, unrolled by `<block>_unroll_k`, with the tile's rows unrolled and its columns
vectorized, so each loaded vector of B serves every row. The epilogue (bias, activation,
residual) reads the accumulators directly (the write-back is inlined into it) and runs per
tile; the tiles run in parallel, column panels outermost so a thread keeps its own panel of B.
With `<block>_pack_b` (on for large constant row counts), B is first copied into panels of
`tile_j` contiguous columns (cache_read + transform_layout) so the inner loop streams it.
Row counts that the tile does not divide (symbolic ones included) get a guarded last tile
(unswitch-guards and speculate-guards take the guards out of its reduction loop).
"""

from __future__ import annotations

from tirc.ir.expr import Var, binop
from tirc.ir.schedule import SchedLambda
from tirc.passes.schedule_rules.block_info import MatmulRoles, extent_product, matmul_roles
from tirc.passes.schedule_rules.nest import (
    const_extent,
    parallel_outer,
    place_epilogue,
    split_tile,
    vectorize_inner,
)
from tirc.passes.schedule_rules.rule import (
    RuleContext,
    ScheduleRule,
    info_of,
    loop_of,
    prefix,
)
from tirc.passes.schedule_rules.traced import TracedSchedule

PACK_MIN_ROWS = 256  # rows from which packing B pays for its copy


def is_matmul(roles: MatmulRoles | None) -> bool:
    """Rows and columns both (a matrix-vector product has one row or one column)."""
    return roles is not None and bool(roles.i) and bool(roles.j) and \
        extent_product(list(roles.i)) != 1 and extent_product(list(roles.j)) != 1


def row_tile(rows: int | None, preferred: int = 8, least: int = 4) -> int:
    """Rows of a register tile: `preferred`, or a divisor of a constant row count between
    `least` and it (no guarded tail), or the row count itself when it is smaller."""
    if rows is None or rows % preferred == 0:
        return preferred
    if rows < preferred:
        return rows
    return next((d for d in range(preferred, least - 1, -1) if rows % d == 0), preferred)


def packable(roles: MatmulRoles) -> bool:
    """B is laid out (batch.., k, j): its last two dimensions a reduction then a column."""
    dims = roles.b.dims
    k_vars = {iv.var for iv in roles.k}
    j_vars = {iv.var for iv in roles.j}
    return len(roles.k) == 1 and len(roles.j) == 1 and len(dims) >= 2 and \
        dims[-1] == frozenset(j_vars) and dims[-2] == frozenset(k_vars) and \
        all(len(d) <= 1 and not (d & (k_vars | j_vars)) for d in dims[:-2])


class Matmul(ScheduleRule):
    """Register-tiled matmul with its epilogue, B packed for large row counts."""

    name = "matmul"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        roles = matmul_roles(info)
        if not is_matmul(roles) or not info.is_simple_nest:
            return None
        assert roles is not None
        p = prefix(anchor)
        out_dt = roles.out.buffer.dtype
        lanes = ctx.lanes(out_dt)
        mm = sch.block(anchor)
        loops = sch.loops(mm)

        def lp(iv: object) -> object:
            return loop_of(info, loops, iv.var)  # type: ignore[attr-defined]

        outer_rows = [lp(iv) for iv in roles.i[:-1]]
        batch = [lp(iv) for iv in roles.batch] + outer_rows
        row, cols, red = lp(roles.i[-1]), [lp(iv) for iv in roles.j], [lp(iv) for iv in roles.k]
        sch.reorder(*batch, row, *cols, *red)
        col = sch.fuse(*cols)
        k = sch.fuse(*red)
        n_rows = const_extent(sch, row)
        n_cols = const_extent(sch, col)
        n_k = const_extent(sch, k)
        tj = 2 * lanes if n_cols is None or n_cols % (2 * lanes) == 0 or n_cols > 4 * lanes \
            else lanes if n_cols % lanes == 0 else n_cols
        ti = row_tile(n_rows)
        tk = 4 if n_k is not None and n_k % 4 == 0 else 1
        pack = n_rows is not None and n_rows * (extent_product(list(roles.i[:-1])) or 0) \
            >= PACK_MIN_ROWS and n_cols is not None and n_k is not None and \
            packable(roles)
        acc = sch.cache_write(mm, 0, ctx.accumulators)
        i0, i1 = split_tile(sch, f"{p}_tile_i", row, ti, [1, 2, 4, 6, 8, 12, 16])
        j0, j1 = split_tile(sch, f"{p}_tile_j", col, tj, [lanes // 2, lanes, 2 * lanes,
                                                            3 * lanes, 4 * lanes])
        k0, k1 = split_tile(sch, f"{p}_unroll_k", k, tk, [1, 2, 4, 8])
        # Column panels outermost when B is packed (each thread streams its own panels),
        # else row groups outermost (so the parallel loop fuses them with the panels even
        # when the row count is symbolic).
        packing = pack and sch.sample_choice(f"{p}_pack_b", [0, 1], 1)
        tiles = [j0, i0] if packing else [i0, j0]
        sch.reorder(*batch, *tiles, k0, k1, i1, j1)
        taken = [anchor] + place_epilogue(sch, acc, tiles[-1])
        init = sch.decompose_reduction(mm, k0)
        sch.unroll(k1)
        sch.unroll(i1)
        sch.vectorize(j1)
        vectorize_inner(sch, init)
        if packing:
            self.pack(sch, mm, roles, j1)
        parallel_outer(sch, [*batch, *tiles])
        return taken

    def pack(self, sch: TracedSchedule, mm: object, roles: MatmulRoles, j1: object) -> None:
        """B copied into panels of the tile's columns: (.., k, j) -> (.., j // w, k, j % w)."""
        width = const_extent(sch, j1)
        assert width is not None
        bp = sch.cache_read(mm, roles.b.buffer.name, "global")  # type: ignore[arg-type]
        nd = roles.b.buffer.ndim
        params = [Var(f"d{k}") for k in range(nd)]
        kk, jj = params[-2], params[-1]
        body = tuple(params[:-2]) + (binop("floordiv", jj, width), kk,
                                     binop("floormod", jj, width))
        sch.transform_layout(bp, ("write", 0), SchedLambda(tuple(params), body))
        loops = sch.loops(bp)
        _, inner = sch.split(loops[-1], [None, width])
        sch.vectorize(inner)
        sch.parallel(loops[0])
