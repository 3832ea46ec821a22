"""The search of one task: the default decisions first, then rounds of an evolutionary batch
and a coordinate-descent batch around the best, each ranked by the cost model before anything
is built.

Evolution proposes mutations of the fastest candidates (a tile's factors or a categorical's
choice changed), crossovers of two of them, and fresh draws of the whole space; coordinate
descent proposes every single-decision neighbour of the best (a prime factor moved between two
positions of a tile, the next categorical choice). The model's best few of each batch are
measured (plus one at random, so that the model sees where it is wrong). A search ends when its
trials or its time are spent, or when `patience` rounds in a row each gained under 1%.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import field
from typing import Any, Protocol

from tirc.ir.lean_dataclass import dataclass
from tirc.passes.schedule.decisions import Decision
from tirc.tune.builder import Prepared
from tirc.tune.cost_model import CostModel
from tirc.tune.records import OK, Trial, decisions_key
from tirc.tune.space import mutate, neighbours
from tirc.tune.tasks import Task

MIN_GAIN = 0.01


class Measurer(Protocol):
    """Prepares candidates (apply + estimate) and measures prepared ones."""

    def prepare(self, task: Task, jobs: list[tuple[dict[str, Any], int]]) -> list[Prepared]:
        ...

    def measure(self, task: Task, cands: list[Prepared], phase: str = "search",
                repeats: int | None = None) -> list[Trial]:
        ...

    def remeasure(self, task: Task, trials: list[Trial], repeats: int) -> list[Trial]:
        """Time measured candidates again (phase "final"); those it cannot are left out."""
        ...


@dataclass
class SearchOptions:
    batch: int = 6            # candidates measured per batch
    population: int = 24      # proposals the model ranks per evolutionary batch
    patience: int = 1         # rounds in a row under 1% gain before stopping
    parents: int = 5          # fastest candidates that evolution starts from


@dataclass
class TaskSearch:
    """The state of one task's search; resumable from earlier trials."""

    task: Task
    model: CostModel
    measurer: Measurer
    seed: int = 0
    options: SearchOptions = field(default_factory=SearchOptions)
    trials: list[Trial] = field(default_factory=list)
    traces: dict[str, tuple[Decision, ...]] = field(default_factory=dict)
    rounds: int = 0
    quiet_rounds: int = 0
    finished: str = ""        # why the search ended ("" while it goes on)
    spent: float = 0.0        # wall seconds of this run's batches
    spent_trials: int = 0
    prepare_seconds: float = 0.0
    prepared: int = 0
    measure_seconds: float = 0.0
    measured_count: int = 0
    deadline: float | None = None   # of the current step
    default_key: str = ""
    cache: dict[str, Prepared] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.seed}|{self.task.id}")

    # ---- what has been measured -------------------------------------------------------

    @property
    def measured(self) -> dict[str, Trial]:
        return {decisions_key(t.decisions): t for t in self.trials}

    @property
    def best(self) -> Trial | None:
        ok = [t for t in self.trials if t.status == OK]
        return min(ok, key=lambda t: t.seconds) if ok else None

    def best_seconds(self) -> float:
        b = self.best
        return b.seconds if b else float("inf")

    def default_trial(self) -> Trial | None:
        """The valid measurement of the default decisions (candidate 0), if any."""
        key = self.default_key
        return next((t for t in reversed(self.trials)
                     if t.status == OK and decisions_key(t.decisions) == key), None)

    def ranked(self) -> list[Trial]:
        """Valid trials, fastest first, one per candidate."""
        ok = {decisions_key(t.decisions): t for t in self.trials if t.status == OK}
        return sorted(ok.values(), key=lambda t: t.seconds)

    def resume(self, earlier: Sequence[Trial]) -> None:
        """Take earlier trials of this task as measured; the model learns them."""
        if not earlier:
            return
        self.trials.extend(earlier)
        jobs = [(dict(t.decisions), 0) for t in earlier]
        prepared = self._prepare(jobs)
        self._learn([p for p in prepared if p.status == OK], list(earlier))

    def _learn(self, prepared: list[Prepared], trials: list[Trial]) -> None:
        by_key = {decisions_key(p.decisions): p for p in prepared}
        pairs = [(by_key[decisions_key(t.decisions)], t) for t in trials
                 if decisions_key(t.decisions) in by_key]
        for p, _ in pairs:
            self.traces[decisions_key(p.decisions)] = p.taken
        pairs = [(p, t) for p, t in pairs if p.estimate is not None]
        self.model.update([p.estimate for p, _ in pairs],  # type: ignore[misc]
                          [t.seconds for _, t in pairs])

    # ---- steps ---------------------------------------------------------------------------

    def start(self) -> list[Trial]:
        """Measure the default decisions (candidate 0) unless measured already."""
        default = self._prepare([({}, 0)])[0]
        if default.status != OK:
            self.finished = "the default schedule is invalid: " + default.error
            return []
        key = decisions_key(default.decisions)
        self.default_key = key
        self.traces[key] = default.taken
        if key in self.measured:
            return []
        return self._measure([default])

    def step(self, deadline: float | None = None, trial_limit: int | None = None
             ) -> list[Trial]:
        """One round: an evolutionary batch, then a coordinate-descent batch."""
        before = self.best_seconds()
        out: list[Trial] = []
        self.deadline = deadline
        cut = False   # a batch left out for want of time or trials
        for propose in (self._evolve, self._descend):
            if self._room(deadline, trial_limit, len(out), self._population()) <= 0:
                cut = True
                break
            started = time.monotonic()
            proposals = propose()
            limit = self._room(deadline, trial_limit, len(out))
            if limit <= 0:
                cut = True
                break
            batch = self._measure(self._choose(proposals, limit))
            self.spent += time.monotonic() - started
            self.spent_trials += len(batch)
            out += batch
        self.rounds += 1
        after = self.best_seconds()
        quiet = before != float("inf") and after > before * (1 - MIN_GAIN)
        if cut and not out:
            return out  # the budget ended the round, not the search
        self.quiet_rounds = self.quiet_rounds + 1 if quiet or not out else 0
        if self.quiet_rounds >= self.options.patience:
            self.finished = f"converged (under 1% gain in {self.quiet_rounds} rounds)"
        return out

    def _costs(self) -> tuple[float, float]:
        """Wall seconds per prepared proposal and per measured candidate so far (the default
        candidate's, before any batch)."""
        prep = self.prepare_seconds / self.prepared if self.prepared else 0.0
        meas = self.measure_seconds / self.measured_count if self.measured_count else 0.0
        return prep, meas

    def _room(self, deadline: float | None, trial_limit: int | None, done: int,
              proposals: int = 0) -> int:
        """How many candidates the next batch may measure: the batch size, within the trial
        limit, and as many as fit before `deadline` after preparing `proposals`."""
        n = self.options.batch
        if trial_limit is not None:
            n = min(n, trial_limit - done)
        if deadline is not None:
            prep, meas = self._costs()
            left = deadline - time.monotonic() - proposals * prep
            n = min(n, int(left / meas)) if meas > 0 else (n if left > 0 else 0)
        return n

    def seconds_per_trial(self) -> float:
        """Wall seconds a measured candidate has cost in this run's batches, proposals,
        builds and timing included (0 before the first batch)."""
        return self.spent / self.spent_trials if self.spent_trials else 0.0

    def _measure(self, chosen: list[Prepared]) -> list[Trial]:
        if not chosen:
            return []
        started = time.monotonic()
        trials = self.measurer.measure(self.task, chosen)
        self.measure_seconds += time.monotonic() - started
        self.measured_count += len(trials)
        for p in chosen:
            self.traces[decisions_key(p.decisions)] = p.taken
        self.trials.extend(trials)
        self._learn(chosen, trials)
        return trials

    # ---- proposals -----------------------------------------------------------------------

    def _parents(self) -> list[tuple[Decision, ...]]:
        out = []
        for t in self.ranked()[: self.options.parents]:
            trace = self.traces.get(decisions_key(t.decisions))
            if trace:
                out.append(trace)
        return out

    def _evolve(self) -> list[Prepared]:
        parents = self._parents()
        jobs: list[tuple[dict[str, Any], int]] = []
        for _ in range(self._population()):
            r = self.rng.random()
            if parents and r < 0.6:
                parent = parents[min(int(self.rng.expovariate(1.0)), len(parents) - 1)]
                jobs.append((mutate(parent, self.rng, 1 + (self.rng.random() < 0.3)), 0))
            elif len(parents) > 1 and r < 0.8:
                a, b = self.rng.sample(parents, 2)
                bv = {d.name: d.value for d in b}
                jobs.append(({d.name: (bv.get(d.name, d.value) if self.rng.random() < 0.5
                                       else d.value) for d in a}, 0))
            else:
                jobs.append(({}, self.rng.randrange(1, 2 ** 31)))
        return self._prepare(jobs)

    def _descend(self) -> list[Prepared]:
        best = self.best
        trace = self.traces.get(decisions_key(best.decisions)) if best else None
        if not trace:
            return []
        values = {d.name: d.value for d in trace}
        jobs = [({**values, d.name: v}, 0) for d in trace for v in neighbours(d)]
        jobs = [j for j in jobs if decisions_key(j[0]) not in self.measured]
        size = self._population()
        if len(jobs) > size:
            jobs = self.rng.sample(jobs, size)
        return self._prepare(jobs)

    def _prepare(self, jobs: list[tuple[dict[str, Any], int]]) -> list[Prepared]:
        """Prepared candidates for `jobs`, each distinct job prepared once per search."""
        keys = [f"{decisions_key(given)}|{seed}" for given, seed in jobs]
        todo = {k: j for k, j in zip(keys, jobs) if k not in self.cache}
        if todo:
            started = time.monotonic()
            done = self.measurer.prepare(self.task, list(todo.values()))
            self.prepare_seconds += time.monotonic() - started
            self.prepared += len(todo)
            self.cache.update(zip(todo, done))
        return [self.cache[k] for k in keys]

    def _population(self) -> int:
        """Proposals per batch: as many as take about the time measuring a batch does (the
        model ranks them for free), between twice the batch and `population`."""
        low, high = 2 * self.options.batch, self.options.population
        prep, meas = self._costs()
        if not prep or not meas:
            return high
        size = max(low, min(high, int(self.options.batch * meas / prep)))
        if self.deadline is not None:  # leave time to measure at least one of them
            fit = int((self.deadline - time.monotonic() - meas) / prep)
            size = max(min(size, fit), 0)
        return size

    def _choose(self, proposals: list[Prepared], limit: int) -> list[Prepared]:
        """The model's best `limit - 1` new valid proposals and one other at random."""
        seen = set(self.measured)
        fresh: dict[str, Prepared] = {}
        for p in proposals:
            key = decisions_key(p.decisions)
            if p.status == OK and p.estimate is not None and key not in seen:
                fresh.setdefault(key, p)
        cands = list(fresh.values())
        if not cands:
            return []
        scores = self.model.predict([p.estimate for p in cands])  # type: ignore[misc]
        order = sorted(range(len(cands)), key=lambda k: (scores[k], k))
        top = order[: max(limit - 1, 1)]
        rest = order[len(top):]
        if rest and limit > 1:
            top.append(rest[self.rng.randrange(len(rest))])
        return [cands[k] for k in top]
