"""Differential run at size 0 (tests/difftest/loop_programs.py: empty_loop_case): the random
loop functions with symbolic sizes, run with every size 0. Their loops over those sizes are
empty and their reductions never run their init, so each build must leave the outputs as the
interpreter does (at -O1..-O3 a hoisted init or a cache's copy wrote them). The long run is
`scripts/difftest.py --kind empty`.
"""

from __future__ import annotations

from pathlib import Path

from difftest.builds import compile_module, interpret_loop, loop_labels, run_loop
from difftest.harness import Build, Checker, format_report
from difftest.loop_programs import empty_loop_case

# Seeds 4, 7, 47, 57 and 60 were wrong at -O1..-O3 before the fix (stop 39's compiler).
SEEDS = range(0, 72)
BUILDS = [Build(0), Build(1), Build(2), Build(3), Build(3, bounds_check=True),
          Build(2, gpu=True)]


def test_random_loop_programs_at_size_zero_agree_with_the_interpreter(tmp_path: Path) -> None:
    """The interpreter refusing a program at size 0 (a `% n`, a cast of 0/0 to an integer) is
    the program's, not a finding."""
    programs = [p for p in map(empty_loop_case, SEEDS) if p is not None]
    checker = Checker(tmp_path, compile_module, interpret_loop, run_loop, loop_labels)
    report = checker.check(programs, BUILDS)
    assert len(programs) > 20 and report.programs == len(programs)
    report.findings = [f for f in report.findings if f.kind != "reference"]
    assert not report.findings, format_report(report, "random loop functions at size 0")
