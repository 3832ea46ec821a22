"""R.gather_nd and R.one_hot as TVM 0.27 defines them: each program is run by the interpreter
and compiled at -O0 and -O3, checked against NumPy; misuse is a diagnostic at the call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_support import interpret, normalize_diagnostic, run_everywhere
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.ir.interpreter import InterpreterError
from tirc.ir.printer import print_module

GATHER = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4, 2), "float32"), i: R.Tensor((5, 2), "int64"),
             j: R.Tensor((3, 2, 1), "int32"), k: R.Tensor((2, 3), "int64")):
        a = R.gather_nd(x, i)
        b = R.gather_nd(x, j, batch_dims=1)
        c = R.gather_nd(x, k)
        gv = (a, b, c)
        return gv
"""


def _gather_nd(data: np.ndarray, idx: np.ndarray, b: int) -> np.ndarray:
    """The definition, element by element."""
    m = idx.shape[-1]
    out = np.zeros((*idx.shape[:-1], *data.shape[b + m:]), data.dtype)
    for pos in np.ndindex(*idx.shape[:-1]):
        out[pos] = data[(*pos[:b], *(int(v) % data.shape[b + n] for n, v in
                                     enumerate(idx[pos])))]
    return out


def test_gather_nd_picks_slices_and_elements(tmp_path: Path) -> None:
    """Indices (5, 2) pick rows of x's last axis; batch_dims=1 picks per batch; (2, 3) picks
    single elements; negative indices count from the end."""
    x = np.arange(24, dtype="float32").reshape(3, 4, 2)
    i = np.array([[0, 1], [2, 3], [1, 0], [-1, -4], [0, 0]], dtype="int64")
    j = np.array([[[3], [0]], [[1], [-2]], [[2], [2]]], dtype="int32")
    k = np.array([[2, 3, 1], [0, -1, 0]], dtype="int64")
    for got in run_everywhere(tmp_path, GATHER, [x, i, j, k]):
        np.testing.assert_array_equal(got[0], _gather_nd(x, i, 0))
        assert got[0].shape == (5, 2)
        np.testing.assert_array_equal(got[1], _gather_nd(x, j, 1))
        assert got[1].shape == (3, 2, 2)
        np.testing.assert_array_equal(got[2], [x[2, 3, 1], x[0, 3, 0]])


def test_gather_nd_index_out_of_range_stops_the_interpreter(tmp_path: Path) -> None:
    path = tmp_path / "prog.tir"
    path.write_text(GATHER)
    x = np.zeros((3, 4, 2), "float32")
    bad = np.array([[3, 0]] * 5, dtype="int64")
    with pytest.raises(InterpreterError, match=r"R.gather_nd: index 3 at \(0, 0\) is out of "
                       "bounds for axis 0 with size 3"):
        interpret(parse_file(path), [x, bad, np.zeros((3, 2, 1), "int32"),
                                     np.zeros((2, 3), "int64")])


ONE_HOT = """\
@I.ir_module
class Module:
    @R.function
    def main(j: R.Tensor((2, 3), "int32")):
        a = R.one_hot(j, R.prim_value(T.float32(2.5)), R.prim_value(T.float32(-1)), 4)
        b = R.one_hot(j, R.prim_value(T.int64(7)), R.prim_value(T.int64(0)), 5, axis=0)
        c = R.one_hot(j, R.prim_value(T.float32(1)), R.prim_value(T.float32(0)), 3, axis=1)
        gv = (a, b, c)
        return gv
"""


def _one_hot(idx: np.ndarray, on: object, off: object, depth: int, axis: int,
             dt: str) -> np.ndarray:
    hot = np.moveaxis(np.arange(depth) == idx[..., None], -1, axis)
    return np.where(hot, on, off).astype(dt)


def test_one_hot_at_every_axis(tmp_path: Path) -> None:
    """The on value where the position along `axis` is the index; an index outside
    [0, depth) (here -1 and 4) is off everywhere; the values' dtype is the result's."""
    j = np.array([[0, 3, -1], [2, 4, 1]], dtype="int32")
    for got in run_everywhere(tmp_path, ONE_HOT, [j]):
        np.testing.assert_array_equal(got[0], _one_hot(j, 2.5, -1, 4, 2, "float32"))
        assert got[0].dtype == np.float32 and got[0].shape == (2, 3, 4)
        np.testing.assert_array_equal(got[1], _one_hot(j, 7, 0, 5, 0, "int64"))
        assert got[1].dtype == np.int64 and got[1].shape == (5, 2, 3)
        np.testing.assert_array_equal(got[2], _one_hot(j, 1, 0, 3, 1, "float32"))


def test_both_print_and_parse_back(tmp_path: Path) -> None:
    for text in (GATHER, ONE_HOT):
        mod = parse(text)
        assert structural_equal(parse(print_module(mod)), mod)


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4, 2), "float32"), i: R.Tensor((5, 2), "int64"),
             f: R.Tensor((5, 2), "float32"), j: R.Tensor((4, 2), "int64")):
        gv = CALL
        return gv
"""


@pytest.mark.parametrize(("call", "message"), [
    ("R.gather_nd(x, f)", "R.gather_nd: indices must be integers, got float32"),
    ("R.gather_nd(x, R.reshape(i, (2, 5)))", "R.gather_nd: the last axis of the indices "
     "(2, 5) must be at most the data's rank 3 minus batch_dims 0"),
    ("R.gather_nd(x, i, batch_dims=2)", "R.gather_nd: batch_dims 2 must be less than the "
     "rank of the indices (5, 2)"),
    ("R.gather_nd(x, j, batch_dims=1)", "R.gather_nd: batch axis 0 differs: data (3, 4, 2), "
     "indices (4, 2)"),
    ("R.one_hot(x, R.prim_value(T.float32(1)), R.prim_value(T.float32(0)), 3)",
     "R.one_hot: indices must be integers, got float32"),
    ("R.one_hot(i, R.prim_value(T.float32(1)), R.prim_value(T.int32(0)), 3)",
     "R.one_hot: on_value and off_value must have the same dtype, got float32 and int32"),
    ("R.one_hot(i, R.prim_value(T.float32(1)), R.prim_value(T.float32(0)), 0)",
     "R.one_hot: depth must be positive, got 0"),
    ("R.one_hot(i, R.prim_value(T.float32(1)), R.prim_value(T.float32(0)), 3, axis=3)",
     "R.one_hot: axis 3 is out of range for a tensor of rank 3"),
    ("R.one_hot(i, x, R.prim_value(T.float32(0)), 3)",
     "R.one_hot: on_value must be a scalar R.prim_value(...) of a known dtype"),
])
def test_misuse_is_a_diagnostic_at_the_call(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and (diag.span.line, diag.span.col) == (6, 14)


def test_cli_reports_file_line_col(tmp_path: Path) -> None:
    """The command line prints the diagnostic as file:line:col: error: and fails."""
    path = tmp_path / "bad.tir"
    path.write_text(BAD.replace("CALL", "R.gather_nd(x, f)"))
    tirc = Path(sys.executable).with_name("tirc")
    run = subprocess.run([str(tirc), str(path), "--emit", "tir"], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 1
    assert f"{path}:6:14: error: R.gather_nd: indices must be integers, got float32" in \
        run.stderr
