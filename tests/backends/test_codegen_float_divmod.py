"""Floor and truncating division and modulo on floats, as TVM defines them: floordiv is
floor(a / b), floormod a - floor(a / b) * b, truncdiv a / b and truncmod C's fmod (`frem`).
TVM's `vectorize__binary_floormod` test program and vectorized loops over both signs, compiled
at -O0 and -O3, against numpy and the reference interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tirc.driver import build, emit
from tirc.frontend import parse
from tirc.ir import PrimFunc, structural_equal
from tirc.ir.interpreter import run_prim_func
from tirc.ir.printer import print_module
from tirc.runtime import load

SOURCE = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def binary_floormod(A: T.Buffer((25,), "float32"), B: T.Buffer((25,), "float32")):
        for j in T.vectorized(4):
            A[j] = T.FloorMod(T.float32(3), B[j])

    @T.prim_func
    def divmod_f32(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"),
                   Q: T.Buffer((64,), "float32"), R: T.Buffer((64,), "float32"),
                   TQ: T.Buffer((64,), "float32"), TR: T.Buffer((64,), "float32")):
        for i in range(8):
            for j in T.vectorized(8):
                Q[i * 8 + j] = T.FloorDiv(A[i * 8 + j], B[i * 8 + j])
                R[i * 8 + j] = T.floormod(A[i * 8 + j], B[i * 8 + j])
                TQ[i * 8 + j] = T.truncdiv(A[i * 8 + j], B[i * 8 + j])
                TR[i * 8 + j] = T.Mod(A[i * 8 + j], B[i * 8 + j])

    @T.prim_func
    def divmod_f64(A: T.Buffer((64,), "float64"), B: T.Buffer((64,), "float64"),
                   Q: T.Buffer((64,), "float64"), R: T.Buffer((64,), "float64"),
                   TQ: T.Buffer((64,), "float64"), TR: T.Buffer((64,), "float64")):
        for i in range(64):
            Q[i] = A[i] // B[i]
            R[i] = A[i] % B[i]
            TQ[i] = T.truncdiv(A[i], B[i])
            TR[i] = T.truncmod(A[i], B[i])
'''

NUMPY = (np.floor_divide, np.mod, np.divide, np.fmod)  # Q, R, TQ, TR
RNG = np.random.default_rng(11)


def dyadic(dt: str) -> tuple[np.ndarray, np.ndarray]:
    """Operands of both signs whose quotients are exact, so TVM's floor(a / b) formulas and
    numpy's floor_divide/mod agree bit for bit."""
    a = RNG.integers(-64, 65, 64) / 4
    b = RNG.integers(1, 13, 64) / 2 * RNG.choice([-1, 1], 64)
    return a.astype(dt), b.astype(dt)


def run(fn: Any, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """Q, R, TQ, TR of `fn` (a compiled function or a PrimFunc for the interpreter)."""
    outs = [np.full(64, -99, a.dtype) for _ in NUMPY]
    if isinstance(fn, PrimFunc):
        run_prim_func(fn, [a, b, *outs])
    else:
        fn(a, b, *outs)
    return outs


@pytest.fixture(scope="module", params=[0, 3], ids=["O0", "O3"])
def library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("float_divmod") / f"divmod_o{request.param}.so"
    return load(build(parse(SOURCE), path, "llvm", request.param))


def test_prints_and_parses_back_equal() -> None:
    mod = parse(SOURCE)
    again = parse(print_module(mod))
    assert structural_equal(mod, again)
    assert "T.truncmod(A[i * 8 + j], B[i * 8 + j])" in print_module(mod)


def test_tvm_binary_floormod(library: Any) -> None:
    b = np.linspace(-4.5, 4.5, 25).astype(np.float32)
    a = np.full(25, 7.0, np.float32)
    library["binary_floormod"](a, b)
    expected = np.full(25, 7.0, np.float32)
    expected[:4] = np.mod(np.float32(3), b[:4])  # -4.5, -4.125, -3.75, -3.375
    np.testing.assert_array_equal(a, expected)
    interpreted = np.full(25, 7.0, np.float32)
    run_prim_func(parse(SOURCE)["binary_floormod"], [interpreted, b])
    np.testing.assert_array_equal(interpreted, expected)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_matches_numpy_and_the_interpreter_on_both_signs(library: Any, dt: str) -> None:
    name = "divmod_f32" if dt == "float32" else "divmod_f64"
    a, b = dyadic(dt)
    compiled = run(library[name], a, b)
    interpreted = run(parse(SOURCE)[name], a, b)
    for got, ref, numpy_op in zip(compiled, interpreted, NUMPY):
        np.testing.assert_array_equal(got, numpy_op(a, b))
        np.testing.assert_array_equal(ref, numpy_op(a, b))
    r, tr = compiled[1], compiled[3]
    assert np.all((r == 0) | (np.sign(r) == np.sign(b)))  # floormod: the divisor's sign
    assert np.all((tr == 0) | (np.sign(tr) == np.sign(a)))  # truncmod: the dividend's sign


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_matches_the_interpreter_bit_for_bit_on_any_operands(library: Any, dt: str) -> None:
    """Inexact quotients, huge ratios and a zero divisor (inf and nan lanes) included."""
    name = "divmod_f32" if dt == "float32" else "divmod_f64"
    a = (RNG.standard_normal(64) * 10.0 ** RNG.integers(-3, 6, 64)).astype(dt)
    b = (RNG.standard_normal(64) * 10.0 ** RNG.integers(-3, 3, 64)).astype(dt)
    b[:3] = 0.0
    a[5], b[5] = 1.0, 0.1
    with np.errstate(all="ignore"):
        compiled = run(library[name], a, b)
    interpreted = run(parse(SOURCE)[name], a, b)
    for got, ref in zip(compiled, interpreted):
        np.testing.assert_array_equal(got, ref)
    one, tenth = np.array(1.0, dt), np.array(0.1, dt)
    assert compiled[1][5] == one - np.floor(one / tenth) * tenth  # TVM's formula, not np.mod


def test_vectorized_code_uses_floor_and_frem() -> None:
    ll = emit(parse(SOURCE), "ll", "llvm", 3).decode()
    assert "@llvm.floor.v4f32" in ll  # binary_floormod: one 4-lane vector
    assert "frem <8 x float>" in ll
    assert "@llvm.floor.v8f32" in ll
