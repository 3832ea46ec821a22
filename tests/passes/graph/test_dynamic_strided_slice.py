"""R.dynamic_strided_slice as TVM 0.27 defines it: begin, end and strides are int64 tensors,
so only the result's rank is known. The interpreter slices as NumPy (Python's slice rules,
which TVM's compiled slice follows on every non-empty result); compiling it is a diagnostic
at the call, its result shape depending on tensor values; misuse is a diagnostic too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_support import interpret, normalize_diagnostic
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.ir.graph import TensorSInfo
from tirc.ir.interpreter import InterpreterError
from tirc.ir.printer import print_module
from tirc.passes.graph.normalize import Normalize

SLICE = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 6), "float32"), b: R.Tensor((2,), "int64"),
             e: R.Tensor((2,), "int64"), s: R.Tensor((2,), "int64")):
        gv = R.dynamic_strided_slice(x, b, e, s)
        return gv
"""


def test_the_result_has_the_rank_and_dtype_only() -> None:
    mod = Normalize()(parse(SLICE))
    out = mod["main"].ret_struct_info
    assert isinstance(out, TensorSInfo)
    assert out.shape is None and out.ndim == 2 and str(out.dtype) == "float32"
    assert 'R.Tensor(ndim=2, dtype="float32")' in print_module(mod)


def test_the_interpreter_slices_as_numpy(tmp_path: Path) -> None:
    """Negative bounds count from the end, bounds past the axis are clamped, negative
    strides walk backwards; 200 random slices against NumPy's."""
    path = tmp_path / "slice.tir"
    path.write_text(SLICE)
    mod = parse_file(path)
    x = np.arange(30, dtype="float32").reshape(5, 6)
    rng = np.random.default_rng(0)
    for _ in range(200):
        b, e = rng.integers(-8, 9, 2), rng.integers(-8, 9, 2)
        s = rng.choice([-3, -2, -1, 1, 2, 3], 2)
        (got,) = interpret(mod, [x, b, e, s])
        want = x[int(b[0]):int(e[0]):int(s[0]), int(b[1]):int(e[1]):int(s[1])]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    (got,) = interpret(mod, [x, np.array([4, -1]), np.array([-9, 0]), np.array([-2, -2])])
    np.testing.assert_array_equal(got, [[29, 27, 25], [17, 15, 13], [5, 3, 1]])


def test_a_zero_stride_stops_the_interpreter(tmp_path: Path) -> None:
    path = tmp_path / "slice.tir"
    path.write_text(SLICE)
    x = np.zeros((5, 6), "float32")
    with pytest.raises(InterpreterError, match=r"R.dynamic_strided_slice: strides must not "
                       r"be 0, got \[1, 0\]"):
        interpret(parse_file(path), [x, np.array([0, 0]), np.array([5, 6]), np.array([1, 0])])


def test_prints_and_parses_back() -> None:
    mod = parse(SLICE)
    printed = print_module(mod)
    assert "R.dynamic_strided_slice(x, b, e, s)" in printed
    assert structural_equal(parse(printed), mod)


def test_compiling_is_a_diagnostic_at_the_call(tmp_path: Path) -> None:
    """The command line names the call and the reason, not a later use of its result."""
    path = tmp_path / "slice.tir"
    path.write_text(SLICE.replace("        return gv", "        y = R.sum(gv)\n"
                                  "        return y"))
    tirc = Path(sys.executable).with_name("tirc")
    run = subprocess.run([str(tirc), str(path), "-o", str(tmp_path / "slice.so")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert f"{path}:6:14: error: R.dynamic_strided_slice is not compiled: its result's shape " \
        "depends on the values of begin, end and strides" in run.stderr


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5, 6), "float32"), b: R.Tensor((2,), "int64"),
             c: R.Tensor((3,), "int64"), i: R.Tensor((2,), "int32"),
             m: R.Tensor((2, 1), "int64")):
        gv = CALL
        return gv
"""


@pytest.mark.parametrize(("call", "message"), [
    ("R.dynamic_strided_slice(x, i, b, b)", "R.dynamic_strided_slice: begin must be int64, "
     "got int32"),
    ("R.dynamic_strided_slice(x, b, c, b)", "R.dynamic_strided_slice: end has 3 entries for "
     "data of rank 2"),
    ("R.dynamic_strided_slice(x, b, b, m)", "R.dynamic_strided_slice: strides must be a 1-d "
     "tensor (one entry per axis), got rank 2"),
    ("R.dynamic_strided_slice(x, b, b)", "R.dynamic_strided_slice: missing argument "
     "'strides'"),
])
def test_misuse_is_a_diagnostic_at_the_call(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and (diag.span.line, diag.span.col) == (7, 14)
