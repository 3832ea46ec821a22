"""CPU rule for convolutions (placeholder until written)."""

from __future__ import annotations

from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule
from tirc.passes.schedule_rules.traced import TracedSchedule


class Conv(ScheduleRule):
    name = "conv"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        return None
