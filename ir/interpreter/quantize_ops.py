"""`R.quantize` and `R.dequantize` for the interpreter, in NumPy from their definitions: the
quantized value rounds (ties to even) in the data's float type, is offset by the zero point
and clipped to the result type's range; dequantizing subtracts the zero point in int32 and
scales in float32 (clipped to the float16 range for a float16 result)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.ir.dtype import dtype
from tirc.ir.interpreter.values import np_dtype


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A scalar as is, a 1-d per-axis tensor shaped to broadcast along `axis`."""
    v = np.asarray(v)
    if v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def quantize(data: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int = -1,
             out_dtype: Any = "int8") -> np.ndarray:
    """clip(rint(data / scale) + zero_point, qmin, qmax), in the data's dtype, as out_dtype."""
    x = np.asarray(data)
    a = axis % x.ndim if x.ndim else 0
    out = np_dtype(dtype(str(out_dtype)))
    s = _along(scale, a, x.ndim).astype(x.dtype)
    z = _along(zero_point, a, x.ndim).astype(x.dtype)
    info = np.iinfo(out)
    q = np.rint(x / s) + z
    return np.clip(q, x.dtype.type(info.min), x.dtype.type(info.max)).astype(out)


def dequantize(data: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int = -1,
               out_dtype: Any = "float32") -> np.ndarray:
    """float32(int32(data) - int32(zero_point)) * float32(scale), as out_dtype."""
    x = np.asarray(data)
    a = axis % x.ndim if x.ndim else 0
    z = _along(zero_point, a, x.ndim).astype(np.int32)
    s = _along(scale, a, x.ndim).astype(np.float32)
    v = (x.astype(np.int32) - z).astype(np.float32) * s
    out = np_dtype(dtype(str(out_dtype)))
    if out == np.float16:
        v = np.clip(v, np.float32(-65504), np.float32(65504))
    return v.astype(out)


QUANTIZE_OPS: dict[str, Callable[..., Any]] = {"quantize": quantize, "dequantize": dequantize}
