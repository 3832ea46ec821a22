"""GPU rule for spatial blocks (elementwise, broadcast, transpose, any injective block): one
element per thread, the loops fused into one index cut into blocks of `<block>_threads`
threads, the output's innermost dimension varying fastest across threads (coalesced)."""

from __future__ import annotations

from tirc.passes.schedule_rules.gpu_nest import grid
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of, loop_of
from tirc.passes.schedule_rules.traced import TracedSchedule


class GPUInjective(ScheduleRule):
    """An element per thread over a grid of blocks."""

    name = "gpu-injective"
    gpu = True

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        if not info.is_spatial or not info.is_simple_nest or not info.loops:
            return None
        out = info.output
        blk = sch.block(anchor)
        loops = sch.loops(blk)
        inner = loop_of(info, loops, out.inner) if out is not None and out.inner else None
        if inner is not None and inner is not loops[-1]:
            loops = [lp for lp in loops if lp is not inner] + [inner]
            sch.reorder(*loops)
        grid(sch, blk, loops)
        return [anchor]
