"""`tirc tune FILE -o FILE.tune.json`: search the schedule decisions of FILE's functions by
measuring candidates on this machine, appending the measurements as JSON lines.

`--budget 60s` bounds the whole run (all overhead counted), `--trials N` the candidates
measured; `--dim n=1,16,256` tunes a symbolic size at those values (a build dispatches between
them). Re-running a finished tune does nothing; an interrupted one resumes. `--replay` prints
the schedule each function would be built with from the records, as `.tir` text. The exit
status is 1 when some function got no valid measurement.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import click
from tirc.cli.diagnostics_output import fail, reported_errors

UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_budget(text: str) -> float:
    """`60`, `60s`, `5m`, `1.5h` as seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(s|m|min|h)?\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise fail(f"--budget wants a positive time such as 60s, 5m or 1h, got '{text}'")
    return float(match.group(1)) * UNITS[match.group(2) or ""]


def parse_dims(items: tuple[str, ...]) -> dict[str, list[int]]:
    """`n=1,16,256` options as {"n": [1, 16, 256]}."""
    out: dict[str, list[int]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        sizes = [v.strip() for v in values.split(",")]
        if not eq or not name.isidentifier() or not all(v.isdigit() and int(v) > 0
                                                        for v in sizes):
            raise fail(f"--dim wants NAME=SIZE[,SIZE...] with positive sizes, got '{item}'")
        out[name] = sorted({int(v) for v in sizes})
    return out


def process_start() -> float:
    """When this process started, on the `time.monotonic()` clock (Linux: from /proc), so
    that a budget counts the interpreter's start and imports too; else now."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic()
    return time.monotonic() - max(age, 0.0)


def default_output(file: str) -> str:
    return str(Path(file).with_suffix(".tune.json"))


@click.command("tune")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "output", metavar="FILE.tune.json",
              help="The record file (JSON lines, appended to; default FILE.tune.json).")
@click.option("--budget", default="60s", show_default=True, metavar="TIME",
              help="Time for the whole tune, everything counted (60s, 5m, 1h).")
@click.option("--trials", type=click.IntRange(min=1), metavar="N",
              help="Measure at most N candidates in all.")
@click.option("--dim", "dims", multiple=True, metavar="NAME=SIZES",
              help="Tune a symbolic size at these values (n=1,16,256); repeatable.")
@click.option("--target", default="llvm", show_default=True, metavar="T",
              help="Target to tune for (CPU targets).")
@click.option("-O", "opt_level", type=click.IntRange(0, 3), default=2, show_default=True,
              metavar="0-3", help="Optimisation level the candidates are built at (build "
                                  "with the same -O).")
@click.option("--seed", default=0, show_default=True, help="Seed of the search.")
@click.option("--progress", type=click.Choice(["rich", "plain", "json", "none"]),
              help="Progress display (default: rich on a terminal, else plain).")
@click.option("--model", type=click.Choice(["auto", "xgboost", "analytic"]), default="auto",
              show_default=True, help="Cost model (auto: xgboost when installed).")
@click.option("--patience", type=click.IntRange(min=1), default=1, show_default=True,
              metavar="N", help="Stop a function's search after N rounds in a row that each "
                                "gained under 1%.")
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Build processes (default: one per core).")
@click.option("--replay", is_flag=True,
              help="Print the schedule each function gets from the records, and stop.")
@click.option("--tuned-any-cpu", "any_cpu", is_flag=True,
              help="With --replay: also use records measured on another CPU.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR",
              help="Search DIR for imported .tir files.")
@click.option("--schedule", "schedules", multiple=True, metavar="FILE",
              help="Add the schedules in FILE (their sample_* decisions are searched too).")
@click.option("--debug", is_flag=True, help="Show a traceback for internal errors.")
def tune_command(file: str, output: str | None, budget: str, trials: int | None,
                 dims: tuple[str, ...], target: str, opt_level: int, seed: int,
                 progress: str | None, model: str, patience: int, workers: int | None,
                 replay: bool,
                 any_cpu: bool, include_dirs: tuple[str, ...], schedules: tuple[str, ...],
                 debug: bool) -> None:
    """Tune the schedules of FILE's functions on this machine."""
    started = process_start()
    with reported_errors(debug):
        from tirc.cli.compile_cmd import add_schedules, read_module

        if target.split()[0] != "llvm" and not target.lstrip().startswith("{"):
            raise fail(f"tirc tune measures on this machine's CPU: --target must be an llvm "
                       f"target, got '{target}'")
        out = output or default_output(file)
        mod = add_schedules(read_module(file, include_dirs), schedules, include_dirs)
        if replay:
            from tirc.tune.replay import replay_text

            sys.stdout.write(replay_text(mod, out, target, parse_dims(dims), any_cpu))
            return
        from tirc.tune.driver import TuneOptions, summary, tune
        from tirc.tune.search import SearchOptions

        mode = progress or ("rich" if sys.stderr.isatty() else "plain")
        opts = TuneOptions(output=out, budget=parse_budget(budget), trials=trials,
                           dims=parse_dims(dims), target=target, seed=seed,
                           opt_level=opt_level, progress=mode, model=model,
                           workers=workers or 0, search=SearchOptions(patience=patience),
                           started=started)
        try:
            outcome = tune(mod, opts)
        except KeyboardInterrupt:
            sys.stderr.write(f"tirc tune: interrupted; the measurements so far are in {out}, "
                             "run the same command to resume\n")
            sys.exit(130)
        if mode != "json":
            summary(outcome)
        if outcome.status:
            sys.stderr.write(f"tirc tune: error: no valid candidate was measured for some "
                             f"function (see {out})\n")
            sys.exit(outcome.status)
