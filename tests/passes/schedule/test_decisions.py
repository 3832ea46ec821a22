"""Named decisions: names from the schedule text, given values taken where they fit, replay
as printed `decision=` arguments, tuned decisions at build time with a size dispatch."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import run_prim_func
from tirc.ir.printer import SchedulePrinter, print_function
from tirc.passes.pass_base import PassContext
from tirc.passes.schedule.apply import ApplySchedules
from tirc.passes.schedule.decisions import (
    decision_names,
    fix_decisions,
    run_with_decisions,
    workload_key,
)
from tirc.passes.schedule.tuned_option import DECISIONS_CONFIG

MATMUL = '''
@T.prim_func
def mm(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48, 64), "float32"),
       C: T.Buffer((32, 64), "float32")):
    for i, j, k in T.grid(32, 64, 48):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@S.schedule("mm")
def sched(sch):
    b = sch.get_block("C")
    i, j, k = sch.get_loops(b)
    t0, t1 = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    i0, i1 = sch.split(i, factors=[t0, t1])
    u0, u1, u2 = sch.sample_perfect_tile(j, n=3, max_innermost_factor=16)
    j0, j1, j2 = sch.split(j, factors=[u0, u1, u2])
    v = sch.sample_categorical([1, 2, 4], [0.2, 0.3, 0.5])
    w = sch.sample_categorical([0, 16], [0.5, 0.5], decision=1)
    sch.reorder(i0, j0, k, i1, j1, j2)
    sch.vectorize(j2)
'''

DYNAMIC = '''
@T.prim_func
def rows(a: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 16), "float32")
    C = T.match_buffer(c, (n, 16), "float32")
    for i, j in T.grid(n, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


@S.schedule("rows")
def sched(sch):
    b = sch.get_block("C")
    i, j = sch.get_loops(b)
    t0, t1 = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    i0, i1 = sch.split(i, factors=[t0, t1])
    sch.parallel(i0)
'''


def script(func) -> str:
    return "\n".join(print_function(func))


def module(text: str = MATMUL):
    return parse(textwrap.dedent(text), "d.tir")


def test_names_come_from_the_schedule_text():
    mod = module()
    assert [n for n in decision_names(mod.schedules[0]) if n] == ["tile_i", "tile_j", "v", "w"]
    again = module(MATMUL.replace("    sch.reorder", "    x0, x1 = sch.sample_perfect_tile("
                                  "i, n=2)\n    sch.reorder"))
    assert [n for n in decision_names(again.schedules[0]) if n][-1] == "tile_i#2"


def test_given_values_are_taken_and_recorded():
    mod = module()
    func, taken = run_with_decisions(mod["mm"], mod.schedules[0],
                                     {"tile_i": [4, 8], "tile_j": (2, 2, 16), "v": 0})
    by_name = {d.name: d for d in taken}
    assert by_name["tile_i"].value == (4, 8) and by_name["tile_i"].extent == 32
    assert by_name["tile_j"].value == (2, 2, 16) and by_name["tile_j"].n == 3
    assert by_name["v"].value == 0 and by_name["v"].chosen() == 1
    assert by_name["w"].value == 1  # the schedule's own decision= stays
    assert "for i_0, j_0, k, i_1, j_1 in T.grid(4, 2, 48, 8, 2):" in script(func)


def test_a_value_that_does_not_fit_is_drawn_again():
    mod = module()
    _, taken = run_with_decisions(mod["mm"], mod.schedules[0],
                                  {"tile_i": [3, 11], "tile_j": [64, 1, 1, 1], "v": 7})
    for d in taken:
        assert d.fits(d.value)
    assert {d.name: d.value for d in taken}["tile_i"] != (3, 11)


def test_same_seed_same_decisions_and_options_cover_the_domain():
    mod = module()
    a = run_with_decisions(mod["mm"], mod.schedules[0], {}, seed=5)[1]
    b = run_with_decisions(mod["mm"], mod.schedules[0], {}, seed=5)[1]
    assert a == b
    tile_i = a[0]
    assert sorted(tile_i.options()) == [(4, 8), (8, 4), (16, 2), (32, 1)]


def test_fixed_decisions_print_and_replay_the_same_function():
    mod = module()
    func, taken = run_with_decisions(mod["mm"], mod.schedules[0], {}, seed=3)
    fixed = fix_decisions(mod.schedules[0], {d.name: d.value for d in taken})
    text = "\n".join(SchedulePrinter().schedule(fixed))
    assert f"decision={list(taken[0].value)}" in text
    reparsed = parse(textwrap.dedent(MATMUL).split("@S.schedule")[0] + text + "\n", "r.tir")
    again = ApplySchedules()(reparsed)
    assert script(again["mm"]) == script(func)


def test_tuned_decisions_at_build_time():
    mod = module()
    key = workload_key(mod["mm"])
    tuned = {key: [{"dims": {}, "decisions": {"tile_i": [16, 2], "v": 2}}]}
    ctx = PassContext(config={DECISIONS_CONFIG: json.dumps(tuned)})
    out = script(ApplySchedules()(mod, ctx)["mm"])
    assert "for i_0, j_0, k, i_1, j_1 in T.grid(16," in out
    untuned = ApplySchedules()(mod, PassContext(config={DECISIONS_CONFIG: "{}"}))["mm"]
    assert script(untuned) == script(ApplySchedules()(mod)["mm"])


def test_malformed_tuned_decisions_are_an_error_naming_the_key():
    for text, what in (("{", "is not JSON"), ("[1]", "must map workload keys")):
        with pytest.raises(CompileError, match=f"pass config 'schedule.decisions' {what}"):
            ApplySchedules()(module(), PassContext(config={DECISIONS_CONFIG: text}))


def test_sizes_tuned_separately_are_dispatched_at_run_time():
    mod = module(DYNAMIC)
    key = workload_key(mod["rows"])
    tuned = {key: [{"dims": {"n": 2}, "decisions": {"tile_i": [2, 1]}},
                   {"dims": {"n": 64}, "decisions": {"tile_i": [8, 8]}}]}
    ctx = PassContext(config={DECISIONS_CONFIG: json.dumps(tuned)})
    func = ApplySchedules()(mod, ctx)["rows"]
    text = script(func)
    assert "if n <= T.int64(11):" in text  # the geometric mean of 2 and 64
    assert "T.parallel((n + T.int64(7)) // T.int64(8))" in text
    for n in (1, 5, 11, 12, 30):
        a = np.random.default_rng(n).standard_normal((n, 16)).astype("float32")
        c = np.zeros((n, 16), "float32")
        run_prim_func(func, [a, c])
        np.testing.assert_allclose(c, a * 2)
