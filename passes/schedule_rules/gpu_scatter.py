"""GPU rule for scatters: a block that writes through a loaded index (`out[idx[i], k] = ...`)
may write one element from two iterations (a duplicate index), so the loops that pick the
element run serially in each thread, in the interpreter's order, and only the other spatial
loops (the features) go over the grid; with none, the block runs on one thread. Taken first,
so that no later rule binds such a loop to threads. The index arrays the sparse lowering writes
through are trusted (block_info.trusted_indices)."""

from __future__ import annotations

from tirc.passes.schedule_rules.block_info import scatter_vars, trusted_indices
from tirc.passes.schedule_rules.gpu_nest import grid, one_thread
from tirc.passes.schedule_rules.nest import decompose_first, loop_kinds
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of
from tirc.passes.schedule_rules.traced import TracedSchedule


class GPUScatter(ScheduleRule):
    """The element-picking loops serial in each thread, the others over the grid."""

    name = "gpu-scatter"
    gpu = True

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        picks = scatter_vars(info, trusted_indices(sch.current))
        if not picks:
            return None
        blk = sch.block(anchor)
        loops = sch.loops(blk)
        kinds = loop_kinds(info)
        spread = []
        if info.is_simple_nest and len(loops) == len(info.loops):
            by_var = {iv.var: lp for iv, lp in zip(info.block.iter_vars, loops)}
            serial = {id(by_var[v]) for v in picks if v in by_var}
            spread = [lp for lp, k in zip(loops, kinds) if k == "S" and id(lp) not in serial]
            rest = [lp for lp in loops if all(lp is not s for s in spread)]
            if spread and [*spread, *rest] != loops:
                ok, _ = sch.attempt("reorder", *spread, *rest)
                spread = spread if ok else []
        if not (spread and sch.attempt(grid, sch, blk, spread)[0]):
            one_thread(sch, blk, loops)
        decompose_first(sch, blk)
        return [anchor]
