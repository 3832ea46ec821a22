"""Fewer events: all-to-all edges share their producer's completion counter, and edges implied
through a kind that may have no task are left out under a `megakernel.in_order` condition,
which the interleaving checker and both CPU schedules honour (program order for those shapes).

The relay graph: `v = exp(x) + (sum(t) + sum(t * t))` with `t = w + sum(exp(x))`, x (n, 8)
and w (m, 8). The kind computing `t` has m tasks (two sums read it, so it is not inlined into
either); v's tiles wait only on the kind adding the two sums, which orders them after exp(x)
through that kind when m > 0. With m == 0 nothing does, so the tasks must run in order."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from megakernel_support import task_graph
from tirc.backends import build
from tirc.frontend import parse
from tirc.ir import IRModule, PrimFunc
from tirc.ir.attrs import MEGAKERNEL_IN_ORDER
from tirc.ir.stmt import AttrStmt, Stmt
from tirc.ir.target import parse_target
from tirc.ir.visitor import Mutator
from tirc.passes.manager import run_pipeline
from tirc.passes.megakernel.interleave import check_interleavings
from tirc.passes.megakernel.task_graph import read_task_graph
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline
from tirc.runtime import load

RELAY = """
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor(("m", 8), "float32")
             ) -> R.Tensor(("n", 8), "float32"):
        with R.dataflow():
            a = R.exp(x)
            s = R.sum(a)
            t = R.add(w, s)
            u = R.sum(t)
            q = R.sum(R.multiply(t, t))
            v = R.add(a, R.add(u, q))
            R.output(v)
        return v
"""


def _relay_module(mode: str = "static") -> IRModule:
    steps = default_pipeline(parse_target("llvm"), 2)
    steps = steps[: steps.index("megakernel") + 1]
    return run_pipeline(parse(RELAY), build_pipeline(steps),
                        PassContext(config={"megakernel": mode}))


def _relay_task_graph(mode: str = "static") -> PrimFunc:
    func = _relay_module(mode)["main"]
    assert isinstance(func, PrimFunc)
    return func


def _inputs(n: int, m: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n * 10 + m)
    return [rng.standard_normal((n, 8)).astype("float32"),
            rng.standard_normal((m, 8)).astype("float32")]


def _expected(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    a = np.exp(x.astype(np.float64))
    t = w + a.sum()
    return (a + (t.sum() + (t * t).sum())).astype("float32")


class _DropInOrder(Mutator):
    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        return self.visit(s.body) if s.key == MEGAKERNEL_IN_ORDER else self.generic_visit(s)


def test_all_to_all_edges_share_the_producer_counter() -> None:
    text = task_graph("transformer_block.tir").script()
    events = re.findall(r"(E_\w+) = T\.event_tensor\(", text)
    done = [name for name in events if name.endswith("_done")]
    assert done and all(f"{name} = T.event_tensor((T.int64(1),)," in text for name in done)
    # Each kind notifies its completion counter once per task, whatever its consumers.
    for name in done:
        kind = name[2:-5]
        loop = text[text.index(f'annotations={{"task": "{kind}"}}'):]
        loop = loop[:loop.index("annotations={", 1)] if "annotations={" in loop[1:] else loop
        assert loop.count(f"T.event_notify({name}[") == 1, kind
    # Over 200 edges, most of them all-to-all (workspace reuse), need far fewer counters.
    assert len(events) < 60


def test_edges_implied_through_a_possibly_empty_kind_need_in_order() -> None:
    func = _relay_task_graph()
    graph = read_task_graph(func)
    assert graph.in_order is not None
    text = _relay_module().script()
    assert 'T.attr(None, "megakernel.in_order", m <= T.int64(0))' in text
    # v's tiles (the last kind) wait only on the kind adding the two sums (the one before)
    before, last = graph.tasks[-2].name, graph.tasks[-1].name
    tail = text[text.rindex(f'annotations={{"task": "{last}"}}'):]
    assert re.findall(r"event_wait\((E_\w+)\[", tail) == [f"E_{before}_done"]


@pytest.mark.parametrize("n,m", [(4, 0), (3, 2), (0, 2)])
def test_interleavings_honour_in_order(n: int, m: int) -> None:
    func = _relay_task_graph()
    args = _inputs(n, m)
    out = np.zeros((n, 8), "float32")
    assert check_interleavings(func, [*args, out], runs=8) == []


def test_without_in_order_the_checker_finds_the_race() -> None:
    func = _relay_task_graph()
    bare = dataclasses.replace(func, body=_DropInOrder().visit(func.body))
    assert read_task_graph(bare).in_order is None
    problems = check_interleavings(bare, [*_inputs(4, 0), np.zeros((4, 8), "float32")],
                                   runs=8)
    assert any("race" in p for p in problems), problems


@pytest.fixture(scope="module")
def relay_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    target = parse_target("llvm")
    for mode in ("static", "dynamic", "none"):
        ctx = PassContext(opt_level=1, config={"megakernel": mode} if mode != "none" else {})
        mod = run_pipeline(parse(RELAY), build_pipeline(default_pipeline(target, 1)), ctx)
        path = tmp_path_factory.mktemp("relay") / f"relay_{mode}.so"
        build(mod, path, target, 1)
        out[mode] = path
    return out


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_compiled_schedules_run_in_order_when_a_relay_is_empty(relay_libs: dict[str, Path],
                                                               mode: str) -> None:
    lib, ref = load(relay_libs[mode]), load(relay_libs["none"])
    for n, m in ((5, 0), (5, 3), (0, 2), (1, 1)):
        x, w = _inputs(n, m)
        want = _expected(x, w)
        np.testing.assert_allclose(ref.main(x, w), want, rtol=1e-5, atol=1e-5)
        for _ in range(50):
            np.testing.assert_allclose(lib.main(x, w), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_runtime_falls_back_to_program_order(mode: str) -> None:
    target = parse_target("llvm")
    steps = default_pipeline(target, 1)
    steps = steps[: steps.index("megakernel-runtime") + 1]
    ctx = PassContext(opt_level=1, config={"megakernel": mode})
    text = run_pipeline(parse(RELAY), build_pipeline(steps), ctx).script()
    if mode == "static":
        assert "dealers: T.int64 = T.Select(m <= T.int64(0), T.int64(1), team)" in text
    else:
        assert re.search(r"if m <= T\.int64\(0\):\n\s+current_slot\[T\.int64\(0\)\] = "
                         r"T\.Select\(worker == T\.int64\(0\), T\.int64\(0\), num_tasks\)",
                         text), text[text.index("tirc.omp_barrier"):][:800]
