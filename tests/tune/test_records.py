"""Record files: header per run, lines that survive a cut, best per task for this CPU."""

from __future__ import annotations

import dataclasses
import json

from tirc.tune import records
from tirc.tune.records import Trial, Writer, best_trials, read, tuned_config
from tune_support import MACHINE


def trial(tile: list[int], seconds: float, status: str = "ok", phase: str = "search",
          dims: dict[str, int] | None = None) -> Trial:
    return Trial("w1", "mm", "llvm -mcpu=x", dims or {}, {"tile_i": tile}, status,
                 [seconds] if status == "ok" else [], phase=phase)


def test_header_trials_done_and_a_cut_line(tmp_path):
    path = tmp_path / "r.tune.json"
    w = Writer(path)
    w.write(records.header(MACHINE))
    w.write(trial([4, 16], 2e-3).line())
    w.write(trial([8, 8], 1e-3).line())
    w.write(trial([64, 1], 0, status="crash").line())
    w.close()
    with path.open("a") as f:
        f.write('{"kind":"trial","workload":"w1","fu')  # the run was killed mid-line
    Writer(path).write({"kind": "done", "task": trial([1], 0).task, "budget": 60})
    sections = read(path)
    assert len(sections) == 1
    head = sections[0].header
    assert head["machine"]["cpu"] == "Test CPU" and head["machine"]["cores"] == 2
    assert {"tirc", "llvm"} <= set(head)
    assert [t.status for t in sections[0].trials] == ["ok", "ok", "crash"]
    assert sections[0].done[0]["budget"] == 60
    best = best_trials(sections)[trial([1], 0).task]
    assert best.decisions == {"tile_i": [8, 8]} and best.seconds == 1e-3
    assert json.loads(path.read_text().splitlines()[1])["decisions"] == {"tile_i": [4, 16]}


def test_final_measurements_decide_and_other_cpus_are_left_out(tmp_path):
    path = tmp_path / "r.tune.json"
    w = Writer(path)
    w.write(records.header(MACHINE))
    w.write(trial([8, 8], 1e-3).line())      # lucky once ...
    w.write(trial([4, 16], 2e-3).line())
    w.write(trial([8, 8], 3e-3, phase="final").line())   # ... slower with more repeats
    w.write(trial([4, 16], 2e-3, phase="final").line())
    other = dataclasses.replace(MACHINE, cpu="Other CPU")
    w.write(records.header(other))
    w.write(trial([2, 32], 1e-4).line())
    w.close()
    chosen, skipped = tuned_config(path, MACHINE)
    assert skipped == 1
    assert chosen == {"w1": [{"dims": {}, "decisions": {"tile_i": [4, 16]}}]}
    chosen, skipped = tuned_config(path, MACHINE, any_cpu=True)
    assert chosen["w1"][0]["decisions"] == {"tile_i": [4, 16]} and skipped == 0
    assert tuned_config(path, other)[0]["w1"][0]["decisions"] == {"tile_i": [2, 32]}
    assert tuned_config(path, MACHINE, target_kind="cuda")[0] == {}


def test_variants_by_dims(tmp_path):
    path = tmp_path / "r.tune.json"
    w = Writer(path)
    w.write(records.header(MACHINE))
    for n, tile in ((256, [32, 8]), (1, [1, 1]), (16, [4, 4])):
        w.write(trial(tile, 1e-3, dims={"n": n}).line())
    w.close()
    variants = tuned_config(path, MACHINE)[0]["w1"]
    assert [v["dims"]["n"] for v in variants] == [1, 16, 256]
