"""The megakernel-runtime pass: one parallel team region that fills every event counter (packed
into one workspace) before a barrier and only then runs tasks; the dynamic schedule's queue
counts dispatches per producer kind and is seeded with the kinds that have none; the Python
recursion limit is left alone; task kinds out of dependence order are a diagnostic."""

from __future__ import annotations

import dataclasses
import sys

import pytest
from megakernel_support import SAMPLES, task_graph
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError, PrimFunc
from tirc.ir.stmt import Allocate, For, ForKind
from tirc.ir.target import parse_target
from tirc.ir.visitor import post_order_visit
from tirc.passes.manager import run_pipeline
from tirc.passes.megakernel.task_graph import producer_kinds, read_task_graph
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline


def _runtime(mod: object, config: dict[str, str] | None = None) -> PrimFunc:
    """`main` of `mod` after megakernel-runtime."""
    out = run_pipeline(mod, build_pipeline(["megakernel-runtime"]),  # type: ignore[arg-type]
                       PassContext(config=config or {}))
    func = out["main"]
    assert isinstance(func, PrimFunc)
    return func


def _nodes(func: PrimFunc, kind: type) -> list[object]:
    """Every node of type `kind` in `func`'s body."""
    found: list[object] = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_one_workspace_filled_in_the_region_before_a_barrier(mode: str) -> None:
    mod = task_graph("mlp.tir", mode)
    events = len(read_task_graph(mod["main"]).events)  # type: ignore[arg-type]
    assert events >= 2
    func = _runtime(mod)
    allocs = [a for a in _nodes(func, Allocate) if a.buffer.scope == "event"]  # type: ignore[attr-defined]
    assert [a.buffer.name for a in allocs] == ["events"]  # type: ignore[attr-defined]
    assert allocs[0].init is None  # type: ignore[attr-defined]  # nothing filled on the host
    regions = [f for f in _nodes(func, For) if f.kind == ForKind.PARALLEL]  # type: ignore[attr-defined]
    assert len(regions) == 1 and regions[0].annotations == {"parallel.team": True}  # type: ignore[attr-defined]
    text = _script(func)
    region = text[text.index("for worker in T.parallel"):]
    barrier = region.index('"tirc.omp_barrier"')
    fills = [region.index(f"events[event_offset[T.int64({i})] + (worker + fill{i} * team)]")
             for i in range(events)]
    assert max(fills) < barrier
    assert barrier < region.index("T.event_wait(")
    # Before the barrier only the dynamic queue's seeds are published (past the counters).
    early = [line for line in region[:barrier].splitlines() if "T.event_notify(" in line]
    assert all(f"events[event_offset[T.int64({events})]" in line for line in early)
    assert (len(early) > 0) == (mode == "dynamic")


def _script(func: PrimFunc) -> str:
    """`func` printed as a module."""
    from tirc.ir.module import IRModule

    return IRModule({"main": func}).script()


def test_dynamic_queue_counts_dispatches_per_producer_kind() -> None:
    mod = task_graph("mlp.tir", "dynamic")
    graph = read_task_graph(mod["main"])  # type: ignore[arg-type]
    prods = producer_kinds(graph)
    assert prods[0] == [] and all(prods[k] for k in range(1, len(prods)))
    assert all(j < k for k, ps in enumerate(prods) for j in ps)
    text = _script(_runtime(mod))
    # Dispatch counts: one decrement per consumer kind, a push when it reaches zero.
    consumers = sum(len(ps) for ps in prods)
    assert text.count('T.call_intrin("int32", "tirc.atomic_add", events[event_offset[T.int64('
                      f'{len(graph.events)})] + T.int64(3') >= consumers
    # Seeds: every kind whose count is zero, pushed before the barrier.
    before = text[:text.index('"tirc.omp_barrier"')]
    assert before.count("== 0:") >= len(prods)


def test_recursion_limit_is_left_alone() -> None:
    # The deep IR is walked on tirc.ir.deep_call's big-stack thread; the caller's own limit
    # (here an unusual one, to tell it from the default) is what it finds afterwards.
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(before + 7)
        mod = task_graph("transformer_block.tir", "dynamic")
        assert len(read_task_graph(mod["main"]).events) > 15  # type: ignore[arg-type]
        _runtime(mod, {"megakernel.watchdog": "2"})
        assert sys.getrecursionlimit() == before + 7
    finally:
        sys.setrecursionlimit(before)


