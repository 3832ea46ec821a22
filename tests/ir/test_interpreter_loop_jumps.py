"""The reference interpreter on `break` / `continue`: each acts on the innermost enclosing
`for` or `while`, the statements after it in that iteration do not run."""

from __future__ import annotations

import numpy as np
import pytest
from loop_jump_programs import TVM_LOOP_JUMPS
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter

PROGRAMS = '''
from tvm.script import ir as I
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def counter(A: T.Buffer((4,), "int32"), limit: T.int32):
        for i in range(100):
            A[0] = A[0] + 1
            if A[0] >= limit:
                break
            A[1] = A[1] + i
        A[2] = A[0] * 10

    @T.prim_func
    def nested(A: T.Buffer((4, 6), "int32"), S: T.Buffer((4,), "int32")):
        for i in range(4):
            for j in range(6):
                if A[i, j] % 2 == 0:
                    continue
                S[i] = S[i] + A[i, j]
            S[i] = S[i] * 10

    @T.prim_func
    def while_jumps(out: T.Buffer((3,), "int32")):
        k = T.decl_buffer((1,), "int32")
        k[0] = 0
        while k[0] < 100:
            k[0] = k[0] + 1
            if k[0] % 3 == 0:
                continue
            out[0] = out[0] + 1
            if k[0] == 20:
                break
        out[1] = k[0]
'''


def _run(text: str, name: str, *args):  # type: ignore[no-untyped-def]
    Interpreter(parse(text)).call(name, *args)
    return args


def test_tvm_program_runs_all_iterations_when_the_test_never_holds() -> None:
    A, _ = _run(TVM_LOOP_JUMPS, "main", np.zeros(4, "float32"), np.array([1, 0, 0, 0], "float32"))
    np.testing.assert_array_equal(A, [0, 77, 0, 0])  # i = 0, 13, ..., 988 continue


def test_tvm_program_breaks_at_the_first_iteration_that_tests() -> None:
    A, _ = _run(TVM_LOOP_JUMPS, "main", np.zeros(4, "float32"), np.zeros(4, "float32"))
    np.testing.assert_array_equal(A, [0, 1, 0, 0])  # i = 0 continues, i = 1 breaks


@pytest.mark.parametrize("limit, count, total", [(1, 1, 0), (5, 5, 0 + 1 + 2 + 3),
                                                 (200, 100, sum(range(100)))])
def test_a_counter_breaks_mid_loop(limit: int, count: int, total: int) -> None:
    (A, _) = _run(PROGRAMS, "counter", np.zeros(4, "int32"), limit)
    np.testing.assert_array_equal(A, [count, total, 10 * count, 0])


def test_continue_in_a_nested_loop_goes_on_with_the_inner_loop() -> None:
    A = np.arange(24, dtype="int32").reshape(4, 6)
    _, S = _run(PROGRAMS, "nested", A, np.zeros(4, "int32"))
    want = [10 * int(row[row % 2 == 1].sum()) for row in A]
    np.testing.assert_array_equal(S, want)


def test_break_and_continue_in_a_while_loop() -> None:
    (out,) = _run(PROGRAMS, "while_jumps", np.zeros(3, "int32"))
    assert out[1] == 20  # left at k == 20
    assert out[0] == len([k for k in range(1, 21) if k % 3 != 0])
