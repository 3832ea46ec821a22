"""`T.ldexp(x, n)` with an integer exponent, as TVM's test_tir_intrin builds it
(`tvm.tir.ldexp(A[i], B[i])`, B int32): tirc refused it ("T.ldexp needs a float argument, got
int32"). The exponent converts to x's float dtype. Compiled at -O0..-O3, scalar and vectorized,
against numpy and the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.ir.interpreter import run_prim_func
from tirc.runtime import load

SOURCE = '''
from tvm.script import tir as T


@T.prim_func
def ldexp(var_A: T.handle, var_B: T.handle, var_C: T.handle):
    T.func_attr({"tir.noalias": True})
    m = T.int32()
    A = T.match_buffer(var_A, (m,))
    B = T.match_buffer(var_B, (m,), "int32")
    C = T.match_buffer(var_C, (m,))
    for i0 in range(m):
        with T.block("C"):
            v_i0 = T.axis.spatial(m, i0)
            C[v_i0] = T.ldexp(A[v_i0], B[v_i0])


@T.prim_func
def ldexp_vector(A: T.Buffer((16,), "float64"), B: T.Buffer((16,), "int32"),
                 C: T.Buffer((16,), "float64")):
    for i in range(4):
        for j in T.vectorized(4):
            C[i * 4 + j] = T.ldexp(A[i * 4 + j], B[i * 4 + j]) + T.ldexp(A[i * 4 + j], 3)
'''


def arguments(dt: str) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    a = (rng.integers(-64, 65, 16) / 8).astype(dt)
    b = rng.integers(-6, 7, 16).astype(np.int32)
    return [a, b, np.zeros(16, dt)]


def test_integer_exponent_converts_to_the_float_operand() -> None:
    mod = parse(SOURCE)
    store = mod["ldexp"].body.body.block.body
    assert [str(x.dtype) for x in store.value.args] == ["float32", "float32"]


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_ldexp_matches_numpy_and_the_interpreter(level: int, tmp_path: Path) -> None:
    mod = parse(SOURCE)
    lib = load(build(mod, tmp_path / f"ldexp_o{level}.so", "llvm", level))
    for name, dt in (("ldexp", "float32"), ("ldexp_vector", "float64")):
        want = arguments(dt)
        run_prim_func(mod[name], want)
        got = arguments(dt)
        lib[name](*got)
        expected = np.ldexp(want[0], want[1])
        if name == "ldexp_vector":
            expected = expected + np.ldexp(want[0], 3)
        np.testing.assert_array_equal(want[2], expected)
        np.testing.assert_array_equal(got[2], want[2])
