"""Vector code generation: ramp loads and stores, gathers and scatters, broadcasts, vector
math through LLVM intrinsics and lane-by-lane libm calls, vector if_then_else and casts."""

from __future__ import annotations

from math import erf
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from backend_support import build_library, func, i64, vector_elementwise
from tirc.ir import For, ForKind, Var, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.expr import (
    Broadcast,
    BufferLoad,
    Let,
    Ramp,
    binop,
    call,
    cast,
    const,
    if_then_else,
    select,
)
from tirc.ir.stmt import BufferStore

L = 16
BLOCKS = 4
N = L * BLOCKS
I64V = dtype("int64").with_lanes(L)
F32V = dtype("float32").with_lanes(L)
RNG = np.random.default_rng(3)


def ramp(base: Any, stride: int = 1, lanes: int = L) -> Ramp:
    return Ramp(base, i64(stride), lanes, dtype("int64").with_lanes(lanes))


def _gather() -> Any:
    x, out = make_buffer("X", (i64(2 * N),), "float32"), make_buffer("Out", (i64(N),), "float32")
    v = Var("v", dtype("int64"))
    body = BufferStore(out, BufferLoad(x, (ramp(v * (2 * L), 2),), F32V), (ramp(v * L),))
    return func("gather", [x, out], For(v, i64(0), i64(BLOCKS), ForKind.SERIAL, body))


def _scatter() -> Any:
    x, out = make_buffer("X", (i64(N),), "float32"), make_buffer("Out", (i64(2 * N),), "float32")
    v = Var("v", dtype("int64"))
    body = BufferStore(out, BufferLoad(x, (ramp(v * L),), F32V), (ramp(v * (2 * L), 2),))
    return func("scatter", [x, out], For(v, i64(0), i64(BLOCKS), ForKind.SERIAL, body))


def _broadcast_load() -> Any:
    x, out = make_buffer("X", (i64(BLOCKS),), "float32"), make_buffer("Out", (i64(N),), "float32")
    v = Var("v", dtype("int64"))
    value = BufferLoad(x, (Broadcast(v, L, I64V),), F32V)
    body = BufferStore(out, value * Broadcast(const(2.0), L, F32V), (ramp(v * L),))
    return func("broadcast_load", [x, out], For(v, i64(0), i64(BLOCKS), ForKind.SERIAL, body))


def _shift_guarded() -> Any:
    """out[i] = x[i + 1] if i + 1 < N else -1: the guard keeps the last lane in bounds."""
    x, out = make_buffer("X", (i64(N),), "float32"), make_buffer("Out", (i64(N),), "float32")
    v = Var("v", dtype("int64"))
    nxt = ramp(v * L + 1)
    inside = binop("lt", nxt, Broadcast(i64(N), L, I64V))
    value = if_then_else(inside, BufferLoad(x, (nxt,), F32V), Broadcast(const(-1.0), L, F32V))
    body = BufferStore(out, value, (ramp(v * L),))
    return func("shift_guarded", [x, out], For(v, i64(0), i64(BLOCKS), ForKind.SERIAL, body))


def _let_vector() -> Any:
    t = Var("t", F32V)
    return vector_elementwise("let_vector", "float32", L, BLOCKS,
                              lambda a: Let(t, a * a, t + t, F32V), arity=1)


FUNCS = [
    vector_elementwise("add_f32", "float32", L, BLOCKS, lambda a, b: a + b),
    vector_elementwise("floordiv_i32", "int32", 8, 8, lambda a, b: a // b),
    vector_elementwise("floormod_i64", "int64", 4, 16, lambda a, b: a % b),
    vector_elementwise("mul_bf16", "bfloat16", 8, 8, lambda a, b: a * b + a),
    vector_elementwise("add_f16", "float16", 16, 4, lambda a, b: a + b),
    vector_elementwise("max_f64", "float64", 4, 16, lambda a, b: binop("max", a, b)),
    vector_elementwise("select_f32", "float32", L, BLOCKS, lambda a, b: select(a > b, a, b * 2.0)),
    vector_elementwise("exp_f32", "float32", L, BLOCKS, lambda a: call("exp", a), arity=1),
    vector_elementwise("erf_f32", "float32", 4, 16, lambda a: call("erf", a), arity=1),
    vector_elementwise("sigmoid_f32", "float32", L, BLOCKS, lambda a: call("sigmoid", a),
                       arity=1),
    vector_elementwise("cast_roundtrip", "float32", 8, 8,
                       lambda a: cast(dtype("float32x8"), cast(dtype("int32x8"), a)), arity=1),
    _gather(), _scatter(), _broadcast_load(), _shift_guarded(), _let_vector(),
]


@pytest.fixture(scope="module", params=[0, 2], ids=["O0", "O2"])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_library(FUNCS, tmp_path_factory.mktemp("vec") / "vec.so", request.param)


def f32(n: int = N) -> np.ndarray:
    return RNG.uniform(-3, 3, n).astype(np.float32)


def test_contiguous_vector_add(lib: Any) -> None:
    a, b = f32(), f32()
    np.testing.assert_array_equal(lib.add_f32(a, b), a + b)


def test_vector_integer_division_negative(lib: Any) -> None:
    a = RNG.integers(-50, 50, 64).astype(np.int32)
    b = RNG.integers(-7, 8, 64).astype(np.int32)
    b[b == 0] = -1
    np.testing.assert_array_equal(lib.floordiv_i32(a, b), a // b)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(lib.floormod_i64(a64, b64), a64 % b64)


def test_vector_low_precision(lib: Any) -> None:
    bf = np.dtype(ml_dtypes.bfloat16)
    a, b = f32(64).astype(bf), f32(64).astype(bf)
    np.testing.assert_array_equal(lib.mul_bf16(a, b), a * b + a)
    h, k = f32(64).astype(np.float16), f32(64).astype(np.float16)
    np.testing.assert_array_equal(lib.add_f16(h, k), h + k)


def test_vector_select_max_cast(lib: Any) -> None:
    a, b = f32(), f32()
    np.testing.assert_array_equal(lib.select_f32(a, b), np.where(a > b, a, b * 2))
    d, e = RNG.standard_normal(64), RNG.standard_normal(64)
    np.testing.assert_array_equal(lib.max_f64(d, e), np.maximum(d, e))
    np.testing.assert_array_equal(lib.cast_roundtrip(a[:64]), np.trunc(a[:64]))


def test_vector_math(lib: Any) -> None:
    a = f32()
    np.testing.assert_allclose(lib.exp_f32(a), np.exp(a), rtol=2e-6)
    np.testing.assert_allclose(lib.erf_f32(a), np.vectorize(erf)(a), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(lib.sigmoid_f32(a), 1 / (1 + np.exp(-a)), rtol=2e-6)


def test_gather_scatter_broadcast(lib: Any) -> None:
    x = f32(2 * N)
    np.testing.assert_array_equal(lib.gather(x), x[::2])
    y = f32()
    out = np.zeros(2 * N, np.float32)
    lib.scatter(y, out)
    np.testing.assert_array_equal(out[::2], y)
    np.testing.assert_array_equal(out[1::2], 0)
    z = f32(BLOCKS)
    np.testing.assert_array_equal(lib.broadcast_load(z), np.repeat(z * 2, L))


def test_vector_if_then_else_guards_loads(lib: Any) -> None:
    x = f32()
    want = np.append(x[1:], np.float32(-1))
    np.testing.assert_array_equal(lib.shift_guarded(x), want)


def test_vector_let(lib: Any) -> None:
    a = f32()
    np.testing.assert_array_equal(lib.let_vector(a), a * a + a * a)
