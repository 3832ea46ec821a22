"""The search: the default decisions first, discarded invalid candidates, the same seed giving
the same decisions, convergence on a known best, budgets in trials, resuming."""

from __future__ import annotations

from tirc.tune.cost_model import make_model
from tirc.tune.driver import TuneOptions, tune
from tirc.tune.records import decisions_key, read
from tirc.tune.search import SearchOptions, TaskSearch
from tirc.tune.tasks import extract_tasks
from tune_support import MACHINE, FakeMeasurer, matmul_module, synthetic_seconds


def search(seed: int = 0, model: str = "analytic") -> tuple[TaskSearch, FakeMeasurer]:
    task = extract_tasks(matmul_module(), "llvm", {})[0]
    fake = FakeMeasurer()
    return TaskSearch(task, make_model(model, seed), fake, seed,
                      SearchOptions(batch=4, population=8)), fake


def test_the_default_decisions_are_candidate_0():
    s, fake = search()
    s.start()
    default = s.task.space.apply({}, 0).values
    assert fake.measured[0] == default


def test_same_seed_same_decisions():
    runs = []
    for _ in range(2):
        s, fake = search(seed=7, model="auto")
        s.start()
        for _ in range(2):
            s.step()
        runs.append([decisions_key(d) for d in fake.measured])
    assert runs[0] == runs[1]
    other, fake = search(seed=8, model="auto")
    other.start()
    for _ in range(2):
        other.step()
    assert [decisions_key(d) for d in fake.measured] != runs[0]


def test_search_finds_the_best_and_stops_when_rounds_gain_nothing():
    s, fake = search()
    s.start()
    for _ in range(30):
        if s.finished:
            break
        s.step()
    assert s.finished.startswith("converged")
    assert s.best is not None
    assert s.best.seconds == synthetic_seconds({"tile_i": (8, 8), "tile_j": (2, 32), "u": 1})
    keys = [decisions_key(d) for d in fake.measured]
    assert len(keys) == len(set(keys))  # nothing measured twice


def test_trial_limit_and_batch():
    s, fake = search()
    s.options = SearchOptions(batch=3)
    s.start()
    s.step(trial_limit=2)
    assert len(fake.measured) == 1 + 2


def test_tune_records_resumes_and_is_a_no_op_when_finished(tmp_path):
    out = tmp_path / "mm.tune.json"
    opts = TuneOptions(output=str(out), budget=None, trials=8, progress="none", model="analytic")
    first = FakeMeasurer()
    outcome = tune(matmul_module(), opts, MACHINE, first)
    assert outcome.status == 0 and outcome.trials >= 8
    default = extract_tasks(matmul_module(), "llvm", {})[0].space.apply({}).values
    assert first.final[-1] == default  # the default is judged beside the finalists
    sections = read(out)
    assert len(sections) == 1 and sections[0].header["machine"]["cpu"] == "Test CPU"
    assert len(sections[0].done) == 1
    again = FakeMeasurer()
    outcome = tune(matmul_module(), opts, MACHINE, again)
    assert again.measured == [] and outcome.trials == 0 and outcome.status == 0
    # an interrupted run: the same trials without their `done` line
    cut = tmp_path / "cut.tune.json"
    lines = [ln for ln in out.read_text().splitlines() if '"kind":"done"' not in ln]
    cut.write_text("\n".join(lines[:5]) + "\n" + lines[5][:20])
    earlier = {decisions_key(t.decisions) for t in read(cut)[0].trials}
    resumed = FakeMeasurer()
    tune(matmul_module(), TuneOptions(output=str(cut), budget=None, trials=6,
                                      progress="none", model="analytic"), MACHINE, resumed)
    assert resumed.measured
    assert not earlier & {decisions_key(d) for d in resumed.measured}
