"""The GPU rule of last resort, for any block the others do not take: the leading loops of
its own nest that feed spatial variables are fused over a grid, one point per thread (as many
of them as the bind primitive accepts: a binding that is not one-to-one, `vi = i + k`, keeps
them serial), and the rest run serially in each thread, a reduction's init first. A block
none of whose loops can be spread runs on one thread (a loop of one iteration,
`add_unit_loop`, bound to the grid)."""

from __future__ import annotations

from tirc.passes.schedule_rules.gpu_nest import grid, one_thread
from tirc.passes.schedule_rules.nest import decompose_first, loop_kinds
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of
from tirc.passes.schedule_rules.traced import TracedSchedule


class GPUFallback(ScheduleRule):
    """Spatial loops over the grid where the primitives allow, else one thread."""

    name = "gpu-fallback"
    gpu = True

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        blk = sch.block(anchor)
        info = info_of(sch, blk)
        kinds = loop_kinds(info)
        loops = sch.loops(blk)
        lead = 0
        while lead < len(kinds) and kinds[lead] == "S":
            lead += 1
        for n in range(lead, 0, -1):
            ok, _ = sch.attempt(grid, sch, blk, loops[:n])
            if ok:
                decompose_first(sch, blk)
                return [anchor]
        one_thread(sch, blk, loops)
        decompose_first(sch, blk)
        return [anchor]
