"""Progress of a tune: a live line per task (rich), plain lines, JSON lines, or nothing.

Each task shows its trials, its best figure (GFLOP/s for compute-bound work, GB/s otherwise),
that figure as a share of the machine's roofline for the task (the larger of its operations at
peak rate and its bytes at memory bandwidth), and the time left. `--progress=json` writes one
JSON object per event on stdout for scripts.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from tirc.tune.machine import Machine
from tirc.tune.records import OK, Trial
from tirc.tune.tasks import Task

MODES = ("rich", "plain", "json", "none")


def figure(task: Task, seconds: float) -> tuple[float, str]:
    """The task's throughput at `seconds`: GFLOP/s or GB/s."""
    if not seconds or seconds == float("inf"):
        return 0.0, "GFLOP/s" if task.compute_bound else "GB/s"
    if task.compute_bound:
        return task.flops / seconds / 1e9, "GFLOP/s"
    return task.bytes / seconds / 1e9, "GB/s"


def roofline_share(task: Task, seconds: float, m: Machine) -> float:
    """The roofline's time for the task over `seconds` (1.0 is the machine's limit)."""
    if not seconds or seconds == float("inf"):
        return 0.0
    bound = max(task.flops / (m.peak_gflops() * 1e9), task.bytes / (m.memory_gbps * 1e9))
    return bound / seconds


class Progress:
    """Reports events of a tune in one of MODES."""

    def __init__(self, mode: str, machine: Machine, deadline: float | None,
                 tasks: list[Task], console: Any = None) -> None:
        self.mode = mode
        self.machine = machine
        self.deadline = deadline
        self.tasks = tasks
        self.rows: dict[str, dict[str, Any]] = {
            t.id: {"trials": 0, "best": float("inf"), "state": "waiting"} for t in tasks}
        self.live: Any = None
        if mode == "rich":
            from rich.console import Console
            from rich.live import Live

            self.live = Live(self._table(), console=console or Console(stderr=True),
                             refresh_per_second=4, transient=False)
            self.live.start()

    def _eta(self) -> str:
        if self.deadline is None:
            return "-"
        left = max(0.0, self.deadline - time.monotonic())
        return f"{left:.0f}s"

    def _line(self, task: Task) -> str:
        row = self.rows[task.id]
        value, unit = figure(task, row["best"])
        share = roofline_share(task, row["best"], self.machine)
        return (f"{task.label}: {row['trials']} trials, best {value:.1f} {unit} "
                f"({share:.0%} of roofline), {row['state']}, ETA {self._eta()}")

    def _table(self) -> Any:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for col in ("task", "trials", "best", "roofline", "state", "ETA"):
            table.add_column(col)
        for task in self.tasks:
            row = self.rows[task.id]
            value, unit = figure(task, row["best"])
            share = roofline_share(task, row["best"], self.machine)
            table.add_row(task.label, str(row["trials"]), f"{value:.1f} {unit}",
                          f"{share:.0%}", row["state"], self._eta())
        return table

    def _emit(self, event: dict[str, Any], task: Task | None = None) -> None:
        if self.mode == "json":
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()
        elif self.mode == "plain" and task is not None:
            sys.stderr.write(f"tirc tune: {self._line(task)}\n")
        elif self.mode == "rich" and self.live is not None:
            self.live.update(self._table())

    def state(self, task: Task, state: str) -> None:
        self.rows[task.id]["state"] = state
        self._emit({"event": "state", "task": task.label, "state": state}, task)

    def trial(self, task: Task, trial: Trial) -> None:
        row = self.rows[task.id]
        row["trials"] += 1
        if trial.status == OK:
            row["best"] = min(row["best"], trial.seconds)
        value, unit = figure(task, row["best"])
        self._emit({"event": "trial", "task": task.label, "trials": row["trials"],
                    "status": trial.status, "seconds": trial.seconds
                    if trial.status == OK else None, "best_seconds": row["best"]
                    if row["best"] != float("inf") else None, "best": round(value, 3),
                    "unit": unit, "roofline": round(roofline_share(task, row["best"],
                                                                   self.machine), 4),
                    "elapsed": round(trial.elapsed, 3),
                    "eta": None if self.deadline is None else
                    round(max(0.0, self.deadline - time.monotonic()), 1)},
                   task if self.mode != "plain" else None)

    def close(self) -> None:
        if self.live is not None:
            self.live.update(self._table())
            self.live.stop()
            self.live = None
