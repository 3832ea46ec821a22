"""bounds-check (-fbounds-check): which accesses get a run-time check, the check's message, and
that the pass keeps meaning (the interpreter runs the checks)."""

from __future__ import annotations

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir import Call, IRModule
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.visitor import post_order_visit
from tirc.passes.bounds_check import INTRINSIC, BoundsCheck
from tirc.passes.pass_base import PassContext
from tirc.passes.registry import all_passes

ON = PassContext(config={"bounds-check": "1"})


def checks(mod: IRModule, name: str) -> list[str]:
    """The format strings of the checks the pass added to function `name`."""
    found: list[str] = []
    post_order_visit(mod[name].body, lambda n: found.append(n.args[1].value)
                     if isinstance(n, Call) and n.op == INTRINSIC else None)
    return found


PROVABLY_IN_BOUNDS = """
@T.prim_func
def matmul(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 4), "float32"),
           C: T.Buffer((16, 4), "float32")):
    for i, j, k in T.grid(16, 4, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

@T.prim_func
def guarded(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        if i + T.int64(1) < n:
            B[i] = A[i + T.int64(1)]
        B[i] = T.if_then_else(i >= T.int64(1), A[i - T.int64(1)], T.float32(0))
"""

UNPROVABLE = """
@T.prim_func
def gather(A: T.Buffer((16,), "float32"), I: T.Buffer((8,), "int32"),
           B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[I[vi]]

@T.prim_func
def window(a: T.handle, b: T.handle):
    n = T.int64()
    m = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (m,), "float32")
    for i in range(m):
        B[i] = A[i * T.int64(2)]

@T.prim_func
def square(A: T.Buffer((14,), "float32")):
    for i, j in T.grid(5, 4):
        with T.block("B"):
            v = T.axis.spatial(14, i * i + j)
            A[v % 14] = T.float32(1)
"""


def test_registered_under_its_name() -> None:
    assert all_passes()["bounds-check"] is BoundsCheck


def test_off_by_default() -> None:
    mod = parse(UNPROVABLE)
    assert BoundsCheck()(mod) is mod


def test_accesses_proved_in_bounds_are_not_checked() -> None:
    mod = parse(PROVABLY_IN_BOUNDS)
    assert BoundsCheck()(mod, ON) is mod


def test_what_is_checked_and_the_messages() -> None:
    out = BoundsCheck()(parse(UNPROVABLE, "u.tir"), ON)
    assert checks(out, "gather") == ["u.tir:8:21: out-of-bounds read of A[%lld], shape (16,)"]
    assert checks(out, "window") == [
        "u.tir:17:16: out-of-bounds read of A[%lld], shape (%lld,)"]
    assert checks(out, "square") == [
        "u.tir:23:36: block 'B': v = %lld is outside its domain [%lld, %lld)"]


def test_the_checks_keep_meaning_and_trap_in_the_interpreter() -> None:
    out = Interpreter(BoundsCheck()(parse(UNPROVABLE, "u.tir"), ON))
    a = np.arange(16, dtype=np.float32)
    b = np.zeros(8, np.float32)
    out.call("gather", a, np.arange(8, dtype=np.int32) * 2, b)
    np.testing.assert_array_equal(b, a[::2])
    with pytest.raises(InterpreterError, match=r"u.tir:8:21: out-of-bounds read of A\[16\], "
                                               r"shape \(16,\)"):
        out.call("gather", a, np.array([0, 1, 2, 3, 4, 5, 6, 16], np.int32), b)
    with pytest.raises(InterpreterError, match=r"read of A\[6\], shape \(6,\)"):
        out.call("window", np.zeros(6, np.float32), np.zeros(4, np.float32))


def test_a_load_inside_a_let_expression_is_checked_under_the_let() -> None:
    """The check of `A[I[x]]` in `T.Let(..., where={x: ...})` is itself a let over the check;
    building it crashed (a Let without its dtype: TypeError at every -fbounds-check build of
    such a function, from the expression difftest)."""
    mod = parse('''
@T.prim_func
def f(A: T.Buffer((16,), "float32"), I: T.Buffer((8,), "int32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        B[i] = T.Let(A[I[x]] * T.float32(2), where={x: 7 - i})
''', "l.tir")
    out = BoundsCheck()(mod, ON)
    assert checks(out, "f") == ["l.tir:5:22: out-of-bounds read of A[%lld], shape (16,)"]
    a, b = np.arange(16, dtype=np.float32), np.zeros(8, np.float32)
    Interpreter(out).call("f", a, np.arange(8, dtype=np.int32), b)
    np.testing.assert_array_equal(b, a[7::-1][:8] * 2)
    with pytest.raises(InterpreterError, match=r"l.tir:5:22: out-of-bounds read of A\[20\]"):
        Interpreter(out).call("f", a, np.full(8, 20, np.int32), b)
