"""Graph operators and forms met in a sweep of TVM's LegalizeOps tests (TVM 0.27): each program is
run by the interpreter and compiled at -O0 and -O3, and checked against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_support import run_everywhere
from tirc.frontend import parse_file
from tirc.ir import CompileError
from tirc.passes.graph.normalize import Normalize

ATAN2 = """\
@I.ir_module
class Module:
    @R.function
    def main(y: R.Tensor((3, 1), "float32"), x: R.Tensor((4,), "float32")):
        gv = R.atan2(y, x)
        return gv
"""


def test_atan2_broadcasts_in_every_quadrant(tmp_path: Path) -> None:
    """R.atan2(y, x) is NumPy's arctan2 with broadcasting, the quadrant from both signs."""
    y = np.array([[1.5], [-2.0], [0.0]], dtype="float32")
    x = np.array([-1.0, 0.5, 0.0, -0.0], dtype="float32")
    for (got,) in run_everywhere(tmp_path, ATAN2, [y, x]):
        assert got.shape == (3, 4) and got.dtype == np.float32
        np.testing.assert_allclose(got, np.arctan2(y, x), rtol=1e-6)


def test_atan2_of_integers_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prog.tir"
    path.write_text(ATAN2.replace('"float32"', '"int32"'))
    with pytest.raises(CompileError) as err:
        Normalize()(parse_file(path))
    assert "R.atan2: needs float tensors, got int32" in err.value.diagnostics[0].message


PRINTED_SCALAR = """\
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), s: T.float32,
              out: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        for i, j in T.grid(T.int64(2), T.int64(3)):
            with T.sblock("scale"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = a[vi, vj] * s

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), s: T.float32):
        cls = Module
        a = R.call_tir(cls.scale, (x, s), out_ty=R.Tensor((2, 3), dtype="float32"))
        gv = R.atan2(a, s)
        return gv
"""


def test_a_scalar_parameter_typed_as_tvm_prints_it(tmp_path: Path) -> None:
    """`s: T.float32` in a graph function's signature, TVM's printed R.Prim("float32"), is
    a scalar argument of the kernel and of the binary operator."""
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2.5
    s = np.float32(-0.75)
    for (got,) in run_everywhere(tmp_path, PRINTED_SCALAR, [x, s]):
        np.testing.assert_allclose(got, np.arctan2(x * s, s), rtol=1e-6)


BOOL_XOR = """\
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def xor(a: T.Buffer((T.int64(5),), "bool"), b: T.Buffer((T.int64(5),), "bool"),
            out: T.Buffer((T.int64(5),), "bool")):
        for i in range(T.int64(5)):
            with T.sblock("xor"):
                vi = T.axis.spatial(T.int64(5), i)
                out[vi] = a[vi] ^ b[vi]

    @R.function
    def main(a: R.Tensor((5,), "bool"), b: R.Tensor((5,), "bool")):
        cls = Module
        gv = R.call_tir(cls.xor, (a, b), out_sinfo=R.Tensor((5,), "bool"))
        return gv
"""


def test_xor_of_bools_is_not_equal(tmp_path: Path) -> None:
    """`a ^ b` of bool operands (TVM's legalized R.logical_xor) is their inequality."""
    a = np.array([True, True, False, False, True])
    b = np.array([True, False, True, False, False])
    for (got,) in run_everywhere(tmp_path, BOOL_XOR, [a, b]):
        np.testing.assert_array_equal(got, np.logical_xor(a, b))


CEIL_POOL = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 9), "float32")):
        a = R.nn.max_pool1d(x, pool_size=(2,), strides=(2,), padding=(1, 1), ceil_mode=True)
        b = R.nn.avg_pool1d(x, pool_size=(2,), strides=(2,), padding=(1, 1), ceil_mode=True,
                            count_include_pad=False)
        gv = (a, b)
        return gv
"""


@pytest.mark.parametrize("size", ["9", '"n"'])
def test_a_ceil_mode_window_starting_in_the_padding_after_is_dropped(tmp_path: Path,
                                                                     size: str) -> None:
    """9 elements padded by 1 on each side, windows of 2 at stride 2 in ceil mode: 5 windows
    (starts -1, 1, 3, 5, 7); a sixth would start at 9, in the padding after (TVM, PyTorch).
    With a symbolic size the output's size is a min() the entry can check."""
    x = np.array([[[3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0, -6.0, 5.0]]], dtype="float32")
    pairs = [x[0, 0, max(s, 0):s + 2] for s in (-1, 1, 3, 5, 7)]
    want_max = np.array([[[p.max() for p in pairs]]], dtype="float32")
    want_avg = np.array([[[p.mean() for p in pairs]]], dtype="float32")
    text = CEIL_POOL.replace("(1, 1, 9)", f"(1, 1, {size})")
    for got_max, got_avg in run_everywhere(tmp_path, text, [x]):
        np.testing.assert_array_equal(got_max, want_max)
        np.testing.assert_allclose(got_avg, want_avg, rtol=1e-6)


EINSUM = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("m", "k"), "float32"), y: R.Tensor(("k", "n"), "float32")):
        gv = R.einsum((x, y), "ij,jk->ik")
        return gv
"""


def test_einsum_sums_over_a_symbolic_size(tmp_path: Path) -> None:
    """The summed label's extent is the kernel's own `k` (it was the graph's: codegen error,
    'variable k is used but never defined')."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5)).astype("float32")
    y = rng.standard_normal((5, 4)).astype("float32")
    for (got,) in run_everywhere(tmp_path, EINSUM, [x, y]):
        np.testing.assert_allclose(got, x @ y, rtol=1e-5, atol=1e-6)


TRIANGLES = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 5), "int32")):
        a = R.tril(x, 1)
        b = R.triu(x, k=-1)
        c = R.tril(x)
        gv = (a, b, c)
        return gv
"""


def test_tril_and_triu_zero_one_side_of_a_diagonal(tmp_path: Path) -> None:
    x = np.arange(1, 31, dtype="int32").reshape(2, 3, 5)
    for got in run_everywhere(tmp_path, TRIANGLES, [x]):
        np.testing.assert_array_equal(got[0], np.tril(x, 1))
        np.testing.assert_array_equal(got[1], np.triu(x, -1))
        np.testing.assert_array_equal(got[2], np.tril(x))


def test_tril_of_a_vector_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prog.tir"
    path.write_text(TRIANGLES.replace("(2, 3, 5)", "(5,)"))
    with pytest.raises(CompileError) as err:
        Normalize()(parse_file(path))
    assert "R.tril: needs a tensor of rank 2 or more, got rank 1" in \
        err.value.diagnostics[0].message


