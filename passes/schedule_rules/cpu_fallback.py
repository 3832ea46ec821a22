"""The CPU rule of last resort, for any block the others do not take: each step is tried and
kept only when its primitive allows it. A reduction's loops go inside its spatial ones and its
init becomes a block of its own (so an empty reduction still yields it); the outermost loop of
the block's own nest runs in parallel; the innermost, when spatial, is vectorized."""

from __future__ import annotations

from tirc.passes.schedule_rules.nest import (
    decompose_first,
    loop_kinds,
    own_count,
    reduce_inner,
    vectorize_inner,
)
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of
from tirc.passes.schedule_rules.traced import TracedSchedule


class Fallback(ScheduleRule):
    """Parallel and vector loops where the primitives allow them."""

    name = "fallback"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        blk = sch.block(anchor)
        if info_of(sch, blk).is_reduction and reduce_inner(sch, blk):
            decompose_first(sch, blk)
        info = info_of(sch, blk)
        own = own_count(info)
        kinds = loop_kinds(info)
        if own and kinds[len(kinds) - own] == "S":
            loops = sch.loops(blk)
            sch.attempt("parallel", loops[len(kinds) - own])
        if own > 1:
            vectorize_inner(sch, blk)
        return [anchor]
