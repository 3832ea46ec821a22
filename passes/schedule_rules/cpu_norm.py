"""CPU rule for softmax and norms: a reduction whose rows later stages reduce again or scale
(softmax's max, exp, sum and divide; layer norm's mean, variance and scaling; RMS norm).

All stages run in one row-parallel nest: the first reduction's spatial loops are fused into
the parallel row loop, and each later stage that consumes the rows is moved into it in order
(`reverse_compute_at`, checked); the reductions keep vector partial sums (rfactor by
`<block>_lanes`), the elementwise stages are vectorized. A row is read from memory once and
stays in cache between the stages.
"""

from __future__ import annotations

from tirc.passes.schedule_rules.cpu_reduction import main_input, schedule_reduction
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of, later_blocks
from tirc.passes.schedule_rules.traced import TracedSchedule


class Norm(ScheduleRule):
    """A reduction with later reductions over its rows, in one row-parallel nest."""

    name = "norm"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        if not info.is_reduction or info.output is None or not info.spatial:
            return None
        main = main_input(info)
        if main is None:
            return None
        written = {r.buffer for r in info.regions()[1]}
        stages = []
        for later in later_blocks(sch, anchor):
            reads, writes = later.regions()
            if any(r.buffer in written for r in reads):
                stages.append(later)
                written |= {w.buffer for w in writes}
        if not any(b.is_reduction for b in stages):
            return None
        return schedule_reduction(sch, anchor, ctx, main, reductions=True)
