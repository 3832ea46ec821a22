"""Symbolic sizes that struct info inference cannot prove equal, as TVM's Relax accepts them:
each program builds at -O0 and -O3 and equals the reference interpreter when the sizes agree;
when they differ, the interpreter and the compiled library fail with one message (the
operator, its place, both sizes), never a wrong answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_levels, interpret
from tirc.frontend import parse_file
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.runtime import TircError

PROGRAM = '''from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @R.function
    def f_add(x: R.Tensor(("n",), "float32"), y: R.Tensor(("m",), "float32")):
        with R.dataflow():
            z = R.add(x, y)
            w = R.multiply(z, y)
            R.output(w)
        return w

    @R.function
    def f_matmul(a: R.Tensor(("n", "k"), "float32"), b: R.Tensor(("k2", "m"), "float32")):
        with R.dataflow():
            c = R.matmul(a, b)
            R.output(c)
        return c

    @R.function
    def f_reshape(x: R.Tensor(("a", "b"), "float32")):
        a = T.int64()
        b = T.int64()
        with R.dataflow():
            y = R.reshape(x, (a // 2, b * 2))
            z = R.exp(y)
            R.output(z)
        return z

    @R.function
    def f_batch_norm(x: R.Tensor((2, "h", 3), "float32"), g: R.Tensor(("c",), "float32"),
                     be: R.Tensor(("c",), "float32"), mm: R.Tensor(("c",), "float32"),
                     mv: R.Tensor(("c",), "float32")):
        with R.dataflow():
            y = R.nn.batch_norm(x, g, be, mm, mv, axis=1, training=False)
            z = y[0]
            R.output(z)
        return z

    @R.function
    def f_conv2d_transpose(x: R.Tensor((1, "c2", 5, 5), "float32"),
                           w: R.Tensor(("c", "f", 3, 3), "float32")):
        with R.dataflow():
            y = R.nn.conv2d_transpose(x, w)
            R.output(y)
        return y

    @R.function
    def f_branch(x: R.Tensor(("n",), "float32"), y: R.Tensor(("m",), "float32"),
                 c: R.Prim("bool")):
        if c:
            z = R.add(x, x)
        else:
            z = R.add(x, y)
        return z
'''

# function: (shapes that agree, shapes that do not, the message's text after `file:line:col: `)
CASES: dict[str, tuple[list[tuple[int, ...]], list[tuple[int, ...]], str]] = {
    "f_add": ([(4,), (4,)], [(4,), (5,)], "R.add: sizes n = 4 and m = 5 must be equal"),
    "f_matmul": ([(3, 4), (4, 2)], [(3, 4), (5, 2)],
                 "R.matmul: sizes k = 4 and k2 = 5 must be equal"),
    "f_reshape": ([(4, 3)], [(5, 3)],
                  "R.reshape: sizes a // 2 * (b * 2) = 12 and a * b = 15 must be equal"),
    "f_batch_norm": ([(2, 4, 3)] + [(4,)] * 4, [(2, 4, 3)] + [(5,)] * 4,
                     "R.nn.batch_norm: sizes c = 5 and h = 4 must be equal"),
    "f_conv2d_transpose": ([(1, 2, 5, 5), (2, 4, 3, 3)], [(1, 2, 5, 5), (3, 4, 3, 3)],
                           "R.nn.conv2d_transpose: sizes c2 = 2 and c = 3 must be equal"),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    return compile_levels(PROGRAM, tmp_path_factory.mktemp("sizes"))


def _args(shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Positive inputs (a batch norm's variance under a square root)."""
    rng = np.random.default_rng(0)
    return [(np.abs(rng.standard_normal(s)) + 0.1).astype("float32") for s in shapes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_agreeing_sizes_equal_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    path, libs = built
    args = _args(CASES[name][0])
    want = interpret(parse_file(path), args, name)[0]
    for level, lib in libs.items():
        got = getattr(lib, name)(*[a.copy() for a in args])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"-O{level}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_differing_sizes_fail_with_one_message(built: tuple[Path, dict[int, Any]],
                                               name: str) -> None:
    path, libs = built
    _, bad, text = CASES[name]
    message = re.escape(text)
    with pytest.raises(InterpreterError, match=r"ops\.tir:\d+:\d+: " + message) as err:
        interpret(parse_file(path), _args(bad), name)
    for level, lib in libs.items():
        with pytest.raises(TircError) as got:
            getattr(lib, name)(*_args(bad))
        assert str(got.value) == str(err.value), f"-O{level}"


def test_a_branch_checks_only_when_it_runs(built: tuple[Path, dict[int, Any]]) -> None:
    """The check of a call inside an `if` branch runs with the branch, as the call does."""
    path, libs = built
    x, y = np.ones(3, "float32"), np.ones(4, "float32")
    interp = Interpreter(parse_file(path))
    with pytest.raises(InterpreterError, match=re.escape("R.add: sizes n = 3 and m = 4")):
        interp.call("f_branch", x, y, False)
    want = interp.call("f_branch", x, y, True)
    for lib in libs.values():
        np.testing.assert_array_equal(lib.f_branch(x, y, True), want)
        with pytest.raises(TircError, match=re.escape("R.add: sizes n = 3 and m = 4")):
            lib.f_branch(x, y, False)
