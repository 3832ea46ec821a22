"""Differential run over random loop functions (tests/difftest/loop_programs.py): every
program's results from the reference interpreter equal those of the library built at -O0,
-O1, -O2 and -O3 (one shared object per level for the whole batch), at -O3 with
-fbounds-check (no valid access may trap), and of the GPU pipeline's lowered IR run in the GPU
interpreter. The long run is `scripts/difftest.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from difftest.builds import compile_module, interpret_loop, loop_labels, run_loop
from difftest.harness import Build, Checker, Report, format_report
from difftest.loop_programs import loop_case, random_loop_program
from tirc.ir import (
    BinOp,
    BufferLoad,
    Call,
    Cast,
    For,
    ForKind,
    IntImm,
    IRModule,
    IterKind,
    Let,
    PrimFunc,
    Var,
)
from tirc.ir.intrinsics import BREAK_LOOP, CALL_PRIM, CONTINUE_LOOP
from tirc.ir.stmt import Block, BlockRealize, LetStmt
from tirc.ir.visitor import any_node, post_order_visit

SEEDS = range(0, 120)
BUILDS = [Build(0), Build(1), Build(2), Build(3), Build(3, bounds_check=True),
          Build(2, gpu=True)]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    checker = Checker(tmp_path_factory.mktemp("difftest_loops"), compile_module,
                      interpret_loop, run_loop, loop_labels)
    return checker.check([loop_case(seed) for seed in SEEDS], BUILDS)


def test_random_loop_programs_agree_with_the_interpreter(report: Report) -> None:
    assert report.programs == len(SEEDS)
    assert report.builds == [str(b) for b in BUILDS]
    assert not report.findings, format_report(report, "random loop functions")



def _features(func: PrimFunc) -> set[str]:
    """What one generated function exercises (dtypes, loop kinds, kinds of blocks)."""
    seen = {f"dtype:{b.dtype}" for b in func.buffer_map.values()}
    if any(not isinstance(d, IntImm) for b in func.buffer_map.values() for d in b.shape):
        seen.add("symbolic")

    def visit(node: object) -> None:
        if isinstance(node, For) and not (isinstance(node.min, IntImm) and node.min.value == 0):
            seen.add("loop-start")
        if isinstance(node, Block) and node.iter_vars and node.alloc_buffers:
            seen.add("block-scratch")
        if isinstance(node, Block) and node.init is not None and all(
                iv.kind == IterKind.REDUCE for iv in node.iter_vars):
            seen.add("reduction-total")
        if isinstance(node, (Let, LetStmt)):
            seen.add("let")
        if isinstance(node, Block) and node.match_buffers:
            seen.add("match-buffer")
        if isinstance(node, Block):
            seen.update(f"dtype:{b.dtype}" for b in node.alloc_buffers)
        if isinstance(node, Call) and node.op == "if_then_else":
            seen.add("if_then_else")
        if isinstance(node, Call) and node.op == CALL_PRIM:
            seen.add("call-" + str(node.dtype))
        if isinstance(node, For) and node.kind == ForKind.SERIAL and isinstance(node.body, For) \
                and node.body.kind in (ForKind.PARALLEL, ForKind.VECTORIZED) and isinstance(
                    node.body.body, BlockRealize) and node.body.body.block.init is not None:
            seen.add("parallel-inside-reduction")
        if isinstance(node, For):
            seen.add(f"loop:{node.kind.name.lower()}")
        elif isinstance(node, BlockRealize) and not isinstance(node.predicate, IntImm):
            seen.add("predicate")
        elif isinstance(node, BlockRealize) and any(
                not isinstance(v, Var) for v in node.iter_values):
            seen.add("binding-expression")
        elif isinstance(node, Block) and node.init is not None:
            seen.add("reduction-3d" if len(node.iter_vars) == 3 else "reduction")
        elif isinstance(node, Block) and node.alloc_buffers:
            seen.add("intermediate")
        elif isinstance(node, Cast):
            seen.add(f"cast:{node.dtype}")
        elif isinstance(node, Call) and node.op in (BREAK_LOOP, CONTINUE_LOOP):
            seen.add(node.op)
        elif isinstance(node, BufferLoad) and len(node.indices) == 2 and \
                isinstance(node.indices[0], Var) and node.indices[0].name == "vj":
            seen.add("transpose")
        if isinstance(node, BufferLoad):
            if any(any_node(i, lambda n: isinstance(n, BinOp) and n.op in (
                    "truncdiv", "truncmod")) for i in node.indices):
                seen.add("trunc-index")
            if any(any_node(i, lambda n: isinstance(n, BufferLoad)) for i in node.indices):
                seen.add("gather")
            if any(isinstance(i, BinOp) and i.op == "add" and isinstance(i.a, Var) and
                   isinstance(i.b, Var) for i in node.indices):
                seen.add("window")
            if any(isinstance(i, BinOp) and i.op == "sub" and isinstance(i.b, Var)
                   for i in node.indices):
                seen.add("reversed")

    post_order_visit(func.body, visit)
    return seen


def test_generator_covers_the_language() -> None:
    """The batch holds what the run is meant to exercise, so a change to the generator
    cannot quietly narrow it."""
    seen: set[str] = set()
    for seed in SEEDS:
        seen |= _features(random_loop_program(seed).func)
    want = {"dtype:float32", "dtype:float16", "dtype:int32", "symbolic", "loop:serial",
            "loop:parallel", "loop:vectorized", "loop:unrolled", "predicate",
            "binding-expression", "reduction", "reduction-3d", "intermediate",
            "cast:float16", "cast:float32", "cast:int32", "transpose", "window", "gather",
            BREAK_LOOP, CONTINUE_LOOP, "loop-start", "block-scratch", "reduction-total",
            "dtype:int8", "dtype:uint8", "let", "reversed", "parallel-inside-reduction",
            "match-buffer", "if_then_else", "dtype:bool", "dtype:bfloat16", "trunc-index",
            "call-void", "call-int32"}
    assert want <= seen, f"not generated: {sorted(want - seen)}"


def test_a_seed_is_a_reproducible_program() -> None:
    a, b = random_loop_program(7), random_loop_program(7)
    assert IRModule({"f": a.func}).script() == IRModule({"f": b.func}).script()
    assert a.sizes == b.sizes


def test_a_wrong_build_is_a_finding(tmp_path: Path) -> None:
    """The harness can fail: a build that gives other numbers than the interpreter is
    reported with the program's seed, the build and the first differing element."""
    def off_by_one(lib: object, calls: list) -> list:
        results = run_loop(lib, calls)
        for got in results:
            if not isinstance(got, str):
                got[-1].reshape(-1)[:1] += 1
        return results

    checker = Checker(tmp_path, compile_module, interpret_loop, off_by_one, loop_labels)
    found = checker.check([loop_case(3)], [Build(0)]).findings
    assert [(f.seed, f.build, f.kind) for f in found] == [(3, "-O0", "wrong")]
