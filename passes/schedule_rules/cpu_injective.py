"""CPU rule for spatial blocks: elementwise, broadcast, transpose and any other injective
computation (every iteration variable spatial).

The loop of the output's innermost dimension goes innermost (stores are contiguous; a
transpose's loads are strided) and is vectorized; the other loops are fused into one parallel
loop (with a few of them, the innermost is first cut into chunks for the threads:
`<block>_chunk`).
"""

from __future__ import annotations

from tirc.passes.schedule_rules.nest import spatial_nest
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of, loop_of
from tirc.passes.schedule_rules.traced import TracedSchedule


class Injective(ScheduleRule):
    """Parallel outside, vectorized inside, for a block of spatial variables only."""

    name = "injective"

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
        dt = out.buffer.dtype if out is not None else info.block.iter_vars[0].var.dtype
        spatial_nest(sch, blk, loops, ctx.lanes(dt))
        return [anchor]