def test_kinds_out_of_dependence_order_are_a_diagnostic() -> None:
    text = (SAMPLES / "megakernel" / "moe_topk.tir").read_text()
    mod = parse(text.replace('"megakernel": "static"', '"megakernel": "dynamic"'))
    func = mod["moe_topk"]
    assert isinstance(func, PrimFunc)
    graph = read_task_graph(func)
    assert producer_kinds(graph) == [[], [0], [0, 1]]
    route, expert, combine = graph.tasks
    swapped = dataclasses.replace(func, body=graph.rebuild(
        _seq_of_tasks(func, [combine, route, expert])))
    with pytest.raises(CompileError, match="megakernel: task 'combine' waits on an event that "
                                           "the later task 'route' notifies"):
        run_pipeline(mod.with_function("moe_topk", swapped), build_pipeline(["megakernel-runtime"]))


def _seq_of_tasks(func: PrimFunc, tasks: list[object]) -> object:
    """The task loops of `tasks`, in the order given."""
    from tirc.ir.expr import IntImm
    from tirc.ir.stmt import seq

    return seq(*[For(t.var, IntImm(0, t.var.dtype), t.extent, ForKind.SERIAL, t.body,  # type: ignore[attr-defined]
                     annotations={"task": t.name}) for t in tasks])  # type: ignore[attr-defined]


def test_moe_sample_parses_as_a_task_graph() -> None:
    func = parse_file(SAMPLES / "megakernel" / "moe_topk.tir")["moe_topk"]
    assert [t.name for t in read_task_graph(func).tasks] == ["route", "expert", "combine"]  # type: ignore[arg-type]


COLUMN_SUM = """
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            s = R.sum(x, axis=(0,), keepdims=False)
            R.output(s)
        return s
"""


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_a_local_cache_shared_by_tasks_orders_them(mode: str) -> None:
    """The schedule rules give a column sum a `local` accumulator hoisted to the function, and
    the megakernel makes its init, update and write-back three task kinds: each waits for the
    one before it (found by the differential run: the dynamic megakernel ran them unordered and
    returned zeros on two threads)."""
    steps = default_pipeline(parse_target("llvm"), 2)
    ctx = PassContext(config={"megakernel": mode})
    mod = run_pipeline(parse(COLUMN_SUM), build_pipeline(steps[:steps.index("megakernel") + 1]),
                       ctx)
    graph = read_task_graph(mod["main"])  # type: ignore[arg-type]
    assert [t.name for t in graph.tasks] == ["T_sum_init", "T_sum_update", "T_sum_local"]
    assert producer_kinds(graph) == [[], [0], [1]]


NEGATIVE_EXTENT = """
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def twice(A: T.Buffer((64, 4), "float32"), B: T.Buffer((64, 4), "float32")):
        for i, j in T.grid(64, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    @T.prim_func(private=True)
    def add(y1: T.Buffer((64, 4), "float32"), y2: T.Buffer((64, 4), "float32"),
            z: T.Buffer((64, 4), "float32")):
        for i, j in T.grid(-64, 4):
            with T.block("z"):
                vi, vj = T.axis.remap("SS", [i, j])
                z[vi, vj] = y1[vi, vj] + y2[vi, vj]

    @R.function
    def main(x: R.Tensor((64, 4), "float32")):
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.twice, (x,), out_sinfo=R.Tensor((64, 4), "float32"))
            z = R.call_tir(cls.add, (y, y), out_sinfo=R.Tensor((64, 4), "float32"))
            w = R.add(y, x)
            R.output(w, z)
        return (w, z)
"""


@pytest.mark.parametrize(("mode", "bounds_check"), [("dynamic", False), ("dynamic", True),
                                                    ("static", True)])
def test_a_task_loop_of_negative_extent_runs_no_task(tmp_path: object, mode: str,
                                                     bounds_check: bool) -> None:
    """A loop of `range(-64)` (a mutated LegalizeOps kernel, pipeline_fuzz --run) runs no
    iteration; as a task loop of a dynamic megakernel its extent reserved -64 queue slots and
    counted -64 dispatches: the call hung (-fbounds-check), corrupted the heap or returned
    zeros for the other results. A task loop's count is now max(extent, 0)."""
    import numpy as np
    from difftest.builds import compile_module, run_graph
    from difftest.harness import Build

    mod = parse(NEGATIVE_EXTENT)
    x = np.arange(256, dtype="float32").reshape(64, 4)
    lib = compile_module(mod, Build(3, mode, bounds_check=bounds_check),
                         tmp_path / "neg")  # type: ignore[operator]
    got = run_graph(lib, [("main", [x], [x * 3, x])])[0]  # z: nothing writes it
    assert not isinstance(got, str), got
    np.testing.assert_array_equal(got[0], x * 3)
