"""A whole `tirc tune`: tasks from the module, earlier records, the searches under one budget,
the final re-measurement of the best, and the summary.

The time budget counts everything from the start (builds, timings, the model, this process's
own work), earlier runs of an interrupted tune included. Tasks share it in turns: the task whose
default schedule takes the largest share of the total time gets the most. A task that a record
file already finished (a `done` line for this machine) is not searched again, so re-running a
finished tune does nothing; an interrupted one resumes from its trials without re-measuring.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import field

from tirc.ir.diagnostics import CompileError
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.tune import records
from tirc.tune.builder import BuilderPool
from tirc.tune.cost_model import make_model
from tirc.tune.machine import Machine, this_machine
from tirc.tune.measure import LocalMeasurer
from tirc.tune.progress import Progress, figure
from tirc.tune.runner import Runner
from tirc.tune.search import Measurer, SearchOptions, TaskSearch
from tirc.tune.tasks import Task, extract_tasks

FINAL = 3          # best candidates re-measured at the end (with the default's)
FINAL_REPEATS = 7
EXIT_SECONDS = 1.5  # kept for stopping the builders and runner and writing the summary


@dataclass
class TuneOptions:
    """What `tirc tune` was asked to do."""

    output: str
    budget: float | None = 60.0
    trials: int | None = None
    dims: dict[str, list[int]] = field(default_factory=dict)
    target: str = "llvm"
    seed: int = 0
    opt_level: int = 2
    progress: str = "plain"
    model: str = "auto"
    workers: int = 0
    min_ms: float = 50.0
    repeats: int = 3
    search: SearchOptions = field(default_factory=SearchOptions)
    started: float | None = None   # time.monotonic() when the command started (default: now)


@dataclass
class Outcome:
    """What a tune did, per task: the best trial (None when nothing valid was measured)."""

    tasks: list[Task]
    best: dict[str, records.Trial | None]
    skipped: list[Task]
    seconds: float
    trials: int

    @property
    def status(self) -> int:
        return 1 if any(v is None for v in self.best.values()) else 0


def _finished_tasks(sections: list[records.Section], opts: TuneOptions) -> set[str]:
    done = set()
    for s in sections:
        for line in s.done:
            budget = line.get("budget")
            more_time = opts.budget is not None and budget is not None and \
                opts.budget > budget + 1e-9
            more_trials = opts.trials is not None and (line.get("trials_asked") or 0) < \
                opts.trials
            if not more_time and not more_trials:
                done.add(line["task"])
    return done


def tune(mod: IRModule, opts: TuneOptions, machine: Machine | None = None,
         measurer: Measurer | None = None) -> Outcome:
    """Tune every task of `mod`, appending to `opts.output`."""
    start = opts.started if opts.started is not None else time.monotonic()
    machine = machine or this_machine()
    tasks = extract_tasks(mod, opts.target, opts.dims, opts.opt_level)
    if not tasks:
        raise CompileError("nothing to tune: no function has schedule decisions for this "
                           "target (neither its own sample_* nor the default rules')")
    sections = list(records.matching(records.read(opts.output), machine, False))
    finished = _finished_tasks(sections, opts)
    earlier: dict[str, list[records.Trial]] = {}
    for s in sections:
        for t in s.trials:
            earlier.setdefault(t.task, []).append(t)
    pending = [t for t in tasks if t.id not in finished]
    skipped = [t for t in tasks if t.id in finished]
    if not pending:
        best = records.best_trials(sections)
        return Outcome(tasks, {t.id: best.get(t.id) for t in tasks}, skipped, 0.0, 0)
    spent = max((t.elapsed for task in pending for t in earlier.get(task.id, [])), default=0.0)
    deadline = None if opts.budget is None else \
        start + max(opts.budget - spent - EXIT_SECONDS, 0.0)
    writer = records.Writer(opts.output)
    writer.write(records.header(machine))
    progress = Progress(opts.progress, machine, deadline, pending)
    with tempfile.TemporaryDirectory(prefix="tirc-tune-") as workdir:
        own = measurer is None
        pool = BuilderPool(opts.workers or machine.cores)
        runner = Runner(opts.min_ms, opts.repeats)
        if measurer is None:
            pool.start()
            runner.start()
            measurer = LocalMeasurer(pool, runner, workdir, machine, opts.opt_level, opts.seed,
                                     start, spent)
        listeners = getattr(measurer, "listeners", None)
        if listeners is not None:
            listeners.append(lambda task, trial: (writer.write(trial.line()),
                                                  progress.trial(task, trial)))
        try:
            searches = _run(pending, earlier, opts, measurer, progress, deadline)
        finally:
            progress.close()
            if own:
                pool.close()
                runner.stop()
                measurer.close()  # type: ignore[union-attr]
            writer.close()
    for s in searches:
        if s.best is not None:
            writer.write({"kind": "done", "task": s.task.id, "workload": s.task.workload,
                          "func": s.task.name, "dims": s.task.dims, "budget": opts.budget,
                          "trials_asked": opts.trials, "trials": len(s.trials),
                          "best": s.best.seconds, "reason": s.finished or "budget"})
    writer.close()
    best = {s.task.id: s.best for s in searches}
    for t in skipped:
        best[t.id] = records.best_trials(sections).get(t.id)
    return Outcome(tasks, best, skipped, time.monotonic() - start,
                   sum(len(s.trials) for s in searches))


def _run(pending: list[Task], earlier: dict[str, list[records.Trial]], opts: TuneOptions,
         measurer: Measurer, progress: Progress, deadline: float | None) -> list[TaskSearch]:
    model = make_model(opts.model, opts.seed)
    searches = [TaskSearch(t, model, measurer, opts.seed, opts.search) for t in pending]
    used = 0
    for s in searches:
        progress.state(s.task, "resuming" if earlier.get(s.task.id) else "default")
        s.resume(earlier.get(s.task.id, []))
        used += len(s.start())
        if not s.best:
            s.finished = s.finished or "no valid default"
            progress.state(s.task, s.finished)
    def reserve() -> float:
        """Time kept for the final re-measurement: FINAL_REPEATS runs of at least `min_ms`
        of FINAL candidates per task (at about the best time so far), with a margin."""
        per_task = [FINAL * FINAL_REPEATS * max(opts.min_ms / 1e3, min(s.best_seconds(), 1.0))
                    for s in searches if s.best is not None]
        return 1.5 * sum(per_task) + 0.5

    def time_left() -> bool:
        return deadline is None or time.monotonic() < deadline - reserve()

    while time_left() and (opts.trials is None or used < opts.trials):
        live = [s for s in searches if not s.finished]
        if not live:
            break
        s = min(live, key=lambda s: (len(s.trials) / _weight(s, searches), s.task.id))
        progress.state(s.task, f"round {s.rounds + 1}")
        before = len(s.trials)
        s.step(None if deadline is None else deadline - reserve(),
               None if opts.trials is None else opts.trials - used)
        used += len(s.trials) - before
        if len(s.trials) == before and not s.finished:
            s.finished = "no time left for another batch"
        if s.finished:
            progress.state(s.task, s.finished)
    for s in searches:
        top = s.ranked()[:FINAL]
        default = s.default_trial()
        if default is not None and all(t is not default for t in top):
            top.append(default)  # judged beside the finalists, so tuning never ends worse
        if len(top) > 1 and (deadline is None or time.monotonic() < deadline):
            progress.state(s.task, "re-measuring the best")
            s.trials.extend(measurer.remeasure(s.task, top, FINAL_REPEATS))
        progress.state(s.task, s.finished or "budget spent")
    return searches


def _weight(s: TaskSearch, searches: list[TaskSearch]) -> float:
    """The task's share of the total time at the defaults (at least 5%)."""
    total = sum(x.trials[0].seconds for x in searches if x.trials and x.best) or 1.0
    own = s.trials[0].seconds if s.trials and s.best else 0.0
    return max(own / total if own != float("inf") else 0.0, 0.05)


def summary(outcome: Outcome, out: object = sys.stderr) -> None:
    """One line per task: its default and best figures."""
    write = out.write  # type: ignore[attr-defined]
    for task in outcome.tasks:
        best = outcome.best.get(task.id)
        if best is None:
            write(f"tirc tune: {task.label}: no valid candidate was measured\n")
            continue
        value, unit = figure(task, best.seconds)
        tag = " (tuned earlier)" if task in outcome.skipped else ""
        write(f"tirc tune: {task.label}: best {best.seconds * 1e3:.3f} ms, {value:.1f} {unit}"
              f"{tag}\n")
