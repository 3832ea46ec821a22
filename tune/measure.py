"""Measuring candidates on this machine: build in the pool, then time in the runner.

Builds of a batch run in parallel while the runner is idle; then each library is timed alone.
A task's first measured candidate is its default schedule, whose library is the runner's
reference (inputs and expected outputs) for the task; every other candidate is checked against
it once, when it is first timed. Libraries stay in the work directory until the tune ends, so
the best few are re-measured without being built again. Every outcome, failures included,
becomes a `Trial`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tirc.tune.builder import BuilderPool, Prepared
from tirc.tune.machine import Machine
from tirc.tune.records import OK, Trial, decisions_key
from tirc.tune.runner import Runner, Timing
from tirc.tune.tasks import Task


class LocalMeasurer:
    """Builds with a `BuilderPool`, times with a `Runner`, writes libraries under `workdir`."""

    def __init__(self, pool: BuilderPool, runner: Runner, workdir: str, machine: Machine,
                 opt_level: int = 3, seed: int = 0, started: float | None = None,
                 spent_before: float = 0.0) -> None:
        self.pool = pool
        self.runner = runner
        self.workdir = Path(workdir)
        self.machine = machine
        self.opt_level = opt_level
        self.seed = seed
        self.started = started if started is not None else time.monotonic()
        self.spent_before = spent_before
        self.reference: dict[str, tuple[str, float]] = {}  # task id -> (library, first call)
        self.libraries: dict[tuple[str, str], str] = {}   # (task id, decisions) -> library
        self.current = ""
        self.count = 0
        self.listeners: list[Any] = []

    def elapsed(self) -> float:
        """Tuning seconds so far, earlier runs of an interrupted tune included."""
        return self.spent_before + time.monotonic() - self.started

    def prepare(self, task: Task, jobs: list[tuple[dict[str, Any], int]]) -> list[Prepared]:
        return self.pool.prepare(task.space, jobs, self.machine)

    def _path(self, task: Task) -> str:
        self.count += 1
        return str(self.workdir / f"{task.name}-{self.count}.so")

    def _use_task(self, task: Task) -> Timing | None:
        if self.current == task.id or task.id not in self.reference:
            return None
        self.current = task.id
        return self.runner.set_task(self.reference[task.id][0], task.name, task.dims,
                                    self.seed)

    def _timeout(self, task: Task) -> float:
        first = self.reference.get(task.id, ("", 10.0))[1]
        per_repeat = max(self.runner.min_ms / 1e3, first)
        return 10.0 + 25.0 * first + 2.0 * (self.runner.repeats + 1) * per_repeat

    def measure(self, task: Task, cands: list[Prepared], phase: str = "search",
                repeats: int | None = None) -> list[Trial]:
        jobs = [(p.func, self._path(task)) for p in cands if p.func is not None]
        built = self.pool.build(jobs, task.target, self.opt_level)  # type: ignore[arg-type]
        trials: list[Trial] = []
        for p, b in zip(cands, built):
            if b.status != OK:
                timing = Timing(b.status, error=b.error)
            elif task.id not in self.reference:
                timing = self._first(task, b.path)
            else:
                self._use_task(task)
                timing = self.runner.time(b.path, task.name, self._timeout(task),
                                          repeats=repeats)
            if b.path:
                self.libraries[(task.id, decisions_key(p.decisions))] = b.path
            trial = Trial(task.workload, task.name, task.target, task.dims, p.decisions,
                          timing.status, timing.times, self.seed, self.elapsed(),
                          timing.error, phase)
            trials.append(trial)
            for listener in self.listeners:
                listener(task, trial)
        return trials

    def remeasure(self, task: Task, trials: list[Trial], repeats: int) -> list[Trial]:
        """Time again, with more repeats, candidates whose libraries are still on disk."""
        out = []
        for t in trials:
            path = self.libraries.get((task.id, decisions_key(t.decisions)))
            if path is None or not os.path.exists(path):
                continue
            self._use_task(task)
            timing = self.runner.time(path, task.name, self._timeout(task), check=False,
                                      repeats=repeats)
            trial = Trial(task.workload, task.name, task.target, task.dims, t.decisions,
                          timing.status, timing.times, self.seed, self.elapsed(),
                          timing.error, "final")
            out.append(trial)
            for listener in self.listeners:
                listener(task, trial)
        return out

    def _first(self, task: Task, path: str) -> Timing:
        """Time the task's default library and keep it as the reference."""
        start = time.perf_counter()
        setup = self.runner.set_task(path, task.name, task.dims, self.seed, timeout=300.0)
        first = time.perf_counter() - start
        if setup.status != OK:
            return setup
        self.reference[task.id] = (path, first)
        self.current = task.id
        return self.runner.time(path, task.name, self._timeout(task))

    def close(self) -> None:
        """Libraries live in `workdir`, which the caller removes."""
