"""Differential run over random graph functions (tests/difftest/graph_programs.py): every
program's results from the reference interpreter equal those of the library built at -O0,
-O1, -O2 and -O3, built as a static and as a dynamic megakernel, and of the GPU pipeline's
lowered IR run in the GPU interpreter. The long run is `scripts/difftest.py`.
"""

from __future__ import annotations

import numpy as np
import pytest
from difftest.builds import compile_module, graph_labels, interpret_graph, run_graph
from difftest.graph_programs import graph_case
from difftest.harness import Build, Checker, Report, failed_alike, format_report
from tirc.ir.graph import GCall, If, MatchCast, VarBinding
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


def test_batch_casts_branches_and_has_programs_that_must_fail() -> None:
    """Some programs `R.match_cast` to fresh sizes (difftest.graph_casts), some branch on a
    boolean argument (difftest.graph_branches), and some must fail at run time, a size check
    or a match_cast: the report above has every build failing as the reference does."""
    cases = [graph_case(seed) for seed in SEEDS]
    bindings = [[b for blk in c.func.body.blocks for b in blk.bindings] for c in cases]
    assert sum(c.fails is not None for c in cases) >= 2
    assert sum(any(isinstance(b, MatchCast) for b in bs) for bs in bindings) >= 5
    assert sum(any(isinstance(b.value, If) for b in bs if isinstance(b, VarBinding))
               for bs in bindings) >= 3


def test_a_build_must_fail_as_the_reference_does() -> None:
    """A build returning results, or failing with another message, where the reference failed
    is a finding; the source location (a file for the build) may differ."""
    want = "InterpreterError: <string>:3:9: R.add: sizes n = 3 and m = 4 must be equal"
    assert failed_alike(want, "TircError: /tmp/m1.tir:3:9: R.add: sizes n = 3 and m = 4 must "
                              "be equal", Build(0)) is None
    assert failed_alike(want, [np.zeros(3, "float32")], Build(3)) is not None
    assert failed_alike(want, "TircError: main: argument x: expected shape (3,)",
                        Build(0)) is not None
    assert failed_alike(want, "the call crashed the process (killed by signal 11)",
                        Build(2, gpu=True)) is not None


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
