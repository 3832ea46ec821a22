"""The rules' decisions, for a tuner: each function's trace names every choice with its
default; applying the rules with other values changes the schedule (the printed schedule
shows them); a value that does not fit, or that a primitive refuses, is a DecisionError, never
a wrong function; opting out leaves a function alone."""

from __future__ import annotations

import numpy as np
import pytest
from rule_programs import PROGRAMS
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.module import IRModule
from tirc.ir.printer import print_node
from tirc.passes.schedule_rules.api import apply_rules, rule_traces, schedule_function
from tirc.passes.schedule_rules.traced import DecisionError

MOD = parse(PROGRAMS)
MATMUL = IRModule({"batch_mm": MOD["batch_mm"], "row_sum": MOD["row_sum"]})


def test_traces_name_every_decision_with_its_default() -> None:
    traces = rule_traces(MATMUL, "llvm")
    assert set(traces) == {"batch_mm", "row_sum"}
    mm = traces["batch_mm"].decisions
    assert {"C_tile_i", "C_tile_j", "C_unroll_k"} <= set(mm)
    tile = mm["C_tile_i"]
    assert tile.prim == "sample_perfect_tile" and tile.value == tile.default == [4, 5]
    text = print_node(traces["batch_mm"].schedule)
    assert "C_tile_i = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16, " \
        "decision=[4, 5])" in text and "sch.split(i, factors=C_tile_i)" in text
    lanes = traces["row_sum"].decisions["B_lanes"]
    assert lanes.prim == "sample_categorical" and lanes.candidates[lanes.value] == 16


def test_overridden_decisions_reschedule_and_keep_meaning() -> None:
    new = apply_rules(MATMUL, "llvm", {"batch_mm": {"C_tile_i": [10, 2], "C_tile_j": [4, 6]},
                                       "row_sum": {"B_lanes": 0}})
    trace = schedule_function(MATMUL["batch_mm"], "llvm", {"C_tile_i": [10, 2]})[1]
    assert trace.decisions["C_tile_i"].value == [10, 2]
    assert trace.decisions["C_tile_i"].default == [4, 5]
    assert "decision=[10, 2]" in print_node(trace.schedule)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 20, 16), "float32"), rng.standard_normal((3, 16, 24), "float32")
    c = np.zeros((3, 20, 24), "float32")
    Interpreter(new).call("batch_mm", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((2, 37), "float32")
    s = np.zeros(2, "float32")
    Interpreter(new).call("row_sum", x, s)
    np.testing.assert_allclose(s, x.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("decisions,message", [
    ({"C_tile_i": [3, 7]}, "does not multiply to the loop extent 20"),
    ({"C_tile_i": [20]}, "decision must be a list of 2 positive integers"),
    ({"C_nonsense": 1}, "has no decision 'C_nonsense'"),
])
def test_bad_candidates_are_rejected(decisions: dict[str, object], message: str) -> None:
    with pytest.raises(DecisionError, match=message):
        schedule_function(MATMUL["batch_mm"], "llvm", decisions)


def test_a_candidate_a_primitive_refuses_is_rejected() -> None:
    # 32 is not among the categorical's candidates' indices: a clean rejection
    with pytest.raises(DecisionError, match="not an index"):
        schedule_function(MATMUL["row_sum"], "llvm", {"B_lanes": 7})


def test_opted_out_and_hand_scheduled_functions_have_no_trace() -> None:
    text = PROGRAMS.replace('    A = T.match_buffer(a, (m, n), "float32")\n    B = T.match_buffer('
                            'b, (m,), "float32")',
                            '    A = T.match_buffer(a, (m, n), "float32")\n    B = T.match_buffer('
                            'b, (m,), "float32")\n    T.func_attr({"tirc.schedule": "none"})')
    mod = parse(text)
    assert "row_sum" not in rule_traces(mod, "llvm")
    assert "row_sum" not in rule_traces(MOD, "llvm", "none")
    assert "batch_mm" in rule_traces(mod, "llvm")
