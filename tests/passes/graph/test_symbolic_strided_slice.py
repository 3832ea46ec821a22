"""R.strided_slice with symbolic bounds (`R.prim_value(n)`, a size `n`, an expression of an
`R.Prim(value="k")` parameter) and on axes of symbolic size: the output shape is TVM's (a
negative bound counts from the end, then is clamped to the axis; `assume_inbound` takes the
bounds as written), run by the interpreter and compiled at -O0 and -O3 against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_support import round_trip
from graph_support import normalize_diagnostic, run_everywhere
from tirc.ir.printer import print_module
from tirc.passes.graph.normalize import Normalize

SIZES = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), y: R.Tensor((6, "m"), "float32")):
        n = T.int64()
        m = T.int64()
        a = R.strided_slice(x, axes=[0], begin=[1], end=[n])
        b = R.strided_slice(x, [1], [R.prim_value(2)], [R.prim_value(n)])
        c = R.strided_slice(x, axes=[0], begin=[0], end=[n], strides=[2], assume_inbound=True)
        d = R.strided_slice(y, axes=[0, 1], begin=[R.prim_value(m), -1], end=[6, 0],
                            strides=[1, -1])
        gv = (a, b, c, d)
        return gv
"""


@pytest.mark.parametrize(("n", "m"), [(5, 3), (10, 1), (1, 7)])
def test_bounds_from_shape_sizes(tmp_path: Path, n: int, m: int) -> None:
    """`end=n` past the axis (n=10 on 8 columns) is clamped, `begin=m` past it (m=7 on 6
    rows) gives an empty slice, a negative step walks backwards."""
    x = np.arange(n * 8, dtype="float32").reshape(n, 8)
    y = np.arange(6 * m, dtype="float32").reshape(6, m)
    for got in run_everywhere(tmp_path, SIZES, [x, y]):
        np.testing.assert_array_equal(got[0], x[1:n])
        np.testing.assert_array_equal(got[1], x[:, 2:n])
        np.testing.assert_array_equal(got[2], x[0:n:2])
        np.testing.assert_array_equal(got[3], y[m:6, -1:0:-1])
        assert [g.shape for g in got] == [x[1:n].shape, x[:, 2:n].shape, x[0:n:2].shape,
                                          y[m:6, -1:0:-1].shape]


def test_inferred_shapes_print_and_parse_back() -> None:
    """The clamped lengths as TVM's shape rule gives them (simplified knowing sizes are not
    negative); the normalized module prints and parses back."""
    mod = Normalize()(round_trip(SIZES))
    printed = print_module(mod)
    assert "b: R.Tensor((n, T.max(T.min(n, T.int64(8)) - T.int64(2), T.int64(0))), " \
        "dtype=\"float32\")" in printed
    assert "c: R.Tensor(((n + T.int64(1)) // T.int64(2), T.int64(8)), dtype=\"float32\")" \
        in printed
    assert "R.strided_slice(x, axes=(1,), begin=(2,), end=(n,))" in printed
    round_trip(printed)


PRIM = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10,), "float32"), p: R.Prim(value="k")):
        k = T.int64()
        a = R.strided_slice(x, axes=[0], begin=[R.prim_value(k)], end=[10])
        b = R.strided_slice(x, axes=[0], begin=[R.prim_value(k - 20)],
                            end=[R.prim_value(k + 3)])
        c = R.strided_slice(x, axes=[0], begin=[0], end=[p])
        gv = (a, b, c)
        return gv
"""


@pytest.mark.parametrize("k", [3, 12, 30])
def test_bounds_from_a_prim_parameter(tmp_path: Path, k: int) -> None:
    """A bound of unknown sign (`k - 20`) counts from the end when negative at run time; the
    `R.Prim(value="k")` parameter itself is a bound too (its value, as TVM reads it)."""
    x = np.arange(10, dtype="float32")
    for got in run_everywhere(tmp_path, PRIM, [x, np.int64(k)]):
        np.testing.assert_array_equal(got[0], x[k:10])
        np.testing.assert_array_equal(got[1], x[k - 20:k + 3])
        np.testing.assert_array_equal(got[2], x[0:k])
    round_trip(PRIM)


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32")):
        n = T.int64()
        gv = CALL
        return gv
"""


@pytest.mark.parametrize(("call", "message"), [
    ("R.strided_slice(x, [0], [R.prim_value(T.float32(1))], [n])",
     "R.strided_slice: argument 'begin' must be a tuple of integers or integer expressions"),
    ("R.strided_slice(x, [0], [0], [n], [R.prim_value(n)])",
     "R.strided_slice: argument 'strides' must be an integer or a tuple of integers"),
    ("R.strided_slice(x, [0, 1], [0], [n, 2])",
     "R.strided_slice: axes, begin, end and strides need one value each per axis, got 2, 1, "
     "2 and 2"),
])
def test_misuse_is_a_diagnostic(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and diag.span.line == 6
