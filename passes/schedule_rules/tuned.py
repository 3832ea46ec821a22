"""The rules with a tuner's decisions: how `tirc tune` tries a candidate and how a build with
`--tuned` replays the best one.

Unlike `api.schedule_function`, decisions the rules do not make on this path (a record written
for another version of the function, a candidate whose earlier decision led elsewhere) are
left out rather than refused; a value that does not fit still raises DecisionError. A function
tuned at several sizes of a symbolic extent gets one variant per size, each with the decisions
of its size that fit the symbolic function, and a run-time dispatch between them
(passes/schedule/tuned.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tirc.ir.attrs import SCHEDULED
from tirc.ir.function import PrimFunc
from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule.tuned import dispatch
from tirc.passes.schedule_rules.api import rules_for
from tirc.passes.schedule_rules.driver import RuleTrace, apply_rules
from tirc.passes.schedule_rules.rule import RuleContext
from tirc.passes.schedule_rules.traced import TracedSchedule


def schedule_with(func: PrimFunc, target: Any, decisions: Mapping[str, Any]
                  ) -> tuple[PrimFunc, RuleTrace]:
    """`func` scheduled by the rules with `decisions` in place of their defaults, and the
    trace; DecisionError (a ScheduleError) when a value does not fit."""
    ctx = RuleContext.of(target)
    sch = TracedSchedule(func, {k: list(v) if isinstance(v, tuple) else v
                                for k, v in decisions.items()})
    applied = apply_rules(sch, rules_for(ctx), ctx)
    trace = RuleTrace(func.name, ctx.kind, sch.schedule(f"{func.name}_default", ctx.kind),
                      dict(sch.decisions), applied)
    new = sch.current
    return new.replace(attrs={**new.attrs, SCHEDULED: True}), trace  # type: ignore


def fitting(func: PrimFunc, target: Any, decisions: Mapping[str, Any]) -> PrimFunc:
    """`func` scheduled with `decisions`, or with as many of them as fit, taken in order (a
    function tuned at one size, scheduled for all sizes: a tile of the symbolic loop does not
    fit, the others do)."""
    try:
        return schedule_with(func, target, decisions)[0]
    except ScheduleError:
        pass
    kept: dict[str, Any] = {}
    for name, value in decisions.items():
        try:
            schedule_with(func, target, {**kept, name: value})
        except ScheduleError:
            continue
        kept[name] = value
    return schedule_with(func, target, kept)[0]


def tuned_schedule(func: PrimFunc, target: Any, variants: list[dict[str, Any]]
                   ) -> PrimFunc | None:
    """`func` with its tuned decisions (one variant, or one per tuned size and a dispatch);
    None when a recorded value no longer fits (the caller uses the defaults)."""
    static = [v for v in variants if not v.get("dims")]
    if static or len(variants) == 1:
        try:
            return schedule_with(func, target, (static or variants)[0]["decisions"])[0]
        except ScheduleError:
            return None
    return dispatch(func, [(v["dims"], fitting(func, target, v["decisions"]))
                           for v in variants])
