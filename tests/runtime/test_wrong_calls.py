"""Wrong calls through tirc.runtime: each raises a precise Python exception before the library
is entered, and the process stays alive (the last test calls correctly afterwards)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from backend_support import build_library, flat_view, func, i64
from tirc.ir import For, ForKind, PrimFunc, Var, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.expr import cast
from tirc.ir.stmt import BufferStore, seq

I64 = dtype("int64")


def _matmul() -> Any:
    """C[16, 4] = A[16, 8] @ B[8, 4] over flat buffers (C is read too: it accumulates)."""
    a = make_buffer("A", (i64(16), i64(8)), "float32")
    b = make_buffer("B", (i64(8), i64(4)), "float32")
    c = make_buffer("C", (i64(16), i64(4)), "float32")
    fa, fb, fc = flat_view(a), flat_view(b), flat_view(c)
    i, j, k = Var("i", I64), Var("j", I64), Var("k", I64)
    init = BufferStore(fc, fc.vload(i * 4 + j) * 0.0, (i * 4 + j,))
    acc = BufferStore(fc, fc.vload(i * 4 + j) + fa.vload(i * 8 + k) * fb.vload(k * 4 + j),
                      (i * 4 + j,))
    body = For(i, i64(0), i64(16), ForKind.SERIAL, For(j, i64(0), i64(4), ForKind.SERIAL, seq(
        init, For(k, i64(0), i64(8), ForKind.SERIAL, acc))))
    handles = tuple(Var(n, dtype("handle")) for n in ("A", "B", "C"))
    return PrimFunc("matmul", handles, dict(zip(handles, (a, b, c))), body,
                    {"global_symbol": "matmul"})


def _add_rows() -> Any:
    n = Var("n", I64)
    x = make_buffer("X", (n, i64(64)), "float32")
    y = make_buffer("Y", (i64(64),), "float32")
    out = make_buffer("Out", (n, i64(64)), "float32")
    fx, fo = flat_view(x), flat_view(out)
    i, j = Var("i", I64), Var("j", I64)
    body = For(i, i64(0), n, ForKind.SERIAL, For(j, i64(0), i64(64), ForKind.SERIAL,
               BufferStore(fo, fx.vload(i * 64 + j) + y.vload(j), (i * 64 + j,))))
    return func("add_rows", [x, y, out], body)


def _square() -> Any:
    n = Var("n", I64)
    a = make_buffer("A", (n, n), "float32")
    out = make_buffer("Out", (n, n), "float32")
    fa, fo = flat_view(a), flat_view(out)
    i = Var("i", I64)
    return func("transpose_sq", [a, out], For(i, i64(0), n * n, ForKind.SERIAL,
                BufferStore(fo, fa.vload((i % n) * n + i // n), (i,))))


def _scale() -> Any:
    s, k = Var("s", dtype("float32")), Var("k", dtype("int8"))
    x, out = make_buffer("X", (i64(8),), "float32"), make_buffer("Out", (i64(8),), "float32")
    i = Var("i", I64)
    body = For(i, i64(0), i64(8), ForKind.SERIAL,
               BufferStore(out, x.vload(i) * s + cast("float32", k), (i,)))
    return func("scale", [x, out], body, scalars=(s, k))


def _bf16() -> Any:
    x, out = make_buffer("X", (i64(4),), "bfloat16"), make_buffer("Out", (i64(4),), "bfloat16")
    i = Var("i", I64)
    return func("bf16_double", [x, out], For(i, i64(0), i64(4), ForKind.SERIAL,
                                             BufferStore(out, x.vload(i) * 2.0, (i,))))


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    funcs = [_matmul(), _add_rows(), _square(), _scale(), _bf16()]
    return build_library(funcs, tmp_path_factory.mktemp("wrong") / "wrong.so", 1)


def f32(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


class FakeGPUArray:
    """An object exporting DLPack from a CUDA device."""

    def __dlpack__(self, **kw: Any) -> Any:
        raise AssertionError("must not be imported")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


def misaligned(n: int) -> np.ndarray:
    raw = np.zeros(4 * n + 8, np.uint8)
    start = 1 if raw.ctypes.data % 4 == 0 else 2
    return raw[start:start + 4 * n].view(np.float32)


def readonly(*shape: int) -> np.ndarray:
    a = f32(*shape)
    a.flags.writeable = False
    return a


A, B, C = f32(16, 8), f32(8, 4), np.zeros((16, 4), np.float32)

WRONG_CALLS = [
    ("too_few", "matmul", (A,), {}, TypeError,
     "matmul() takes 3 arguments (A, B, C), got 1; missing: B"),
    ("too_many", "matmul", (A, B, C, C), {}, TypeError,
     "matmul() takes 3 arguments (A, B, C), got 4"),
    ("none", "matmul", (A, None, C), {}, TypeError,
     "matmul: argument B: expected a float32 array of shape (8, 4), got None"),
    ("list", "matmul", (A, [[1.0] * 4] * 8, C), {}, TypeError,
     "matmul: argument B: expected a numpy array or an object with __dlpack__, got list"),
    ("python_float", "matmul", (A, 1.0, C), {}, TypeError,
     "matmul: argument B: expected a numpy array or an object with __dlpack__, got float"),
    ("dtype_f64", "matmul", (A.astype(np.float64), B, C), {}, TypeError,
     "matmul: argument A: expected dtype float32, got float64"),
    ("dtype_i32", "matmul", (A, B, C.astype(np.int32)), {}, TypeError,
     "matmul: argument C: expected dtype float32, got int32"),
    ("byteswapped", "matmul", (A.astype(">f4"), B, C), {}, TypeError,
     "matmul: argument A: expected dtype float32, got >f4"),
    ("rank_low", "matmul", (A.reshape(-1), B, C), {}, ValueError,
     "matmul: argument A: expected 2 dimensions, got 1 (shape (128,))"),
    ("rank_high", "matmul", (A, B.reshape(8, 2, 2), C), {}, ValueError,
     "matmul: argument B: expected 2 dimensions, got 3 (shape (8, 2, 2))"),
    ("shape", "matmul", (A, f32(8, 5), C), {}, ValueError,
     "matmul: argument B: expected shape (8, 4), got (8, 5)"),
    ("output_shape", "matmul", (A, B, np.zeros((4, 16), np.float32)), {}, ValueError,
     "matmul: argument C: expected shape (16, 4), got (4, 16)"),
    ("symbolic_inconsistent", "add_rows", (f32(10, 64), f32(64), np.zeros((9, 64), np.float32)),
     {}, ValueError,
     "add_rows: argument Out: expected shape (10, 64), got (9, 64) (n = 10 from X.shape[0])"),
    ("symbolic_square", "transpose_sq", (f32(4, 5), np.zeros((4, 4), np.float32)), {},
     ValueError, "transpose_sq: argument A: expected shape (4, 4), got (4, 5) "
     "(n = 4 from A.shape[0])"),
    ("transposed_view", "matmul", (f32(8, 16).T, B, C), {}, ValueError,
     "matmul: argument A: expected a compact row-major (C-contiguous) array, got strides "
     "(4, 64) bytes; pass np.ascontiguousarray(...) for a copy"),
    ("strided_slice", "matmul", (A, f32(8, 8)[:, ::2], C), {}, ValueError,
     "matmul: argument B: expected a compact row-major (C-contiguous) array, got strides "
     "(32, 8) bytes; pass np.ascontiguousarray(...) for a copy"),
    ("readonly_output", "matmul", (A, B, readonly(16, 4)), {}, ValueError,
     "matmul: argument C: is an output, but the array is read-only"),
    ("output_aliases_input", "add_rows", (C.reshape(1, 64), f32(64), C.reshape(1, 64)), {},
     ValueError, "add_rows: argument Out (an output) shares memory with argument X"),
    ("unknown_keyword", "matmul", (A, B), {"D": C}, TypeError,
     "matmul() has no parameter 'D' (parameters: A, B, C)"),
    ("keyword_twice", "matmul", (A, B, C), {"A": A}, TypeError,
     "matmul() got argument 'A' twice"),
    ("scalar_string", "scale", (f32(8), f32(8), "2", 1), {}, TypeError,
     "scale: argument s: expected a number (float32), got str"),
    ("scalar_range", "scale", (f32(8), f32(8), 2.0, 300), {}, ValueError,
     "scale: argument k: 300 does not fit in int8"),
    ("scalar_float_for_int", "scale", (f32(8), f32(8), 2.0, 1.5), {}, TypeError,
     "scale: argument k: expected an integer (int8), got float"),
    ("scalar_none", "scale", (f32(8), f32(8), None, 1), {}, TypeError,
     "scale: argument s: expected a float32 scalar, got None"),
    ("gpu_dlpack", "matmul", (FakeGPUArray(), B, C), {}, ValueError,
     "matmul: argument A: expected a CPU array (DLPack device type 1), got device type 2"),
    ("bf16_given_f32", "bf16_double", (f32(4),), {}, TypeError,
     "bf16_double: argument X: expected dtype bfloat16, got float32"),
]


@pytest.mark.parametrize("case", WRONG_CALLS, ids=[c[0] for c in WRONG_CALLS])
def test_wrong_call_raises_precise_error(lib: Any, case: tuple[Any, ...]) -> None:
    _, name, args, kwargs, exc, message = case
    with pytest.raises(exc) as info:
        lib[name](*args, **kwargs)
    assert str(info.value) == message


def test_misaligned_array(lib: Any) -> None:
    x = misaligned(8)
    with pytest.raises(ValueError) as info:
        lib.scale(x, f32(8), 1.0, 0)
    assert str(info.value) == (f"scale: argument X: data address {x.ctypes.data:#x} is not "
                               "aligned to 4 bytes (the size of float32)")


def test_unknown_function(lib: Any) -> None:
    with pytest.raises(AttributeError, match="has no function 'nope'"):
        _ = lib.nope
    with pytest.raises(KeyError, match="has no function 'nope'"):
        _ = lib["nope"]


def test_process_alive_and_correct_after_wrong_calls(lib: Any) -> None:
    assert len(WRONG_CALLS) >= 20
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 4)).astype(np.float32)
    np.testing.assert_allclose(lib.matmul(a, b), a @ b, rtol=1e-5, atol=1e-6)
    bf = np.dtype(ml_dtypes.bfloat16)
    x = np.array([1.5, -2, 3, 0.25], bf)
    np.testing.assert_array_equal(lib.bf16_double(x), x * 2)
    out = lib.scale(np.arange(8, dtype=np.float32), s=2.0, k=-1)
    np.testing.assert_array_equal(out, np.arange(8) * 2.0 - 1)
