"""The default rules' decisions as a search space: candidate 0 is the default schedule, given
decisions change it, misfits are refused, graph functions' fused kernels are tasks, and a build
with the recorded decisions replays them."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import run_prim_func
from tirc.ir.printer import print_function
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline
from tirc.passes.schedule.tuned_option import DECISIONS_CONFIG
from tirc.passes.schedule_rules.api import schedule_function
from tirc.tune.rules_space import RulesSpace
from tirc.tune.tasks import extract_tasks

MATMUL = textwrap.dedent('''
    @T.prim_func
    def mm(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48, 64), "float32"),
           C: T.Buffer((32, 64), "float32")):
        T.func_attr({"global_symbol": "mm", "tir.noalias": True})
        for i, j, k in T.grid(32, 64, 48):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    ''')

MLP = textwrap.dedent('''
    @R.function
    def mlp(x: R.Tensor((16, 32), "float32"), w1: R.Tensor((32, 64), "float32"),
            b1: R.Tensor((64,), "float32"), w2: R.Tensor((64, 32), "float32")
            ) -> R.Tensor((16, 32), "float32"):
        with R.dataflow():
            h = R.matmul(x, w1)
            a = R.nn.relu(R.add(h, b1))
            y = R.matmul(a, w2)
            R.output(y)
        return y
    ''')


def text(func) -> str:
    return "\n".join(print_function(func))


def tile_names(space: RulesSpace) -> list[str]:
    return [d.name for d in space.apply({}).decisions if d.prim == "sample_perfect_tile"]


def test_candidate_0_is_the_default_schedule():
    func = parse(MATMUL, "mm.tir")["mm"]
    space = RulesSpace(func, "llvm")  # type: ignore[arg-type]
    cand = space.apply({})
    assert cand.decisions and text(cand.func) == text(schedule_function(func, "llvm")[0])
    for d in cand.decisions:
        assert d.fits(d.value)


def test_given_decisions_and_misfits():
    func = parse(MATMUL, "mm.tir")["mm"]
    space = RulesSpace(func, "llvm")  # type: ignore[arg-type]
    default = space.apply({})
    tile = next(d for d in default.decisions if d.prim == "sample_perfect_tile")
    other = next(o for o in tile.options() if o != tile.value)
    cand = space.apply({tile.name: other})
    assert cand.values[tile.name] == other and text(cand.func) != text(default.func)
    a = np.random.default_rng(0).standard_normal((32, 48)).astype("float32")
    b = np.random.default_rng(1).standard_normal((48, 64)).astype("float32")
    c = np.zeros((32, 64), "float32")
    run_prim_func(cand.func, [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(CompileError):
        space.apply({tile.name: [7, 3]})
    drawn = {space.apply({}, seed).key for seed in range(1, 4)}
    assert len(drawn) > 1


def test_fused_kernels_are_tasks_and_builds_replay_their_decisions():
    mod = parse(MLP, "mlp.tir")
    tasks = extract_tasks(mod, "llvm", {})
    assert len(tasks) >= 2 and all(isinstance(t.space, RulesSpace) for t in tasks)
    task = next(t for t in tasks if tile_names(t.space))  # type: ignore[arg-type]
    default = task.space.apply({})
    tile = next(d for d in default.decisions if d.prim == "sample_perfect_tile")
    other = next(o for o in tile.options() if o != tile.value)
    chosen = task.space.apply({tile.name: other})
    tuned = {task.workload: [{"dims": {}, "decisions": {tile.name: list(other)}}]}
    target = parse_target("llvm")
    steps = default_pipeline(target, 2)
    steps = steps[:steps.index("default-schedule") + 1]

    def scheduled(config: dict[str, str]) -> str:
        out = run_pipeline(mod, build_pipeline(steps), PassContext(2, target, config))
        return text(out.functions[task.name])

    assert scheduled({DECISIONS_CONFIG: json.dumps(tuned)}) == text(chosen.func)
    assert scheduled({}) == text(default.func)


SYMBOLIC = textwrap.dedent('''
    @T.prim_func
    def dmm(a: T.handle, b: T.Buffer((16, 32), "float32"), c: T.handle):
        T.func_attr({"global_symbol": "dmm", "tir.noalias": True})
        n = T.int64()
        A = T.match_buffer(a, (n, 16), "float32")
        C = T.match_buffer(c, (n, 32), "float32")
        for i, j, k in T.grid(n, 32, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * b[vk, vj]
    ''')


def test_sizes_tuned_with_the_rules_dispatch_at_run_time():
    mod = parse(SYMBOLIC, "dmm.tir")
    tasks = extract_tasks(mod, "llvm", {"n": [2, 32]})
    assert sorted(t.dims["n"] for t in tasks) == [2, 32]
    tuned = {tasks[0].workload: [{"dims": t.dims, "decisions": {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in t.space.apply({}, seed=3).values.items()}} for t in tasks]}
    target = parse_target("llvm")
    steps = default_pipeline(target, 2)
    steps = steps[:steps.index("default-schedule") + 1]
    ctx = PassContext(2, target, {DECISIONS_CONFIG: json.dumps(tuned)})
    func = run_pipeline(mod, build_pipeline(steps), ctx).functions["dmm"]
    assert "if n <= T.int64(8):" in text(func)
    for n in (1, 5, 8, 9, 40):
        a = np.random.default_rng(n).standard_normal((n, 16)).astype("float32")
        b = np.random.default_rng(0).standard_normal((16, 32)).astype("float32")
        c = np.zeros((n, 32), "float32")
        run_prim_func(func, [a, b, c])
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
