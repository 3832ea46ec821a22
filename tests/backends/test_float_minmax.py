"""Float `T.max`/`T.min` follow numpy (NaN propagates) and their reductions compile at -O3 for
every AVX-512 CPU model: `llvm.maxnum` reductions tripped an assertion in LLVM 22's loop
vectorizer for znver4/znver5, which aborted the whole process (so the compiler runs as a
subprocess here)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tirc.runtime import load

Runner = Callable[..., subprocess.CompletedProcess[str]]

SOURCE = """
from tvm.script import tir as T


@T.prim_func
def row_max(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"global_symbol": "row_max", "tir.noalias": True})
    n = T.int64()
    A = T.match_buffer(a, (n, 128), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i, k in T.grid(n, 128):
        with T.block("max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.min_value("float32")
            B[vi] = T.max(B[vi], A[vi, vk])
    for i, k in T.grid(n, 128):
        with T.block("min"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.max_value("float32")
            C[vi] = T.min(C[vi], A[vi, vk])
"""


@pytest.mark.parametrize("cpu", ["znver4", "znver5", "skylake-avx512"])
def test_min_max_reductions_compile_and_propagate_nan(tmp_path: Path, run_tirc: Runner,
                                                      cpu: str) -> None:
    (tmp_path / "row_max.tir").write_text(SOURCE)
    done = run_tirc("row_max.tir", "-O3", "--target", f"llvm -mcpu={cpu}", "-o", "row_max.so",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if "avx512f" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("compiled; this host cannot run AVX-512 code")
    a = np.random.default_rng(0).standard_normal((5, 128)).astype("float32")
    a[2, 17] = np.nan
    b, c = load(tmp_path / "row_max.so").row_max(a)
    np.testing.assert_array_equal(b, np.max(a, axis=1))
    np.testing.assert_array_equal(c, np.min(a, axis=1))


VECTOR_SOURCE = """
from tvm.script import tir as T


@T.prim_func
def lanes(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"),
          Mx: T.Buffer((64,), "float32"), Mn: T.Buffer((64,), "float32"),
          R: T.Buffer((16,), "float32")):
    T.func_attr({"global_symbol": "lanes", "tir.noalias": True})
    for o in range(4):
        for l in T.vectorized(16):
            Mx[o * 16 + l] = T.max(A[o * 16 + l], B[o * 16 + l])
            Mn[o * 16 + l] = T.min(A[o * 16 + l], B[o * 16 + l])
    for l in T.vectorized(16):
        R[l] = A[l]
    for o in range(1, 4):
        for l in T.vectorized(16):
            R[l] = T.max(R[l], A[o * 16 + l])
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_vector_min_max_are_numpys(tmp_path: Path, run_tirc: Runner, opt: str) -> None:
    """Vector lanes take a compare-and-select path (not `llvm.maximum`): NaN from either
    operand as np.maximum/np.minimum, infinities and ties kept, and a NaN met by a running
    maximum stays in it (below -O2 the loop stays scalar: the same values)."""
    (tmp_path / "lanes.tir").write_text(VECTOR_SOURCE)
    done = run_tirc("lanes.tir", opt, "-o", "lanes.so", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    a = np.random.default_rng(1).standard_normal(64).astype("float32")
    b = np.random.default_rng(2).standard_normal(64).astype("float32")
    a[3], b[5], a[7], b[7] = np.nan, np.nan, np.nan, np.nan
    a[11] = b[11] = 1.5
    a[20], a[40] = np.inf, -np.inf
    mx, mn, r = load(tmp_path / "lanes.so").lanes(a, b)
    for got, want in ((mx, np.maximum(a, b)), (mn, np.minimum(a, b)),
                      (r, np.maximum.reduce(a.reshape(4, 16), axis=0))):
        np.testing.assert_array_equal(got, want)
