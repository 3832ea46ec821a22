"""R.print (TVM's): the interpreter prints as TVM's relax.run.print (each value rendered, then
`format.format(...)`); compiled code prints too (tests/runtime/test_print_library.py), without
a warning, except in a megakernel (a warning at each print, which it leaves out); it prints and
parses back; inside R.dataflow() it is an error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from frontend_support import round_trip
from gpu_support import lower
from graph_support import PRINT_PROGRAM, interpret, run_everywhere
from tirc.cli.main import cli
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError
from tirc.ir.interpreter.gpu import GPUInterpreter
from tirc.ir.printer import print_module
from tirc.runtime import load

PROGRAM = PRINT_PROGRAM

X = np.arange(6, dtype="float32").reshape(2, 3)


@pytest.mark.parametrize("cond", [True, False])
def test_the_interpreter_prints_as_tvm(capsys: pytest.CaptureFixture[str], cond: bool) -> None:
    """A tensor as NumPy's str, a shape as a tuple, several values without a format separated
    by spaces; the branch not taken prints nothing."""
    got = interpret(parse(PROGRAM), [X, np.array(cond)])
    np.testing.assert_array_equal(got[0] if isinstance(got, (list, tuple)) else got,
                                  4 * X * X if cond else 2 * X)
    lines = [f"x = {X}", f"y = {2 * X} of shape (2, 3)", "7 0.5"] + ([str(X)] if cond else [])
    assert capsys.readouterr().out == "\n".join(lines) + "\n"


def test_compiled_results_are_unchanged(tmp_path: Path) -> None:
    for got in run_everywhere(tmp_path, PROGRAM, [X, np.array(True)]):
        np.testing.assert_array_equal(got[0], 4 * X * X)


def test_compiling_prints_without_a_warning(tmp_path: Path) -> None:
    src = tmp_path / "p.tir"
    src.write_text(PROGRAM)
    run = CliRunner().invoke(cli, [str(src), "-o", str(tmp_path / "p.so"), "-Werror"])
    assert run.exit_code == 0, run.output
    assert "warning" not in run.output


def test_a_megakernel_warns_at_each_print(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A megakernel runs its calls as tasks in no fixed order: it leaves the prints out."""
    src = tmp_path / "p.tir"
    src.write_text(PROGRAM)
    run = CliRunner().invoke(cli, [str(src), "-o", str(tmp_path / "p.so"),
                                   "-fmegakernel=static"])
    assert run.exit_code == 0, run.output
    got = load(tmp_path / "p.so").main(X.copy(), np.array(True))
    np.testing.assert_array_equal(got, 4 * X * X)
    assert capsys.readouterr().out == ""
    warning = "warning: R.print is not compiled in a megakernel (-fmegakernel): its tasks run " \
        "in no fixed order, so it prints nothing (build without -fmegakernel, or run the " \
        "interpreter, to print)"
    assert [line.split(": ", 1)[0] for line in run.output.splitlines() if warning in line] == \
        [f"{src}:{n}:{c}" for n, c in ((5, 9), (7, 13), (8, 9), (10, 13))]
    strict = CliRunner().invoke(cli, [str(src), "-o", str(tmp_path / "q.so"), "-Werror",
                                      "-fmegakernel=static"])
    assert strict.exit_code != 0


def test_prints_as_statements_and_parses_back() -> None:
    printed = print_module(round_trip(PROGRAM))
    assert "    @R.function(pure=False)\n" in printed
    assert '        R.print(x, format="x = {}")\n' in printed
    assert '        R.print(y, R.shape([2, 3]), format="y = {} of shape {}")\n' in printed
    assert '            R.print(x, format="")\n' in printed


def test_a_print_inside_dataflow_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.tir"
    path.write_text("""\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        with R.dataflow():
            R.print(x)
            y = R.add(x, x)
            R.output(y)
        return y
""")
    with pytest.raises(CompileError) as err:
        parse_file(path)
    diag = err.value.diagnostics[0]
    assert diag.message == "R.print has a side effect: it cannot be inside R.dataflow() (put " \
        "it before or after the block)"
    assert diag.span is not None and (diag.span.line, diag.span.col) == (6, 13)


@pytest.mark.parametrize("level", [0, 3])
def test_lowered_print_runs_in_the_gpu_interpreter(capsys: pytest.CaptureFixture[str],
                                                   level: int) -> None:
    """After lower-graph a print is a call of its slot (tirc.ir.print_call), which the
    interpreter runs itself: the GPU-lowered module prints what the graph function prints."""
    interpret(parse(PROGRAM), [X, np.array(True)])
    want = capsys.readouterr().out
    out = np.zeros_like(X)
    GPUInterpreter(lower(parse(PROGRAM), opt_level=level)).call("main", X.copy(),
                                                                np.array(True), out)
    assert capsys.readouterr().out == want
    np.testing.assert_array_equal(out, 4 * X * X)
