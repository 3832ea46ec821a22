"""Named decisions: what a schedule's sampling primitives chose, under names that survive edits,
and running a schedule with some of them given (how a tuner explores and a record replays).

A decision is named from the schedule's text: `tile_<loop>` for `sample_perfect_tile` (the name
its loop argument is bound to) and the assigned name for `sample_categorical` (`u = sch.sample_
categorical(...)` is `u`); a name met again gets `#2`, `#3`. A given value that does not fit its
decision's domain any more (an earlier decision changed the loop's extent) is left out, and the
primitive samples as it would without it. A tile of a loop whose extent is symbolic, given a
value (tuned at one size), keeps its inner factors and leaves the outer one to `split` (None).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Mapping
from typing import Any

from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.expr import IntImm
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.printer import print_function
from tirc.ir.schedule import SchedInstr, SchedRef, Schedule
from tirc.passes.schedule.runner import bind_call, bind_outputs
from tirc.passes.schedule.sampling import _factorizations
from tirc.passes.schedule.state import LoopRV, ScheduleError, ScheduleState

TILE = "sample_perfect_tile"
CATEGORICAL = "sample_categorical"
SAMPLERS = (TILE, CATEGORICAL)


@dataclass(frozen=True)
class Decision:
    """One sampling primitive's outcome and its domain.

    A tile's value is its factors (product `extent`, `n` of them, the innermost at most
    `max_innermost`); a categorical's value is an index into `candidates`."""

    name: str
    prim: str
    value: Any
    extent: int = 0
    n: int = 0
    max_innermost: int = 0
    candidates: tuple[Any, ...] = ()
    probs: tuple[float, ...] = ()

    def fits(self, value: Any) -> bool:
        """Whether `value` is in this decision's domain."""
        if self.prim == TILE:
            return isinstance(value, (list, tuple)) and len(value) == self.n and \
                all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value) \
                and math.prod(value) == self.extent and value[-1] <= self.max_innermost
        return isinstance(value, int) and not isinstance(value, bool) and \
            0 <= value < len(self.candidates)

    def options(self) -> list[Any]:
        """Every value of the domain, in a fixed order."""
        if self.prim == TILE:
            return [tuple(f) for f in _factorizations(self.extent, self.n, self.max_innermost)]
        return list(range(len(self.candidates)))

    def chosen(self) -> Any:
        """What the decision makes: the factors, or the categorical's candidate value."""
        return list(self.value) if self.prim == TILE else self.candidates[self.value]


def normal_value(value: Any) -> Any:
    """A decision value in one hashable form (tiles as tuples), from JSON or from a primitive."""
    return tuple(value) if isinstance(value, (list, tuple)) else value


def decision_names(sched: Schedule) -> list[str | None]:
    """The decision name of each instruction of `sched` (None for non-sampling ones)."""
    names: list[str | None] = []
    seen: dict[str, int] = {}
    for k, ins in enumerate(sched.instrs):
        if ins.prim not in SAMPLERS:
            names.append(None)
            continue
        base = _base_name(ins, k)
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def _base_name(ins: SchedInstr, index: int) -> str:
    if ins.prim == TILE:
        loop = ins.kwargs.get("loop", ins.args[0] if ins.args else None)
        return f"tile_{loop.name}" if isinstance(loop, SchedRef) else f"tile{index}"
    return ins.outputs[0] if ins.outputs else f"choice{index}"


def run_with_decisions(func: PrimFunc, sched: Schedule, given: Mapping[str, Any],
                       seed: int = 0, intrinsics: dict[str, dict[str, PrimFunc]] | None = None,
                       state: ScheduleState | None = None
                       ) -> tuple[PrimFunc, tuple[Decision, ...]]:
    """`func` transformed by `sched`, each sampling instruction taking the value `given` under
    its name when that value fits, else its own `decision=`, else a draw seeded by `seed`; also
    every decision taken. CompileError at the first instruction that cannot apply. `state`, when
    given, is the one to run on (apply-schedules sets its sparse checks, reads what it adds)."""
    state = state or ScheduleState(func, seed, intrinsics)
    env: dict[str, Any] = {}
    taken: list[Decision] = []
    for ins, name in zip(sched.instrs, decision_names(sched)):
        try:
            if name is None:
                fn, bound = bind_call(state, env, ins)
                bind_outputs(ins, fn(*bound.args, **bound.kwargs), env)
            else:
                taken.append(_sample(state, env, ins, name, given.get(name)))
        except ScheduleError as e:
            raise CompileError(Diagnostic("error", str(e), ins.span or sched.span)) from None
    return state.func, tuple(taken)


def _sample(state: ScheduleState, env: dict[str, Any], ins: SchedInstr, name: str,
            value: Any) -> Decision:
    fn, bound = bind_call(state, env, ins)
    args = bound.arguments
    if ins.prim == TILE:
        loop = args["loop"]
        extent = state.loop(loop, TILE)[1].extent if isinstance(loop, LoopRV) else None
        decision = Decision(name, TILE, None,
                            extent=extent.value if isinstance(extent, IntImm) else 0,
                            n=args["n"] if isinstance(args["n"], int) else 0,
                            max_innermost=args["max_innermost_factor"]
                            if isinstance(args["max_innermost_factor"], int) else 0)
    else:
        cands, probs = args["candidates"], args["probs"]
        decision = Decision(name, CATEGORICAL, None,
                            candidates=tuple(cands) if isinstance(cands, (list, tuple)) else (),
                            probs=tuple(probs) if isinstance(probs, (list, tuple)) else ())
    value = normal_value(value)
    if ins.prim == TILE and decision.extent == 0 and isinstance(value, tuple) and \
            len(value) == decision.n and isinstance(args["loop"], LoopRV):
        factors = [None, *value[1:]]  # a symbolic loop: inner tiles as tuned, outer the rest
        state.decisions.append((TILE, factors))
        bind_outputs(ins, factors, env)
        return dataclasses.replace(decision, value=value)
    if value is not None and decision.fits(value):
        args["decision"] = list(value) if ins.prim == TILE else value
    result = fn(*bound.args, **bound.kwargs)
    bind_outputs(ins, result, env)
    return dataclasses.replace(decision, value=normal_value(state.decisions[-1][1]))


def fix_decisions(sched: Schedule, decisions: Mapping[str, Any]) -> Schedule:
    """`sched` with each sampling instruction named in `decisions` given `decision=` its value:
    the schedule that replays them, printable as `.tir` text."""
    instrs = []
    for ins, name in zip(sched.instrs, decision_names(sched)):
        if name is not None and name in decisions:
            value = decisions[name]
            value = list(value) if isinstance(value, (list, tuple)) else value
            ins = dataclasses.replace(ins, kwargs={**ins.kwargs, "decision": value})
        instrs.append(ins)
    return dataclasses.replace(sched, instrs=tuple(instrs))


def workload_key(func: PrimFunc) -> str:
    """A short hash of the printed function: what tuning records are keyed by."""
    text = "\n".join(print_function(func))
    return hashlib.sha256(text.encode()).hexdigest()[:20]
