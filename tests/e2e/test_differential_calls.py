"""Differential run over random graph functions that call their module's loop functions
(tests/difftest/graph_calls.py: R.call_tir with one or two outputs, R.call_tir_inplace, a
scalar argument, TVM's memory-planned forms, R.print): the reference interpreter's results
equal the library's at -O0 and -O3 and as a dynamic megakernel. The long run is
`scripts/difftest.py --kind calls`.
"""

from __future__ import annotations

import re

import pytest
from difftest.builds import compile_module, graph_labels, interpret_graph, run_graph
from difftest.graph_calls import calls_case, calls_module
from difftest.harness import Build, Checker, Report, format_report

# 7100231: a loop function passing its parameters' storage (`A7.data`) to another, fused
# with the zeros it writes into in place: fuse-tir left `A7` unbound (-O1..-O3 refused it)
SEEDS = [*range(0, 8), 7100231]
BUILDS = [Build(0), Build(3), Build(2, "dynamic")]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    checker = Checker(tmp_path_factory.mktemp("difftest_calls"), compile_module,
                      interpret_graph, run_graph, graph_labels)
    return checker.check([calls_case(seed) for seed in SEEDS], BUILDS)


def test_random_call_programs_agree_with_the_interpreter(report: Report) -> None:
    assert report.programs == len(SEEDS)
    assert report.builds == [str(b) for b in BUILDS]
    assert not report.findings, format_report(report, "random graph functions with calls")


def test_generator_writes_every_form() -> None:
    """A short run of seeds writes each form the generator exists for."""
    text = "\n".join(calls_module(seed)[0] for seed in range(60))
    forms = {"R.call_tir(": r"R\.call_tir\(", "tuple out_sinfo": r"out_sinfo=\[",
             "inplace [0]": r"inplace_indices=\[0\]", "inplace [0, -1]": r"\[0, -1\]",
             "prim_value": r"R\.prim_value", "alloc_tensor": r"R\.builtin\.alloc_tensor",
             "storage": r"R\.memory\.alloc_storage", "kill_tensor": r"kill_tensor",
             "kill_storage": r"kill_storage", "print": r"R\.print", "dataflow": r"R\.dataflow",
             "direct call": r"\n\s+(_ = )?cls\.", "symbolic": r"\"n\"",
             "storage reuse": r"kill_tensor\(\w+\)\n\s+alloc\d+ = R\.memory\.alloc_tensor"}
    missing = [name for name, pattern in forms.items() if not re.search(pattern, text)]
    assert not missing, f"not generated: {missing}"


def test_a_seed_is_a_reproducible_module() -> None:
    assert calls_module(5)[0] == calls_module(5)[0]
