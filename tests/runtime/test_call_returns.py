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
