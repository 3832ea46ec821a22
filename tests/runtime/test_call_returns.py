"""What a call returns: the outputs it allocated, and the passed outputs it only writes (torch's
out=); an output the function also reads is the caller's array, returned only when every output
is one (an in-place update returns it, as torch's x.add_() does)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from tirc.cli.main import cli

SOURCE = '''from tvm.script import tir as T


@T.prim_func
def double_(x: T.Buffer((4,), "float32")):
    for i in range(4):
        x[i] = x[i] * T.float32(2)


@T.prim_func
def count(x: T.Buffer((4,), "float32"), acc: T.Buffer((4,), "float32"),
          y: T.Buffer((4,), "float32")):
    for i in range(4):
        acc[i] = acc[i] + x[i]
        y[i] = x[i] * T.float32(3)


@T.prim_func
def split(x: T.Buffer((4,), "float32"), lo: T.Buffer((4,), "float32"),
          hi: T.Buffer((4,), "float32")):
    for i in range(4):
        lo[i] = T.min(x[i], T.float32(0))
        hi[i] = T.max(x[i], T.float32(0))
'''


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import tirc.runtime as rt

    folder = tmp_path_factory.mktemp("returns")
    (folder / "returns.tir").write_text(SOURCE)
    out = folder / "returns.so"
    result = CliRunner().invoke(cli, [str(folder / "returns.tir"), "-o", str(out)],
                                prog_name="tirc")
    assert result.exit_code == 0, result.output
    return rt.load(Path(out))


X = np.array([-1, 2, -3, 4], np.float32)


def test_in_place_update_returns_the_callers_array(lib: Any) -> None:
    x = X.copy()
    assert lib.double_(x) is x
    assert x.tolist() == [-2, 4, -6, 8]


def test_an_updated_input_is_not_returned_beside_a_written_output(lib: Any) -> None:
    acc = np.ones(4, np.float32)
    y = lib.count(X, acc)  # y allocated: the only result, as for any allocated output
    assert isinstance(y, np.ndarray) and y.tolist() == [-3, 6, -9, 12]
    assert acc.tolist() == [0, 3, -2, 5]
    buf = np.zeros(4, np.float32)
    assert lib.count(X, acc, buf) is buf  # passed: the same result, the caller's array


def test_several_outputs_come_back_passed_or_allocated(lib: Any) -> None:
    lo, hi = lib.split(X)
    assert (lo.tolist(), hi.tolist()) == ([-1, 0, -3, 0], [0, 2, 0, 4])
    mine = np.zeros(4, np.float32)
    got = lib.split(X, hi=mine)  # one passed, one allocated: both, in parameter order
    assert isinstance(got, tuple) and got[1] is mine and got[0].tolist() == [-1, 0, -3, 0]
    a, b = np.zeros(4, np.float32), np.zeros(4, np.float32)
    both = lib.split(X, a, b)
    assert both[0] is a and both[1] is b


GRAPH = '''from tvm.script import relax as R
from tvm.script import tir as T


@R.function
def main(x: R.Tensor(("n", 2), "float32"), c: R.Prim("int32")):
    n = T.int64()
    y = R.add(x, x)
    return ((y, R.shape([n, n * 3])), c)
'''


def test_a_graph_function_returns_its_value_structured(tmp_path: Path) -> None:
    """The metadata's `returns`: nested tuples, a shape as a tuple of ints and a scalar as a
    Python number; an output passed by the caller is its own array in the structure."""
    import tirc.runtime as rt

    (tmp_path / "graph.tir").write_text(GRAPH)
    result = CliRunner().invoke(cli, [str(tmp_path / "graph.tir"), "-o",
                                      str(tmp_path / "graph.so")], prog_name="tirc")
    assert result.exit_code == 0, result.output
    main = rt.load(tmp_path / "graph.so").main
    assert main.meta["returns"] == [["y_out0", {"shape": "shape_out1"}], {"prim": "c_out2"}]
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (y, shape), c = main(x, 7)
    assert y.tolist() == (2 * x).tolist() and shape == (3, 9) and c == 7 and type(c) is int
    out = np.zeros((3, 2), np.float32)
    (y, shape), c = main(x, 7, y_out0=out)
    assert y is out and out.tolist() == (2 * x).tolist() and shape == (3, 9)


def test_returned_value_reads_each_result_as_returns_says() -> None:
    from tirc.runtime.arguments import returned_value

    outputs = {"a": np.ones(2), "s": np.array([4, 5], np.int64), "v": np.array(1.5, np.float32)}
    got = returned_value(["a", [{"shape": "s"}, {"prim": "v"}]], outputs)
    assert got[0] is outputs["a"] and got[1] == ((4, 5), 1.5) and type(got[1][1]) is float
    assert returned_value({"shape": "s"}, outputs) == (4, 5)
