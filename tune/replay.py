"""`tirc tune --replay`: the schedule each tuned function is built with, as `.tir` text.

For every task, the best record for this machine (or any, when asked) fixes the decisions of
the function's schedule (`decision=` on each `sample_*` call); the result prints as an
`@S.schedule` a user can paste into the file. A task without a record shows its default
decisions; a function tuned at several sizes shows one schedule per size.
"""

from __future__ import annotations

from tirc.ir.module import IRModule
from tirc.ir.printer import SchedulePrinter
from tirc.tune import records
from tirc.tune.machine import this_machine
from tirc.tune.progress import figure
from tirc.tune.tasks import extract_tasks


def replay_text(mod: IRModule, path: str, target: str, dims: dict[str, list[int]],
                any_cpu: bool = False) -> str:
    """The chosen schedule of every task of `mod`, from the records in `path`."""
    sections = records.matching(records.read(path), this_machine(), any_cpu)
    best = records.best_trials(sections)
    found_dims = dict(dims)
    for t in best.values():
        for k, v in t.dims.items():
            found_dims.setdefault(k, [])
            if v not in found_dims[k]:
                found_dims[k] = sorted([*found_dims[k], v])
    lines: list[str] = []
    for task in extract_tasks(mod, target, found_dims):
        trial = best.get(task.id)
        if trial is None:
            lines.append(f"# {task.label}: not tuned; the default decisions")
            given = task.space.apply({}, 0).values
        else:
            value, unit = figure(task, trial.seconds)
            lines.append(f"# {task.label}: tuned, {trial.seconds * 1e3:.3f} ms "
                         f"({value:.1f} {unit})")
            given = trial.decisions
        lines.extend(SchedulePrinter().schedule(task.space.schedule_text(given)))
        lines.append("")
    return "\n".join(lines)
