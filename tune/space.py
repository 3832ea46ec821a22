"""The search space of one function: its schedule's named decisions, and candidates made by
running the schedule with some decisions given.

`Space` is what the search needs: `apply(given, seed)` returns the scheduled function and every
decision taken (given ones where they fit, the rest drawn with `seed`), or raises CompileError
when a primitive's check refuses the result (the candidate is discarded before building).
`ScheduleSpace` is the space of an `@S.schedule` with `sample_*` instructions: a user's, or the
trace the default schedule rules print for a function.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import field
from typing import Any, Protocol

from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.schedule import Schedule
from tirc.passes.schedule.decisions import (
    CATEGORICAL,
    Decision,
    fix_decisions,
    normal_value,
    run_with_decisions,
)
from tirc.tune.records import decisions_key


@dataclass(frozen=True)
class Candidate:
    """A scheduled function and the decisions that made it."""

    func: PrimFunc
    decisions: tuple[Decision, ...]

    @property
    def values(self) -> dict[str, Any]:
        return {d.name: d.value for d in self.decisions}

    @property
    def key(self) -> str:
        return decisions_key(self.values)


class Space(Protocol):
    """A function's decisions and how to apply chosen values to them."""

    def apply(self, given: Mapping[str, Any], seed: int = 0) -> Candidate:
        """The function scheduled with the `given` decisions (the others drawn with `seed`)."""
        ...

    def schedule_text(self, given: Mapping[str, Any]) -> Schedule:
        """The schedule, with the `given` decisions fixed, as a user would write it."""
        ...


@dataclass(frozen=True)
class ScheduleSpace:
    """The decisions of an `@S.schedule` (the user's own, or a rules' trace)."""

    func: PrimFunc
    sched: Schedule
    intrinsics: dict[str, dict[str, PrimFunc]] = field(default_factory=dict, hash=False)

    def apply(self, given: Mapping[str, Any], seed: int = 0) -> Candidate:
        func, taken = run_with_decisions(self.func, self.sched, given, seed, self.intrinsics)
        return Candidate(func, taken)

    def schedule_text(self, given: Mapping[str, Any]) -> Schedule:
        return fix_decisions(self.sched, given)


def mutate(decisions: tuple[Decision, ...], rng: random.Random, count: int = 1
           ) -> dict[str, Any]:
    """The values of `decisions` with `count` of them changed to another value of their domain
    (a tile's factors moved between positions, a categorical's index changed)."""
    values = {d.name: d.value for d in decisions}
    open_ = [d for d in decisions if len(d.options()) > 1]
    for d in rng.sample(open_, min(count, len(open_))):
        others = [o for o in d.options() if normal_value(o) != d.value]
        if others:
            values[d.name] = rng.choice(others)
    return values


def neighbours(decision: Decision) -> list[Any]:
    """The values next to a decision's current one: for a tile, a factor of a prime moved from
    one position to another; for a categorical, the candidates on either side."""
    if decision.prim == CATEGORICAL:
        return [i for i in (decision.value - 1, decision.value + 1)
                if 0 <= i < len(decision.candidates)]
    out: list[Any] = []
    value = list(decision.value)
    for a in range(len(value)):
        for p in _primes(value[a]):
            for b in range(len(value)):
                if b == a:
                    continue
                new = list(value)
                new[a] //= p
                new[b] *= p
                if decision.fits(tuple(new)) and tuple(new) not in out:
                    out.append(tuple(new))
    return out


def _primes(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out
