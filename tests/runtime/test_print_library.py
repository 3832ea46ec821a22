"""R.print in a compiled library: the library calls the print's slot, which tirc.runtime fills
with its printing, so a built .so (at -O0 and -O3) and a .ptx module's host side print what
the interpreter prints, in the same order; with the slot empty (a C caller that fills none)
the library prints nothing and still computes its results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_support import FakeDriver
from graph_support import PRINT_PROGRAM, compile_levels
from tirc.backends.nvptx import compile_ptx, cuda_target
from tirc.driver import lower
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.print_call import is_print_symbol
from tirc.runtime.cuda import load_ptx

# The program of tests/passes/graph/test_print.py with a print after the branch's join.
BRANCHES = PRINT_PROGRAM.replace("        return z\n", """\
        w = R.add(z, z)
        R.print(y, format="y again = {}")
        return w
""")

# Every kind of value: scalars of each kind, shapes (empty, bound, of a size), tuples of
# tensors (nested, and a tuple parameter), an R.Prim parameter, a size expression.
VALUES = """\
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor(("m", 3), "float32"), k: R.Prim("int64"),
             t: R.Tuple(R.Tensor((2,), "int32"), R.Tensor((), "bool"))):
        m = T.int64()
        s = R.shape([m, 3])
        R.print(R.prim_value(T.float32(0.1)), R.prim_value(T.float64(0.25)),
                R.prim_value(T.int32(-3)), R.prim_value(T.bool(True)), R.shape([5]),
                R.shape([]), s, (x, (x,)), format="a={} b={} c={} d={} e={} f={} g={} h={}")
        R.print(k, R.prim_value(m * 2), t, R.shape([m, 7]))
        R.print(format="no values")
        y = R.add(x, x)
        return y
"""


def _args(text: str) -> list[Any]:
    """The arguments of `main` of BRANCHES (the branch taken) or VALUES."""
    if text is BRANCHES:
        return [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(True)]
    return [np.arange(6, dtype=np.float32).reshape(2, 3), 5,
            (np.array([1, -2], np.int32), np.array(True))]


def _copy(args: list[Any]) -> list[Any]:
    """Copies of the arrays among `args` (tuples and numbers as they are)."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _interpret(text: str, args: list[Any]) -> Any:
    """`main` run by the interpreter (which prints) on copies of `args`: its result."""
    return Interpreter(parse(text)).call("main", *_copy(args))


@pytest.mark.parametrize("text", [BRANCHES, VALUES], ids=["branches", "values"])
def test_library_prints_what_the_interpreter_prints(
        text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, libs = compile_levels(text, tmp_path)
    want = _interpret(text, _args(text))
    printed = capsys.readouterr().out
    assert printed.count("\n") >= 3
    for level, lib in libs.items():
        print(f"-O{level} before")
        got = lib.main(*_copy(_args(text)))
        print(f"-O{level} after")
        assert capsys.readouterr().out == f"-O{level} before\n{printed}-O{level} after\n"
        np.testing.assert_array_equal(got, want)


def test_branch_not_taken_prints_nothing(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    args = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(False)]
    _, libs = compile_levels(BRANCHES, tmp_path, levels=(3,))
    _interpret(BRANCHES, args)
    printed = capsys.readouterr().out
    libs[3].main(*_copy(args))
    assert capsys.readouterr().out == printed
    x = args[0]
    assert printed == f"x = {x}\ny = {2 * x} of shape (2, 3)\n7 0.5\ny again = {2 * x}\n"


def test_empty_print_slot_prints_nothing(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A C program that fills no slot: the library skips its prints (no error, no output)."""
    _, libs = compile_levels(BRANCHES, tmp_path, levels=(0,))
    lib = libs[0]
    names = lib.metadata["externs"]
    assert len(names) == 5 and all(is_print_symbol(n) for n in names)
    for k in range(len(names)):
        lib._slots.slot(k).value = None
    got = lib.main(*_args(BRANCHES))
    assert capsys.readouterr().out == ""
    x = _args(BRANCHES)[0]
    np.testing.assert_array_equal(got, 8 * x * x)


def test_gpu_host_side_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A .ptx module: its launch plan calls the print between the kernels, on the host,
    through the runtime (kernels run in the GPU interpreter behind a fake driver)."""
    target = cuda_target("cuda -arch=sm_80")
    args = _args(BRANCHES)
    _interpret(BRANCHES, args)
    printed = capsys.readouterr().out
    for level in (0, 3):
        lowered = lower(parse(BRANCHES), target, level)
        path = tmp_path / f"p{level}.ptx"
        path.write_text(compile_ptx(lowered, target).ptx)
        got = load_ptx(path, FakeDriver(lowered)).main(*_copy(args))
        assert capsys.readouterr().out == printed
        np.testing.assert_array_equal(got, 8 * args[0] * args[0])
