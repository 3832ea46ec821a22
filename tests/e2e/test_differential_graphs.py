"""Differential run over random graph functions (tests/difftest/graph_programs.py): every
program's results from the reference interpreter equal those of the library built at -O0,
-O1, -O2 and -O3, built as a static and as a dynamic megakernel, and of the GPU pipeline's
lowered IR run in the GPU interpreter. The long run is `scripts/difftest.py`.
"""

from __future__ import annotations

import pytest
from difftest.builds import compile_module, graph_labels, interpret_graph, run_graph
from difftest.graph_programs import graph_case
from difftest.harness import Build, Checker, Report, format_report
from tirc.ir.graph import GCall
from tirc.passes.graph.legalize_table import LEGALIZERS, get_legalizer

SEEDS = range(0, 40)
BUILDS = [Build(0), Build(1), Build(2), Build(3), Build(2, "static"), Build(2, "dynamic"),
          Build(2, gpu=True)]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    checker = Checker(tmp_path_factory.mktemp("difftest_graphs"), compile_module,
                      interpret_graph, run_graph, graph_labels)
    return checker.check([graph_case(seed) for seed in SEEDS], BUILDS)


def test_random_graph_programs_agree_with_the_interpreter(report: Report) -> None:
    assert report.programs == len(SEEDS)
    assert report.builds == [str(b) for b in BUILDS]
    assert not report.findings, format_report(report, "random graph functions")


def _ops(seeds: range) -> set[str]:
    ops: set[str] = set()
    for seed in seeds:
        for block in graph_case(seed).func.body.blocks:
            ops |= {b.value.op for b in block.bindings if isinstance(b.value, GCall)}
    return ops


# Operators the dense generator cannot call, with the test that compares them instead.
ELSEWHERE = {"sparse.matmul"}  # an R.SparseTensor operand: tests/e2e/test_sparse_kernels.py


def test_generator_covers_the_operators() -> None:
    """The batch calls most operators tirc legalizes, and a longer run all of them."""
    want = {"add", "subtract", "multiply", "maximum", "minimum", "matmul", "sum", "max",
            "nn.log_softmax", "nn.layer_norm", "permute_dims", "reshape", "concat", "take",
            "astype", "full", "split", "broadcast_to"}
    assert want <= _ops(SEEDS), f"not generated: {sorted(want - _ops(SEEDS))}"
    get_legalizer("add")
    missing = set(LEGALIZERS) - _ops(range(1500)) - ELSEWHERE
    assert not missing, f"never generated: {sorted(missing)}"
