"""default-schedule: the CPU schedule of every loop function that has none, made by the
schedule rules (passes/schedule_rules) through the schedule primitives.

A function is left alone when it has its own schedule (an @S.schedule applied, unless it only
changed a sparse format: passes/schedule/apply.py, or loops its author made parallel or
vectorized), when two of its blocks share a name (the primitives find
blocks by name), when it opts out with `T.func_attr({"tirc.schedule":
"none"})`, or when `-fno-default-schedule` (pass config `schedule.default=none`) is given.
The schedule applied to each function is reported as a note (shown with the IR by
`--print-after=default-schedule` and `--print-changed`); `tirc schedule FILE` prints the
schedules ready to paste into the source. A function with tuned decisions (the `decisions`
option, pass config `schedule.decisions`, written by `tirc --tuned`) is scheduled by the rules
with them (passes/schedule_rules/tuned.py); when they no longer fit, with the defaults.
"""

from __future__ import annotations

from typing import ClassVar

from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.printer import print_node
from tirc.passes.pass_base import PassContext, PrimFuncPass
from tirc.passes.schedule.tuned_option import decisions_option, tuned_decisions
from tirc.passes.schedule_rules.api import schedule_function, wants_default_schedule
from tirc.passes.schedule_rules.options import schedule_option

__all__ = ["DefaultSchedule", "schedule_note"]


def schedule_note(func: PrimFunc, ctx: PassContext) -> PrimFunc:
    """`func` with its default schedule; the schedule goes to the context's notes."""
    new, trace = schedule_function(func, ctx.target)
    ctx.note(f"default schedule of {func.name} ({trace.summary()}):\n"
             f"{print_node(trace.schedule).rstrip()}")
    return new


@dataclass(frozen=True)
class DefaultSchedule(PrimFuncPass):
    """The rules' schedule for each CPU loop function that has none."""

    name: ClassVar[str] = "default-schedule"
    description: ClassVar[str] = "CPU schedule of unscheduled loop functions, by the schedule rules"

    optional: ClassVar[bool] = True  # an optimisation (see Pass.optional)
    schedule: str = schedule_option()
    decisions: str = decisions_option()

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if ctx.target is not None and getattr(ctx.target, "is_gpu", False):
            return func
        if not wants_default_schedule(func, self.schedule) or func.name in ctx.scheduled:
            return func  # (a function with its own @S.schedule keeps exactly that schedule)
        tuned = tuned_decisions(self.decisions)
        if tuned:
            from tirc.passes.schedule.decisions import workload_key

            variants = tuned.get(workload_key(func))
            if variants:
                from tirc.passes.schedule_rules.tuned import tuned_schedule

                new = tuned_schedule(func, ctx.target, variants)
                if new is not None:
                    ctx.note(f"tuned schedule of {func.name}")
                    return new
                ctx.note(f"the tuned decisions of {func.name} no longer fit: default schedule")
        return schedule_note(func, ctx)
