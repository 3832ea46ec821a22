"""The megakernel pass: its task graph prints and re-parses, the interpreter runs it (in order
and in random valid interleavings) with the graph function's results, and the interleaving
checker finds a planted missing notification or wait."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from graph_support import interpret, random_inputs
from megakernel_support import SAMPLES, task_graph
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError, PrimFunc
from tirc.ir.expr import Call
from tirc.ir.interpreter import Interpreter
from tirc.ir.stmt import BufferStore, For, SeqStmt, Stmt
from tirc.ir.structural import structural_equal
from tirc.ir.visitor import Mutator, post_order_visit
from tirc.passes.megakernel.interleave import check_interleavings
from tirc.passes.megakernel.task_graph import read_task_graph

CASES = [("mlp.tir", {"n": 1}, "static"), ("mlp.tir", {"n": 6}, "dynamic"),
         ("transformer_block.tir", {"b": 1, "s": 2}, "static")]


def _run(mod: object, args: list[np.ndarray], want: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    outs = [np.zeros_like(w) for w in want]
    Interpreter(mod).call("main", *[a.copy() for a in args], *outs)  # type: ignore[arg-type]
    return outs


@pytest.mark.parametrize("sample,sizes,mode", CASES)
def test_task_graph_computes_the_graph_function(sample: str, sizes: dict[str, int],
                                                mode: str) -> None:
    graph = parse_file(SAMPLES / sample)
    mod = task_graph(sample, mode)
    main = mod["main"]
    assert isinstance(main, PrimFunc) and main.attrs["megakernel"] == mode
    args = random_inputs(graph, sizes)
    want = interpret(graph, args)
    for w, g in zip(want, _run(mod, args, want)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_task_graph_prints_and_reparses() -> None:
    mod = task_graph("mlp.tir")
    text = mod.script()
    assert 'T.func_attr({"global_symbol": "main", "tir.noalias": True, ' \
        '"tirc.graph_func": True, "tirc.graph_results": ("gv",), "megakernel": "static"})' \
        in text
    assert "T.event_tensor((" in text and "T.event_wait(E_" in text
    assert re.search(r'annotations=\{"task": "bias_relu"\}', text)
    again = parse(text)
    third = parse(again.script())
    assert structural_equal(third, again) and third.script() == again.script()
    graph = parse_file(SAMPLES / "mlp.tir")
    args = random_inputs(graph, {"n": 5})
    want = interpret(graph, args)
    for w, g in zip(want, _run(again, args, want)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_tiles_grouped_by_config() -> None:
    one = read_task_graph(task_graph("mlp.tir")["main"])  # type: ignore[arg-type]
    two = read_task_graph(task_graph("mlp.tir", tile=2)["main"])  # type: ignore[arg-type]
    assert [t.name for t in one.tasks] == [t.name for t in two.tasks]
    graph = parse_file(SAMPLES / "mlp.tir")
    args = random_inputs(graph, {"n": 9})
    want = interpret(graph, args)
    for w, g in zip(want, _run(task_graph("mlp.tir", tile=2), args, want)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_bad_mode_is_a_diagnostic() -> None:
    with pytest.raises(CompileError, match="megakernel: the megakernel pass config must be "
                                           "'static' or 'dynamic', got 'fast'"):
        task_graph("mlp.tir", "fast")


def _host_args(func: PrimFunc, sample: str, sizes: dict[str, int]) -> list[np.ndarray]:
    graph = parse_file(SAMPLES / sample)
    args = random_inputs(graph, sizes)
    return args + [np.zeros_like(w) for w in interpret(graph, args)]


@pytest.mark.parametrize("sample,sizes,runs", [("mlp.tir", {"n": 6}, 4),
                                               ("transformer_block.tir", {"b": 1, "s": 1}, 1)])
def test_random_interleavings_agree(sample: str, sizes: dict[str, int], runs: int) -> None:
    func = task_graph(sample)["main"]
    assert isinstance(func, PrimFunc)
    assert check_interleavings(func, _host_args(func, sample, sizes), runs=runs, seed=1) == []


def _only(x: Stmt, op: str) -> bool:
    """Whether `x` does nothing but `op` calls on events (a notify, or a loop of them)."""
    ops: list[str] = []
    stores: list[object] = []

    def visit(n: object) -> None:
        if isinstance(n, Call) and n.op.startswith("event_"):
            ops.append(n.op)
        elif isinstance(n, BufferStore):
            stores.append(n)

    post_order_visit(x, visit)
    return bool(ops) and set(ops) == {op} and not stores


class _Drop(Mutator):
    """Removes the statements of the body of task kind `task` that only `op` events."""

    def __init__(self, op: str, task: str) -> None:
        self.op = op
        self.task = task
        self.dropped = 0

    def visit_For(self, s: For) -> Stmt:
        if s.annotations.get("task") != self.task or not isinstance(s.body, SeqStmt):
            return s
        keep = []
        for x in s.body.seq:
            if _only(x, self.op):
                self.dropped += 1
            else:
                keep.append(x)
        return dataclasses.replace(s, body=SeqStmt(tuple(keep)))


def test_planted_missing_notify_is_a_hang() -> None:
    func = task_graph("mlp.tir")["main"]
    assert isinstance(func, PrimFunc)
    first = read_task_graph(func).tasks[0].name
    dropper = _Drop("event_notify", first)
    broken = dataclasses.replace(func, body=dropper.visit(func.body))
    assert dropper.dropped >= 1
    problems = check_interleavings(broken, _host_args(func, "mlp.tir", {"n": 6}), runs=2)
    hangs = [p for p in problems if p.startswith("run ")]
    assert len(hangs) == 2 and all("hang: task " in p and "waits forever on E_" in p
                                   for p in hangs), problems
    assert problems[0].startswith("in order: deadlock or missing dependence: wait on E_")


def test_planted_missing_wait_is_a_race() -> None:
    func = task_graph("mlp.tir")["main"]
    assert isinstance(func, PrimFunc)
    third = read_task_graph(func).tasks[2].name     # the second matmul: waits on the first
    dropper = _Drop("event_wait", third)
    broken = dataclasses.replace(func, body=dropper.visit(func.body))
    assert dropper.dropped >= 1
    problems = check_interleavings(broken, _host_args(func, "mlp.tir", {"n": 6}), runs=6)
    assert any("race" in p for p in problems), problems


def test_external_call_is_a_producer_of_its_output_tensor() -> None:
    """`R.call_dps_packed`'s output is written by the C function: the task that calls it must
    notify the tasks that read that output (its DLTensor arguments are whole-tensor accesses)."""
    text = task_graph("mlp_dps.tir").script()
    kind = None
    for line in text.splitlines():
        task = re.search(r'annotations=\{"task": "(\w+)"\}', line)
        kind = task.group(1) if task else kind
        if "tirc.call_packed" in line:
            break
    assert kind is not None
    notified = set(re.findall(rf"event_notify\((E_{kind}_\w+)\[", text))
    assert notified, f"task {kind} runs the external function but notifies nothing"
    waited = set(re.findall(r"event_wait\((E_\w+)\[", text))
    assert notified & waited
