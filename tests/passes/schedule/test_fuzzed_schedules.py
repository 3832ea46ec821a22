"""Random schedules on random loop functions (tests/difftest/schedule_programs.py): every
primitive the fuzzer calls either applies or refuses with a diagnostic, and every schedule made
of those that applied keeps the function's results, in the interpreter and compiled at -O0 and
-O3 (the unscheduled function, interpreted, is the reference). The long run is
`scripts/difftest.py --kind schedule`.
"""

from __future__ import annotations

from collections import Counter

import pytest
from difftest.builds import compile_module, interpret_loop, loop_labels, run_loop
from difftest.harness import Build, Checker, Report, format_report
from difftest.schedule_programs import ScheduleCase, random_schedule_case

SEEDS = range(0, 60)
BUILDS = [Build(0, scheduled=True), Build(0), Build(3)]


@pytest.fixture(scope="module")
def cases() -> list[ScheduleCase]:
    return [random_schedule_case(seed) for seed in SEEDS]


@pytest.fixture(scope="module")
def report(cases: list[ScheduleCase], tmp_path_factory: pytest.TempPathFactory) -> Report:
    checker = Checker(tmp_path_factory.mktemp("fuzzed_schedules"), compile_module,
                      interpret_loop, run_loop, loop_labels)
    return checker.check([c.program for c in cases if c.applied], BUILDS)


def test_refusals_are_diagnostics(cases: list[ScheduleCase]) -> None:
    internal = [f"seed {c.program.seed}: {e}" for c in cases for e in c.internal]
    assert not internal, "\n".join(internal)


def test_fuzzer_reaches_the_primitives(cases: list[ScheduleCase]) -> None:
    """The batch applies a fair share of what it tries, across the primitives."""
    applied = Counter(ins.prim for c in cases for ins in c.schedule.instrs)
    assert sum(c.applied for c in cases) >= 80
    for prim in ("split", "fuse", "reorder", "parallel", "cache_read", "cache_write",
                 "decompose_reduction", "rfactor", "blockize"):
        assert applied[prim] > 0, (prim, applied)
    assert applied["compute_at"] + applied["reverse_compute_at"] > 0, applied
    for prim in ("dispatch", "sample_perfect_tile", "annotate"):  # the stream of their own
        assert applied[prim] > 0, (prim, applied)


def test_scheduled_functions_keep_their_results(report: Report) -> None:
    assert report.builds == [str(b) for b in BUILDS]
    assert not report.findings, format_report(report, "random schedules")
