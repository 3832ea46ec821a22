"""Passes and loops that break or continue (tirc.ir.loop_jumps): each pass either keeps the
meaning (checked by interpreting before and after) or leaves the loop alone, and what cannot
be kept is refused with a diagnostic at its place."""

from __future__ import annotations

import pytest
from lowering_support import assert_same_results, count_nodes, run_on_text, run_pass
from tirc.frontend import parse
from tirc.ir import CompileError, For, ForKind, IntImm, IRModule, PrimFunc, Span, Var, dtype
from tirc.ir.expr import Call
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.intrinsics import BREAK_LOOP, CONTINUE_LOOP
from tirc.ir.loop_jumps import before_continues, escaping_loop_jumps
from tirc.ir.printer import print_module
from tirc.ir.stmt import Evaluate, seq
from tirc.passes.bounds_check import BoundsCheck
from tirc.passes.pass_base import PassContext
from tirc.passes.simplify import Simplify
from tirc.passes.unroll import Unroll
from tirc.passes.vectorize import Vectorize
from tirc.passes.verify import verify_module

I32 = dtype("int32")

UNROLLED = '''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        for j in T.unroll(4):
            if A[i, j] < T.float32(0):
                continue
            if A[i, j] > T.float32(0.5):
                break
            B[i] = B[i] + A[i, j]
'''


def test_unroll_leaves_a_loop_that_jumps_as_a_loop_for_llvm() -> None:
    before, after, _ = run_on_text(Unroll(), UNROLLED)
    loops = [n for n in _nodes(after["f"].body) if isinstance(n, For)]
    inner = [lp for lp in loops if lp.loop_var.name == "j"]
    assert len(inner) == 1 and inner[0].kind == ForKind.SERIAL
    assert inner[0].annotations.get("pragma_unroll") is True
    assert_same_results(before, after, "f", seeds=(0, 1, 2))


def test_unroll_still_copies_a_loop_around_a_loop_that_jumps() -> None:
    text = UNROLLED.replace("for i in range(8):", "for i in T.unroll(8):")
    before, after, _ = run_on_text(Unroll(), text)
    loops = [n for n in _nodes(after["f"].body) if isinstance(n, For)]
    assert [lp.loop_var.name for lp in loops].count("i") == 0  # i unrolled: 8 copies of j
    assert len(loops) == 8
    assert_same_results(before, after, "f", seeds=(0, 1, 2))


def test_simplify_keeps_a_one_iteration_loop_whose_body_jumps() -> None:
    text = '''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for i in range(8):
        for j in range(1):
            if A[i] > T.float32(0.5):
                break
            A[i] = A[i] + T.float32(1)
        A[i] = A[i] * T.float32(2)
'''
    before, after, _ = run_on_text(Simplify(), text)
    assert count_nodes(after["f"].body, For) == 2
    assert_same_results(before, after, "f", seeds=(0, 1, 2))


def test_vectorize_leaves_a_loop_holding_a_jump_scalar() -> None:
    text = '''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8, 4), "float32")):
    for i in T.vectorized(8):
        for j in range(4):
            if A[i, j] > T.float32(0.5):
                break
            A[i, j] = A[i, j] + T.float32(1)
'''
    before, after, ctx = run_on_text(Vectorize(), text)
    kinds = [n.kind for n in _nodes(after["f"].body) if isinstance(n, For)]
    assert kinds == [ForKind.SERIAL, ForKind.SERIAL]
    assert any("breaks or continues" in n for n in ctx.notes)
    assert_same_results(before, after, "f", seeds=(0, 1))


def test_bounds_check_of_a_while_condition_runs_before_a_continue() -> None:
    text = '''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8,), "int32"), k: T.Buffer((1,), "int32")):
    while A[k[0]] < 100:
        k[0] = k[0] + 1
        if k[0] % 2 == 0:
            continue
        A[0] = A[0] + 1
'''
    before = parse(text)
    after = BoundsCheck()(before, PassContext(config={"bounds-check": "1"}))
    printed = print_module(after)
    body = printed[printed.index("while"):]
    # the condition's check runs before the loop, then again before the continue and at the
    # end of the body
    assert printed.count("tirc.bounds_check") == 3 and body.count("tirc.bounds_check") == 2
    assert body.index("tirc.bounds_check") < body.index("T.continue_loop()")


def test_before_continues_leaves_inner_loops_alone() -> None:
    inner = For(Var("j"), IntImm(0, I32), IntImm(4, I32), ForKind.SERIAL, _jump(CONTINUE_LOOP))
    body = seq(_jump(CONTINUE_LOOP), inner)
    marker = Evaluate(IntImm(7, I32))
    out = before_continues(body, marker)
    assert len(escaping_loop_jumps(out)) == 1
    assert out.seq[0] is marker and out.seq[2] is inner  # type: ignore[attr-defined]


SCHEDULED = '''
from tvm.script import tir as T
from tvm.script import s as S

@T.prim_func
def add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] + T.float32(1)
        if A[i] > T.float32(100):
            break

@S.schedule("add")
def cpu(sch):
    b = sch.get_block("B")
    i, = sch.get_loops(b)
    sch.parallel(i)
'''


def test_schedule_primitives_refuse_a_function_that_jumps() -> None:
    from tirc.passes.schedule.apply import ApplySchedules

    with pytest.raises(CompileError) as info:
        ApplySchedules()(parse(SCHEDULED, "k.tir"), PassContext())
    assert [d.header() for d in info.value.diagnostics] == [
        'k.tir:18:5: error: parallel: function "add" breaks or continues a loop; schedule '
        "primitives do not transform such functions (a jump ties its loop's iterations "
        "together)"]


def test_default_schedule_leaves_a_function_that_jumps_alone() -> None:
    from tirc.passes.schedule_rules.api import wants_default_schedule

    mod = parse(SCHEDULED.split("@S.schedule")[0])
    assert not wants_default_schedule(mod["add"])


def _func(body) -> IRModule:  # type: ignore[no-untyped-def]
    return IRModule({"f": PrimFunc("f", (), {}, body)})


def _jump(op: str, line: int = 3) -> Evaluate:
    span = Span("j.tir", line, 5, line, 10)
    return Evaluate(Call(op, (), I32, span=span), span=span)


@pytest.mark.parametrize("kind, message", [
    (None, "'break' outside a loop"),
    (ForKind.PARALLEL, "'break' in a parallel loop (only a serial loop can be left or "
                       "continued early)"),
    (ForKind.VECTORIZED, "'break' in a vectorized loop (only a serial loop can be left or "
                         "continued early)"),
])
def test_verify_and_interpreter_refuse_a_jump_without_a_serial_loop(kind, message) -> None:
    body = _jump(BREAK_LOOP)
    if kind is not None:
        body = For(Var("i"), IntImm(0, I32), IntImm(4, I32), kind, body)
    mod = _func(body)
    assert [d.header() for d in verify_module(mod)] == [f"j.tir:3:5: error: {message}"]
    with pytest.raises(InterpreterError, match=message.split(" (")[0]):
        Interpreter(mod).call("f")


def test_verify_accepts_jumps_in_serial_loops() -> None:
    assert verify_module(parse(UNROLLED)) == []
    run_pass(Unroll(), parse(UNROLLED))


def _nodes(node):  # type: ignore[no-untyped-def]
    from tirc.ir.visitor import post_order_visit

    out: list = []
    post_order_visit(node, out.append)
    return out
