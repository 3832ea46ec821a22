"""The progress display: rich table, plain lines and JSON events carry trials, the best
figure, the share of the roofline and the time left."""

from __future__ import annotations

import io
import json
import time

from rich.console import Console
from tirc.tune.progress import Progress, figure, roofline_share
from tirc.tune.records import Trial
from tirc.tune.tasks import extract_tasks
from tune_support import MACHINE, matmul_module


def task():
    return extract_tasks(matmul_module(), "llvm", {})[0]


def trial(t, seconds: float, status: str = "ok") -> Trial:
    return Trial(t.workload, t.name, t.target, t.dims, {}, status,
                 [seconds] if status == "ok" else [], elapsed=1.5)


def test_figures():
    t = task()
    assert t.compute_bound
    value, unit = figure(t, 1e-3)
    assert unit == "GFLOP/s" and abs(value - 2 * 64 ** 3 / 1e-3 / 1e9) < 1e-9
    bound = max(t.flops / (MACHINE.peak_gflops() * 1e9), t.bytes / (MACHINE.memory_gbps * 1e9))
    assert abs(roofline_share(t, bound * 4, MACHINE) - 0.25) < 1e-9


def test_json_events(capsys):
    t = task()
    p = Progress("json", MACHINE, time.monotonic() + 30, [t])
    p.trial(t, trial(t, 2e-3))
    p.trial(t, trial(t, 0, "crash"))
    p.close()
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert events[-1]["trials"] == 2 and events[-1]["status"] == "crash"
    assert events[-1]["best_seconds"] == 2e-3 and events[-1]["unit"] == "GFLOP/s"
    assert 0 < events[-1]["eta"] <= 30


def test_rich_table():
    t = task()
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    p = Progress("rich", MACHINE, time.monotonic() + 60, [t], console=console)
    p.trial(t, trial(t, 1e-5))
    p.state(t, "round 2")
    p.close()
    text = out.getvalue()
    assert "mm" in text and "round 2" in text and "52.4 GFLOP/s" in text and "49%" in text
