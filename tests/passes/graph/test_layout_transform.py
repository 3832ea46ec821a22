"""R.layout_transform as TVM 0.27 defines it: the index map's image of the input shape
(`i // k`: ceildiv(n, k) values, `i % k`: k), padded with `pad_value` (0 when not given) where
`k` does not divide the axis; run by the interpreter and compiled at -O0 and -O3 against
NumPy, printed and parsed back, and a map it cannot take a diagnostic at the call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_support import round_trip
from graph_support import normalize_diagnostic, run_everywhere
from tirc.ir.printer import print_module
from tirc.passes.graph.normalize import Normalize

PROGRAM = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((10, 3), "float32"), y: R.Tensor((2, 8, 3, 5), "int32"),
             z: R.Tensor(("n", 6), "float32")):
        n = T.int64()
        a = R.layout_transform(x, index_map=lambda i, j: (i // 4, j, i % 4), pad_value=1.5)
        b = R.layout_transform(y, index_map=lambda n, c, h, w: (n, c // 4, h, w, c % 4))
        c = R.layout_transform(x, index_map=T.index_map(lambda i, j: (j, i),
                                                        index_dtype="int64"))
        d = R.layout_transform(z, lambda i, j: (j // 4, i, j % 4), R.prim_value(T.float32(-1)))
        e = R.layout_transform(z, index_map=lambda i, j: (i // 2, j // 8, i % 2, j % 8))
        gv = (a, b, c, d, e)
        return gv
"""


def _pad_split(a: np.ndarray, axis: int, k: int, value: float) -> np.ndarray:
    """`a` padded along `axis` to a multiple of `k`, that axis split into (n / k, k)."""
    n = a.shape[axis]
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, -n % k)
    p = np.pad(a, widths, constant_values=value)
    return p.reshape(*p.shape[:axis], -1, k, *p.shape[axis + 1:])


@pytest.mark.parametrize("n", [4, 5])
def test_layouts_against_numpy(tmp_path: Path, n: int) -> None:
    """NCHW -> NCHW4c, a transpose, splits that pad (10 rows by 4, 6 columns by 4, `n` rows
    by 2 when odd) with the given value or 0, a symbolic axis; `j // 8, j % 8` of 6 columns
    is (1, 8), two columns of padding, as TVM 0.27 infers and computes it."""
    x = np.arange(30, dtype="float32").reshape(10, 3)
    y = np.arange(2 * 8 * 3 * 5, dtype="int32").reshape(2, 8, 3, 5)
    z = (np.arange(n * 6, dtype="float32") + 1).reshape(n, 6)
    runs = run_everywhere(tmp_path, PROGRAM, [x, y, z])
    assert len(runs) == 3
    for got in runs:
        np.testing.assert_array_equal(got[0], _pad_split(x, 0, 4, 1.5).transpose(0, 2, 1))
        np.testing.assert_array_equal(got[1], y.reshape(2, 2, 4, 3, 5).transpose(0, 1, 3, 4, 2))
        np.testing.assert_array_equal(got[2], x.T)
        np.testing.assert_array_equal(got[3], _pad_split(z, 1, 4, -1).transpose(1, 0, 2))
        e = np.pad(_pad_split(z, 0, 2, 0), [(0, 0), (0, 0), (0, 2)])[:, None]
        assert got[4].shape == ((n + 1) // 2, 1, 2, 8)  # `j % 8` of 6 columns has 8 values
        np.testing.assert_array_equal(got[4], e)


def test_shapes_print_and_parse_back() -> None:
    mod = Normalize()(round_trip(PROGRAM))
    printed = print_module(mod)
    assert "a: R.Tensor((T.int64(3), T.int64(3), T.int64(4)), dtype=\"float32\") = " \
        "R.layout_transform(x, index_map=lambda i, j: (i // T.int64(4), j, i % T.int64(4)), " \
        "pad_value=1.5)" in printed
    assert "e: R.Tensor(((n + T.int64(1)) // T.int64(2), T.int64(1), T.int64(2), T.int64(8))"\
        in printed
    assert "R.layout_transform(x, index_map=lambda i, j: (j, i))" in printed
    round_trip(printed)


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 3), "float32")):
        gv = CALL
        return gv
"""


@pytest.mark.parametrize(("call", "message"), [
    ("R.layout_transform(x, index_map=lambda i: (i,))",
     "R.layout_transform: the index map takes 1 indices, but the tensor has rank 2"),
    ("R.layout_transform(x, index_map=lambda i, j: (i + j, j))",
     "R.layout_transform: output 0 of the index map, i + j, must be an index `i`, `i // k` or "
     "`i % k` (k a positive constant)"),
    ("R.layout_transform(x, index_map=lambda i, j: (i // 4, j))",
     "R.layout_transform: the index map must send index i to one output, or split it into "
     "`i // k` and `i % k` (TVM needs a one-to-one map)"),
    ("R.layout_transform(x, index_map=lambda i, j: (i // 4, j, i % 2))",
     "R.layout_transform: the index map must send index i to one output, or split it into "
     "`i // k` and `i % k` (TVM needs a one-to-one map)"),
    ("R.layout_transform(x, index_map=lambda i, j: (i, i))",
     "R.layout_transform: the index map must send index i to one output, or split it into "
     "`i // k` and `i % k` (TVM needs a one-to-one map)"),
    ("R.layout_transform(x, index_map=(0, 1))",
     "R.layout_transform: argument 'index_map' must be a lambda, such as lambda i, j: "
     "(i // 4, j, i % 4)"),
    ("R.layout_transform(x, index_map=lambda i, j: (j, i), axis_separators=[1])",
     "R.layout_transform: axis_separators are not supported (the result is one flat buffer)"),
])
def test_misuse_is_a_diagnostic_at_the_call(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and (diag.span.line, diag.span.col) == (5, 14)
