"""`T.fast_exp` in the LLVM backend: inline vector arithmetic (no expf calls) whose error stays
within the bound fast_math.py documents, with and without FMA contraction; the special values;
the scalar, float16, bfloat16 and float64 paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import tirc.runtime as rt
from backend_support import build_library, elementwise
from tirc.backends.llvm.fast_math import HI, LO
from tirc.ir import Var
from tirc.ir.dtype import dtype
from tirc.ir.expr import call

# The bound fast_math.py documents (measured over every float32 in [LO, HI]).
MAX_REL_ERROR = 1e-7
MAX_ULP = 1.02
F32_LO, F32_HI = np.float32(LO), np.float32(HI)

SOURCE = '''
from tvm.script import tir as T


@T.prim_func
def fast_exp(x: T.handle, y: T.handle):
    T.func_attr({"global_symbol": "fast_exp", "tir.noalias": True})
    n = T.int64()
    X = T.match_buffer(x, (n,), "float32")
    Y = T.match_buffer(y, (n,), "float32")
    for io in T.parallel((n + 15) // 16):
        for ii in T.vectorized(16):
            with T.block("y"):
                vi = T.axis.spatial(n, io * 16 + ii)
                T.where(io * 16 + ii < n)
                Y[vi] = T.fast_exp(X[vi])
'''


def compile_source(tmp: Path, out_name: str, target: str = "llvm") -> Path:
    """Compile SOURCE at -O3 for `target` to tmp/out_name (a .so or .ll by its suffix)."""
    from click.testing import CliRunner
    from tirc.cli.main import cli

    src = tmp / "fast_exp.tir"
    src.write_text(SOURCE)
    out = tmp / out_name
    res = CliRunner().invoke(cli, [str(src), "-O3", "--target", target, "-o", str(out)],
                             prog_name="tirc")
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module", params=["llvm", "llvm -fp-contract=off"], ids=["fma", "no-fma"])
def vector_lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("fast_exp")
    return rt.load(compile_source(tmp, "fast_exp.so", request.param))


@pytest.fixture(scope="module")
def scalar_lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    n = Var("n", dtype("int64"))
    funcs = [elementwise(f"exp_{dt}", [dt], dt, lambda x: call("fast_exp", x), n)
             for dt in ("float32", "float16", "bfloat16", "float64")]
    return build_library(funcs, tmp_path_factory.mktemp("fast_exp_scalar") / "scalar.so",
                         opt_level=0)


def spread_floats(count: int) -> np.ndarray:
    """About `count` float32 values evenly spread over the bit patterns of [LO, HI]."""
    neg = (int(np.float32(-0.0).view(np.uint32)), int(F32_LO.view(np.uint32)))
    pos = (0, int(F32_HI.view(np.uint32)))
    step = (neg[1] - neg[0] + pos[1]) // count
    return np.concatenate([np.arange(a, b + 1, step, dtype=np.uint32).view(np.float32)
                           for a, b in (neg, pos)])


def check_bound(x: np.ndarray, got: np.ndarray) -> None:
    ref = np.exp(x.astype(np.float64))
    err = np.abs(got.astype(np.float64) - ref)
    worst = int(np.argmax(err / ref))
    assert err[worst] / ref[worst] <= MAX_REL_ERROR, f"exp({x[worst]!r}) gave {got[worst]!r}"
    ulps = err / np.spacing(ref.astype(np.float32))
    assert ulps.max() <= MAX_ULP


def test_vector_code_has_no_exp_calls(tmp_path: Path) -> None:
    text = compile_source(tmp_path, "fast_exp.ll").read_text()
    assert "<16 x float>" in text
    assert "@llvm.exp." not in text and "@expf" not in text


def test_error_bound_over_the_range(vector_lib: Any) -> None:
    x = np.concatenate([spread_floats(1 << 19),
                        np.random.default_rng(0).uniform(LO, HI, 1 << 19).astype(np.float32)])
    check_bound(x, vector_lib.fast_exp(x))


def test_error_bound_near_zero_and_edges(vector_lib: Any) -> None:
    tiny = np.float32(2.0) ** -np.arange(1, 150, dtype=np.float32)
    edges = np.array([F32_LO, F32_HI, np.nextafter(F32_LO, 0), np.nextafter(F32_HI, 0),
                      0.34657359, -0.34657359, 0.34657362, -0.34657362], np.float32)
    powers = np.float32(np.log(2)) * np.arange(-125, 128, dtype=np.float32)  # near 2^n
    x = np.concatenate([tiny, -tiny, edges, powers])
    check_bound(x, vector_lib.fast_exp(x))


SPECIAL = [
    (0.0, 1.0), (-0.0, 1.0), (np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan),
    (100.0, np.inf), (-100.0, 0.0), (1e30, np.inf), (-1e30, 0.0), (89.0, np.inf),
    (-88.0, 0.0), (float(np.nextafter(F32_HI, np.float32(np.inf))), np.inf),
    (float(np.nextafter(F32_LO, np.float32(-np.inf))), 0.0),
]


def test_special_values(vector_lib: Any) -> None:
    x = np.array([v for v, _ in SPECIAL] * 3, np.float32)  # 39 values: full vectors and a tail
    want = np.array([w for _, w in SPECIAL] * 3, np.float32)
    got = vector_lib.fast_exp(x)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got).any()
    assert np.isfinite(vector_lib.fast_exp(np.array([F32_HI], np.float32))).all()
    assert vector_lib.fast_exp(np.array([F32_LO], np.float32))[0] >= np.finfo(np.float32).tiny


def test_scalar_path(scalar_lib: Any) -> None:
    x = np.concatenate([spread_floats(1 << 16), [0.0, -np.inf, np.inf, np.nan, -100.0]])
    x = x.astype(np.float32)
    got = scalar_lib.exp_float32(x)
    check_bound(x[:-5], got[:-5])
    np.testing.assert_array_equal(got[-5:], [1.0, 0.0, np.inf, np.nan, 0.0])


def test_float16_goes_through_float32(scalar_lib: Any) -> None:
    bits = np.arange(0x10000, dtype=np.uint16)
    x = bits[(bits & 0x7C00) != 0x7C00].view(np.float16)  # every finite float16
    got = scalar_lib.exp_float16(x).astype(np.float64)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
        want = ref.astype(np.float16).astype(np.float64)
    # Within one float16 ulp of exp (half an ulp plus the float32 error), inf where it overflows.
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    got, ref = got[finite], ref[finite]
    assert (np.abs(got - ref) <= np.spacing(want[finite].astype(np.float16))).all()


def test_bfloat16_goes_through_float32(scalar_lib: Any) -> None:
    x = np.linspace(-80.0, 80.0, 1001).astype(ml_dtypes.bfloat16)
    got = scalar_lib.exp_bfloat16(x).astype(np.float64)
    want = np.exp(x.astype(np.float64)).astype(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2.0**-8)


def test_float64_keeps_full_precision(scalar_lib: Any) -> None:
    x = np.linspace(-700.0, 700.0, 4097)
    np.testing.assert_allclose(scalar_lib.exp_float64(x), np.exp(x), rtol=1e-15)


def test_softmax_benchmark_kernels(tmp_path: Path) -> None:
    """benchmarks/softmax.tir computes row softmax with either exponential."""
    from click.testing import CliRunner
    from tirc.cli.main import cli

    src = Path(__file__).resolve().parents[2] / "benchmarks" / "softmax.tir"
    out = tmp_path / "softmax.so"
    res = CliRunner().invoke(cli, [str(src), "-O3", "-o", str(out)], prog_name="tirc")
    assert res.exit_code == 0, res.output
    lib = rt.load(out)
    x = np.random.default_rng(1).standard_normal((4096, 1024), dtype=np.float32) * 4
    x[0, :] = -1e30  # a row whose entries are all equal and huge: uniform 1/1024
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    # x - max is rounded to float32 (up to 2^-19 off for |x - max| < 64) before either exp.
    for fn in (lib.softmax_exp, lib.softmax_fast_exp):
        got = np.empty_like(x)
        fn(x, got)
        np.testing.assert_allclose(got, want, rtol=5e-6, atol=1e-30)
