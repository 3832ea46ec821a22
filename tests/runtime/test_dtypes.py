"""Every dtype of the language crosses the ABI: arrays in and out, scalars as 0-d tensors,
bfloat16 through ml_dtypes (or raw uint16 bits without it), zero-copy DLPack objects."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from backend_support import build_library, flat_view, func, i64
from tirc.ir import For, ForKind, Var, make_buffer
from tirc.ir.dtype import SCALAR_NAMES, dtype
from tirc.ir.expr import Not, cast, const, select
from tirc.ir.stmt import BufferStore
from tirc.runtime import arguments, load

I64 = dtype("int64")


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _step(name: str) -> Any:
    """out[i, j] = x[i, j] + s (bool: x != s), with s a scalar parameter of the same dtype."""
    x = make_buffer("X", (i64(3), i64(5)), name)
    out = make_buffer("Out", (i64(3), i64(5)), name)
    s = Var("s", dtype(name))
    fx, fo = flat_view(x), flat_view(out)
    i = Var("i", I64)
    value = x_i = fx.vload(i)
    if name == "bool":
        value = select(s, Not(x_i), x_i)
    else:
        value = x_i + s
    return func(f"step_{name}", [x, out], For(i, i64(0), i64(15), ForKind.SERIAL,
                                              BufferStore(fo, value, (i,))), scalars=(s,))


def _widen(name: str) -> Any:
    """out[i] = float64(x[i]): the value each dtype's bits hold, read by the library."""
    x, out = make_buffer("X", (i64(6),), name), make_buffer("Out", (i64(6),), "float64")
    i = Var("i", I64)
    return func(f"widen_{name}", [x, out], For(i, i64(0), i64(6), ForKind.SERIAL,
                                               BufferStore(out, cast("float64", x.vload(i)), (i,))))


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    funcs = [_step(n) for n in SCALAR_NAMES] + [_widen(n) for n in SCALAR_NAMES]
    x = make_buffer("X", (i64(4),), "float32")
    i = Var("i", I64)
    funcs.append(func("negate_inplace", [x], For(i, i64(0), i64(4), ForKind.SERIAL,
                                                 BufferStore(x, const(0.0) - x.vload(i), (i,)))))
    return build_library(funcs, tmp_path_factory.mktemp("dt") / "dtypes.so", 1)


def sample(name: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(len(name))
    dt = np_dtype(name)
    if name == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -50), min(info.max, 50), shape).astype(dt)
    return rng.uniform(-8, 8, shape).astype(dt)


@pytest.mark.parametrize("name", SCALAR_NAMES)
def test_dtype_round_trip_with_scalar(lib: Any, name: str) -> None:
    x = sample(name, (3, 5))
    dt = np_dtype(name)
    s = True if name == "bool" else (dt.type(3) if dt.kind in "iu" else 2.5)
    out = lib[f"step_{name}"](x, s=s)
    assert out.dtype == dt and out.shape == (3, 5)
    want = ~x if name == "bool" else (x + dt.type(s)).astype(dt)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("name", SCALAR_NAMES)
def test_library_reads_the_same_values(lib: Any, name: str) -> None:
    x = sample(name, (6,))
    np.testing.assert_array_equal(lib[f"widen_{name}"](x), x.astype(np.float64))


def test_outputs_are_64_byte_aligned(lib: Any) -> None:
    out = lib.step_int8(sample("int8", (3, 5)), s=1)
    assert out.ctypes.data % 64 == 0


class DLPackOnly:
    """An array-like that only speaks DLPack (as torch or jax arrays do)."""

    def __init__(self, arr: np.ndarray) -> None:
        self._arr = arr

    def __dlpack__(self, **kw: Any) -> Any:
        return self._arr.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._arr.__dlpack_device__()


def test_dlpack_objects_are_zero_copy(lib: Any) -> None:
    base = np.arange(4, dtype=np.float32)
    lib.negate_inplace(DLPackOnly(base))
    assert base.tolist() == [0, -1, -2, -3]


def test_bfloat16_as_raw_bits_without_ml_dtypes(lib: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    x = sample("bfloat16", (3, 5))
    real = arguments.numpy_dtype
    monkeypatch.setattr(arguments, "numpy_dtype",
                        lambda n: None if n == "bfloat16" else real(n))
    lib = load(lib.path)  # the metadata is digested at load time
    out = np.zeros((3, 5), np.uint16)
    lib.step_bfloat16(x.view(np.uint16), out, 2.5)
    np.testing.assert_array_equal(out.view(ml_dtypes.bfloat16), x + np_dtype("bfloat16").type(2.5))
    with pytest.raises(TypeError, match="install ml_dtypes"):
        lib.step_bfloat16(x.astype(np.float32), out, 2.5)
