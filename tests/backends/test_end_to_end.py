"""From `.tir` text through the whole pipeline to a shared object, at -O0 and -O3: dynamic
shapes at several sizes from one library, parallel + vectorized loops with a tail, low-precision
dtypes, and argument errors from a compiled sample."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tirc.runtime as rt

SOURCE = '''
from tvm.script import tir as T


@T.prim_func
def scale_shift(x: T.handle, y: T.handle, s: T.float32):
    n = T.int64()
    X = T.match_buffer(x, (n,), "float32")
    Y = T.match_buffer(y, (n,), "float32")
    for io in T.parallel((n + 63) // 64):
        for ii in T.vectorized(64):
            with T.block("y"):
                vi = T.axis.spatial(n, io * 64 + ii)
                T.where(io * 64 + ii < n)
                Y[vi] = T.max(X[vi] * s, T.float32(-1)) + T.float32(0.25)


@T.prim_func
def half_rows(A: T.Buffer((8, 24), "float16"), B: T.Buffer((8,), "float16")):
    for i, k in T.grid(8, 24):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float16(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def int_mix(A: T.Buffer((64,), "int8"), B: T.Buffer((64,), "int32")):
    for i in T.vectorized(64):
        with T.block("b"):
            vi = T.axis.spatial(64, i)
            B[vi] = T.Cast("int32", A[vi]) // 3 + T.Cast("int32", A[vi]) % 3
'''


@pytest.fixture(scope="module", params=["-O0", "-O3"])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from click.testing import CliRunner
    from tirc.cli.main import cli

    tmp = tmp_path_factory.mktemp("e2e")
    src = tmp / "kernels.tir"
    src.write_text(SOURCE)
    out = tmp / "kernels.so"
    res = CliRunner().invoke(cli, [str(src), request.param, "-o", str(out)], prog_name="tirc")
    assert res.exit_code == 0, res.output
    return rt.load(out)


@pytest.mark.parametrize("n", [1, 63, 64, 1000, 4099])
def test_dynamic_parallel_vectorized_with_tail(lib: Any, n: int) -> None:
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    y = lib.scale_shift(x, s=1.5)
    np.testing.assert_array_equal(y, np.maximum(x * np.float32(1.5), -1) + np.float32(0.25))


def test_float16_reduction(lib: Any) -> None:
    a = np.random.default_rng(0).uniform(-1, 1, (8, 24)).astype(np.float16)
    want = np.zeros(8, np.float16)
    for k in range(24):
        want = want + a[:, k]
    np.testing.assert_array_equal(lib.half_rows(a), want)


def test_vectorized_integer_floor_semantics(lib: Any) -> None:
    a = np.arange(-32, 32, dtype=np.int8)
    wide = a.astype(np.int32)
    np.testing.assert_array_equal(lib.int_mix(a), wide // 3 + wide % 3)


def test_compiled_function_rejects_wrong_calls(lib: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"half_rows: argument A: expected shape \(8, 24\), "
                                         r"got \(8, 23\)"):
        lib.half_rows(np.zeros((8, 23), np.float16))
    with pytest.raises(TypeError, match="scale_shift: argument y: expected dtype float32, "
                                        "got float64"):
        lib.scale_shift(np.zeros(4, np.float32), np.zeros(4), 1.0)
