"""GPU rule for matmul and batch matmul with their epilogue: shared-memory tiles.

A GPU block computes a tile of `<block>_tile` x `<block>_tile` outputs, one per thread
(threadIdx.y over rows, threadIdx.x over columns), batch dimensions on blockIdx.z. The
reduction runs at block level in steps of `<block>_tile_k`: per step the threads copy a tile
of A and a tile of B into shared memory (`cache_read` "shared", `compute_at` the step, each
copy spread over the threads), meet at a barrier (gpu-storage-sync), and each adds its row of
A times its column of B into its output, accumulated in shared memory (`cache_write`
"shared"). The epilogue then reads the accumulator per thread (the write-back inlined into
it). Rows and columns the tile does not divide are guarded; compact-buffers shrinks the
shared buffers to the tiles.
"""

from __future__ import annotations

from tirc.passes.schedule_rules.block_info import matmul_roles
from tirc.passes.schedule_rules.cpu_matmul import is_matmul
from tirc.passes.schedule_rules.nest import const_extent, own_count, place_epilogue
from tirc.passes.schedule_rules.rule import (
    RuleContext,
    ScheduleRule,
    info_of,
    loop_of,
    prefix,
)
from tirc.passes.schedule_rules.traced import TracedSchedule

TILES = [8, 16, 32]


def bind_2d(sch: TracedSchedule, block: object, tile: int) -> None:
    """The block's two own innermost loops (a tile's rows and columns) on threadIdx.y/x;
    a copy of a tile whose loops are not two is spread over threadIdx.x."""
    info = info_of(sch, block)  # type: ignore[arg-type]
    own = own_count(info)
    loops = sch.loops(block)[len(info.loops) - own:]  # type: ignore[arg-type]
    if len(loops) == 2 and all(const_extent(sch, lp) == tile for lp in loops):
        sch.bind(loops[0], "threadIdx.y")
        sch.bind(loops[1], "threadIdx.x")
        return
    fused = sch.fuse(*loops)
    _, ty, tx = sch.split(fused, [None, tile, tile])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")


class GPUMatmul(ScheduleRule):
    """Shared-memory tiled matmul, one output per thread, with its epilogue."""

    name = "gpu-matmul"
    gpu = True

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        roles = matmul_roles(info)
        if not is_matmul(roles) or not info.is_simple_nest:
            return None
        assert roles is not None
        p = prefix(anchor)
        mm = sch.block(anchor)
        loops = sch.loops(mm)

        def lp(iv: object) -> object:
            return loop_of(info, loops, iv.var)  # type: ignore[attr-defined]

        batch = [lp(iv) for iv in roles.batch] + [lp(iv) for iv in roles.i[:-1]]
        row, cols, red = lp(roles.i[-1]), [lp(iv) for iv in roles.j], [lp(iv) for iv in roles.k]
        sch.reorder(*batch, row, *cols, *red)
        col = sch.fuse(*cols)
        k = sch.fuse(*red)
        tile = sch.sample_choice(f"{p}_tile", TILES, 16)
        tile_k = sch.sample_choice(f"{p}_tile_k", TILES, 16)
        acc = sch.cache_write(mm, 0, "shared")
        a_sh = sch.cache_read(mm, roles.a.buffer.name, "shared")  # type: ignore[arg-type]
        b_sh = sch.cache_read(mm, roles.b.buffer.name, "shared")  # type: ignore[arg-type]
        by, ty = sch.split(row, [None, tile])
        bx, tx = sch.split(col, [None, tile])
        k0, k1 = sch.split(k, [None, tile_k])
        sch.reorder(*batch, by, bx, k0, ty, tx, k1)
        sch.bind(by, "blockIdx.y")
        sch.bind(bx, "blockIdx.x")
        if batch:
            sch.bind(sch.fuse(*batch), "blockIdx.z")
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        init = sch.decompose_reduction(mm, k0)
        for copy in (a_sh, b_sh):
            sch.compute_at(copy, k0)
            bind_2d(sch, copy, tile)
        taken = [anchor] + place_epilogue(sch, acc, bx, vectorize=False, reductions=False)
        for blk in [init] + [sch.block(n) for n in taken[1:]] + [acc]:
            if blk.name in {b.name for b in _blocks_under(sch, bx)}:
                if not _bound(sch, blk):
                    bind_2d(sch, blk, tile)
        return taken


def _blocks_under(sch: TracedSchedule, loop: object) -> list:
    from tirc.passes.schedule.dependence import child_sites

    return child_sites(sch.state.loop_path(loop, "rules"))


def _bound(sch: TracedSchedule, block: object) -> bool:
    """Whether a thread-bound loop is among the block's own loops."""
    from tirc.ir.stmt import ForKind

    info = info_of(sch, block)  # type: ignore[arg-type]
    own = own_count(info)
    return any(x.kind == ForKind.THREAD_BINDING and (x.thread_tag or "").startswith("threadIdx")
               for x in info.loops[len(info.loops) - own:])
