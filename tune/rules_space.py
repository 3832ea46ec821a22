"""The space of the default schedule rules: every decision a rule makes for a function
(passes/schedule_rules: tile factors, unroll depth, vector width, compute location, ...),
applied by running the rules again with some decisions given.

A fresh draw (seed other than 0) gives each decision of the default trace a random value of its
domain; a given value that does not fit where the rules meet it rejects the candidate (the
rules' DecisionError), and names the rules do not reach on this path are left out.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.schedule import Schedule
from tirc.passes.schedule.decisions import CATEGORICAL, TILE, Decision, normal_value
from tirc.passes.schedule.state import ScheduleError
from tirc.tune.space import Candidate


def rules_schedule(func: PrimFunc, target: Any, given: Mapping[str, Any]
                   ) -> tuple[PrimFunc, Any]:
    """`func` scheduled by the rules with the `given` decisions, and the rules' trace."""
    from tirc.passes.schedule_rules.tuned import schedule_with

    return schedule_with(func, target, given)


def _max_inner(schedule: Schedule, name: str, extent: int) -> int:
    for ins in schedule.instrs:
        if ins.prim == TILE and ins.outputs and ins.outputs[0] == name:
            value = ins.kwargs.get("max_innermost_factor")
            if isinstance(value, int):
                return value
    return extent


def decisions_of(trace: Any) -> tuple[Decision, ...]:
    """The rules' decisions in the tuner's terms (domains included)."""
    out = []
    for d in trace.decisions.values():
        if d.prim == TILE:
            extent = int(d.extent or 0)
            out.append(Decision(d.name, TILE, normal_value(d.value), extent=extent,
                                n=int(d.n or len(d.value)),
                                max_innermost=_max_inner(trace.schedule, d.name, extent)))
        else:
            count = len(d.candidates)
            out.append(Decision(d.name, CATEGORICAL, int(d.value),
                                candidates=tuple(d.candidates),
                                probs=tuple([1.0 / count] * count)))
    return tuple(out)


@dataclass(frozen=True)
class RulesSpace:
    """The default rules' decisions for one function (as the default-schedule step sees it)."""

    func: PrimFunc
    target: str

    def _target(self) -> Any:
        from tirc.ir.target import parse_target

        return parse_target(self.target)

    def apply(self, given: Mapping[str, Any], seed: int = 0) -> Candidate:
        given = dict(given)
        if seed:
            rng = random.Random(seed)
            _, default = rules_schedule(self.func, self._target(), {})
            for d in decisions_of(default):
                options = d.options()
                if d.name not in given and options:
                    given[d.name] = options[rng.randrange(len(options))]
        try:
            new, trace = rules_schedule(self.func, self._target(), given)
        except ScheduleError as e:
            raise CompileError(str(e)) from None
        return Candidate(new, decisions_of(trace))

    def schedule_text(self, given: Mapping[str, Any]) -> Schedule:
        return rules_schedule(self.func, self._target(), given)[1].schedule
