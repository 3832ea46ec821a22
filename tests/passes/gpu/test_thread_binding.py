"""gpu-thread-binding: tags are checked, nesting is checked, loops start at 0."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_support import lower
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.interpreter.gpu import GPUInterpreter
from tirc.ir.module import IRModule
from tirc.ir.printer import print_function
from tirc.ir.stmt import For
from tirc.ir.visitor import Mutator
from tirc.passes.gpu.thread_binding import GPUThreadBinding

OFFSET = """
@T.prim_func
def shift(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(8, 72, thread="threadIdx.x"):
        B[tx - 8] = A[tx - 8] * T.float32(2)
"""


def _one_error(src: str) -> str:
    with pytest.raises(CompileError) as info:
        GPUThreadBinding()(parse(src))
    return info.value.diagnostics[0].message


def test_loop_starting_elsewhere_starts_at_zero() -> None:
    out = GPUThreadBinding()(parse(OFFSET))
    text = "\n".join(print_function(out["shift"]))
    assert "T.thread_binding(64, thread=\"threadIdx.x\")" in text
    assert "B[tx + 8 - 8] = A[tx + 8 - 8] * T.float32(2.0)" in text


def test_shifted_loop_keeps_its_meaning_on_the_gpu() -> None:
    mod = parse(OFFSET)
    a = np.arange(64, dtype=np.float32)
    want = np.zeros(64, np.float32)
    Interpreter(mod).call("shift", a, want)
    got = np.zeros(64, np.float32)
    GPUInterpreter(lower(mod)).call("shift", a, got)
    np.testing.assert_array_equal(got, 2 * a)
    np.testing.assert_array_equal(want, 2 * a)


def test_unknown_tag_is_an_error() -> None:
    msg = _one_error("""
@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for v in T.thread_binding(8, thread="cthread"):
        A[v] = T.float32(1)
""")
    assert msg == ("gpu-thread-binding: loop 'v' is bound to unknown thread axis 'cthread' "
                   "(expected one of: blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, "
                   "threadIdx.y, threadIdx.z)")


def test_same_tag_nested_is_the_enclosing_thread_index() -> None:
    """TVM's UnifyThreadBinding: the inner loop bound to the outer one's tag is that loop's
    thread index, not a loop of its own (MetaSchedule's cooperative fetch)."""
    out = GPUThreadBinding()(parse("""
@T.prim_func
def f(A: T.Buffer((8, 8), "float32")):
    for i in T.thread_binding(8, thread="threadIdx.x"):
        for j in T.thread_binding(8, thread="threadIdx.x"):
            A[0, j] = T.float32(1)
"""))
    text = "\n".join(print_function(out["f"]))
    assert text.count("T.thread_binding") == 1
    assert "A[0, i] = T.float32(1.0)" in text


def _retagged(src: str) -> IRModule:
    """`src` parsed, with its threadIdx.y loops bound to threadIdx.x: a nest of one axis the
    frontend has not unified, as a schedule's `bind` can make one."""

    class Retag(Mutator):
        def visit_For(self, s: For) -> Any:
            s = self.generic_visit(s)
            return s.replace(thread_tag="threadIdx.x") if s.thread_tag == "threadIdx.y" else s

    mod = parse(src)
    return IRModule({name: f.replace(body=Retag().visit(f.body))
                     for name, f in mod.functions.items()})


@pytest.mark.parametrize("body", ["A[i, j] = T.float32(1)", "A[0, j] = A[0, j] + A[1, j]",
                                  'T.evaluate(T.call_extern("int32", "f", j))'])
def test_same_tag_nested_around_other_than_a_copy_is_an_error(body: str) -> None:
    """A nest the frontend did not unify (a schedule's): the reference interpreter ran the
    inner loop whole in each thread, which gives the thread-index result only for a copy
    that does not use the outer index: others stay refused rather than differ."""
    with pytest.raises(CompileError) as info:
        GPUThreadBinding()(_retagged(f"""
@T.prim_func
def f(A: T.Buffer((8, 8), "float32")):
    for i in T.thread_binding(8, thread="threadIdx.x"):
        for j in T.thread_binding(8, thread="threadIdx.y"):
            {body}
"""))
    msg = info.value.diagnostics[0].message
    assert msg.startswith("gpu-thread-binding: loop 'j' is bound to threadIdx.x inside loop "
                          "'i', which is bound to it too, and its body is not a plain copy")


def test_same_tag_nested_in_the_source_around_other_than_a_copy_is_one_index() -> None:
    """TVM's UnifyThreadBinding as the frontend reads it: a loop bound to the axis of a loop
    around it, over the same range, whose body is not a copy (a scheduled attention kernel
    accumulates in it) is that loop's index; the interpreter and the GPU agree."""
    mod = parse("""
@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i in T.thread_binding(4, thread="threadIdx.x"):
        for k in range(8):
            for j in T.thread_binding(4, thread="threadIdx.x"):
                B[j] = B[j] + A[j, k]
""")
    text = "\n".join(print_function(mod["f"]))
    assert text.count("T.thread_binding") == 1 and "B[i] = B[i] + A[i, k]" in text
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    want = np.zeros(4, np.float32)
    Interpreter(mod).call("f", a, want)
    got = np.zeros(4, np.float32)
    GPUInterpreter(lower(mod)).call("f", a, got)
    np.testing.assert_array_equal(want, a.sum(1))
    np.testing.assert_array_equal(got, a.sum(1))


def test_same_tag_nested_with_another_extent_is_an_error() -> None:
    msg = _one_error("""
@T.prim_func
def f(A: T.Buffer((8, 8), "float32")):
    for i in T.thread_binding(8, thread="threadIdx.x"):
        for j in T.thread_binding(4, thread="threadIdx.x"):
            A[i, j] = T.float32(1)
""")
    assert msg == ("gpu-thread-binding: loop 'j' is bound to threadIdx.x inside loop 'i', which "
                   "is bound to it too with another extent (4 and 8): loops bound to one thread "
                   "axis must have the same extent")


def test_block_axis_inside_thread_axis_is_an_error() -> None:
    msg = _one_error("""
@T.prim_func
def f(A: T.Buffer((8, 8), "float32")):
    for i in T.thread_binding(8, thread="threadIdx.x"):
        for j in T.thread_binding(8, thread="blockIdx.x"):
            A[i, j] = T.float32(1)
""")
    assert "blockIdx loops must enclose the threadIdx loops" in msg


def test_error_points_at_the_loop() -> None:
    with pytest.raises(CompileError) as info:
        GPUThreadBinding()(parse("""
@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for v in T.thread_binding(8, thread="warp.x"):
        A[v] = T.float32(1)
"""))
    span = info.value.diagnostics[0].span
    assert span is not None and span.line == 4
