"""NumPy implementations of the graph-level (Relax) operators, for the reference interpreter.

Each entry takes the operator's arguments as Relax names them (positional tensors first, then
attributes such as `axis`, `keepdims`, `axes`, `epsilon`) and returns numpy arrays of the
input dtype; integer `divide` truncates as TVM's does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tirc.ir.dtype import DType, dtype
from tirc.ir.interpreter.attention_ops import ATTENTION_OPS
from tirc.ir.interpreter.image_ops import IMAGE_OPS
from tirc.ir.interpreter.indexing_ops import INDEXING_OPS
from tirc.ir.interpreter.layout_ops import LAYOUT_OPS
from tirc.ir.interpreter.print_ops import PRINT_OPS
from tirc.ir.interpreter.quantize_ops import QUANTIZE_OPS
from tirc.ir.interpreter.training_ops import TRAINING_OPS
from tirc.ir.interpreter.transpose_ops import TRANSPOSE_OPS
from tirc.ir.interpreter.values import np_dtype
from tirc.ir.interpreter.window_ops import WINDOW_OPS

OPS: dict[str, Callable[..., Any]] = {**WINDOW_OPS, **ATTENTION_OPS, **TRANSPOSE_OPS, **IMAGE_OPS,
                                     **TRAINING_OPS, **INDEXING_OPS, **LAYOUT_OPS, **PRINT_OPS,
                                     **QUANTIZE_OPS}

AxisArg = int | Sequence[int] | None


def op(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register an operator implementation under its Relax name (without `R.`)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        OPS[name] = fn
        return fn

    return register


def to_np_dtype(dt: str | DType | np.dtype) -> np.dtype:
    if isinstance(dt, np.dtype):
        return dt
    return np_dtype(dtype(str(dt)))


def _axis(axis: AxisArg) -> int | tuple[int, ...] | None:
    if axis is None or isinstance(axis, int):
        return axis
    return tuple(int(a) for a in axis)


def _like(result: Any, *inputs: Any) -> np.ndarray:
    """Keep the input dtype (numpy promotes some mixes that Relax would not)."""
    arrays = [np.asarray(x) for x in inputs]
    return np.asarray(result).astype(arrays[0].dtype, copy=False)


def _binary(name: str, fn: Callable[[Any, Any], Any]) -> None:
    OPS[name] = lambda x1, x2: _like(fn(x1, x2), x1, x2)


def _trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu":
        rem = np.fmod(a, b)
        return (a - rem) // b
    return a / b


for _name, _fn in {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": _trunc_divide, "floor_divide": np.floor_divide, "maximum": np.maximum,
    "minimum": np.minimum, "power": np.power, "mod": np.fmod, "floor_mod": np.mod,
    "atan2": np.arctan2, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "left_shift": np.left_shift, "right_shift": np.right_shift,
}.items():
    _binary(_name, _fn)

for _name, _fn in {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
}.items():
    OPS[_name] = _fn

# The broadcasting binary operators, whose operands may be R.Prim scalars (see graph.py).
BROADCAST_BINARY = frozenset(
    ("add", "subtract", "multiply", "divide", "floor_divide", "maximum", "minimum", "power",
     "mod", "floor_mod", "atan2", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
     "right_shift", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
     "logical_and", "logical_or", "logical_xor"))
# Operators whose R.Prim operands reach them as arrays of shape (1,) of their dtype.
PRIM_OPERANDS = BROADCAST_BINARY | {"one_hot"}


def _unary(name: str, fn: Callable[[np.ndarray], Any]) -> None:
    OPS[name] = lambda x: _like(fn(np.asarray(x)), x)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _one(x: np.ndarray) -> Any:
    return np.asarray(1, dtype=np.asarray(x).dtype)


def _rounding(fn: Callable[[np.ndarray], Any]) -> Callable[[np.ndarray], Any]:
    """floor/ceil/round/trunc: an integer tensor is its own result (TVM's), not a round trip
    through float64, which would round int64 values past 2**53."""
    return lambda x: x.copy() if x.dtype.kind in "iu" else fn(x)


for _name, _fn in {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "negative": np.negative,
    "abs": np.abs, "floor": _rounding(np.floor), "ceil": _rounding(np.ceil),
    "round": _rounding(np.rint), "sin": np.sin,
    "cos": np.cos, "square": np.square, "log2": np.log2, "exp2": np.exp2, "sign": np.sign,
    "trunc": _rounding(np.trunc), "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "bitwise_not": np.invert,
    "erf": _erf, "rsqrt": lambda x: _one(x) / np.sqrt(x),
    "sigmoid": lambda x: _one(x) / (_one(x) + np.exp(-x)),
    "nn.relu": lambda x: np.maximum(x, 0),
    "nn.relu6": lambda x: np.minimum(np.maximum(x, 0), 6).astype(x.dtype),
    "nn.silu": lambda x: x * (_one(x) / (_one(x) + np.exp(-x))),
    "nn.gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "nn.gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(
        math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.astype(np.float64) ** 3))),
}.items():
    _unary(_name, _fn)

OPS["logical_not"] = np.logical_not


@op("matmul")
def matmul(x1: np.ndarray, x2: np.ndarray, out_dtype: Any = None) -> np.ndarray:
    out = np.matmul(x1, x2)
    return out.astype(to_np_dtype(out_dtype)) if out_dtype else _like(out, x1)


@op("nn.softmax")
def softmax(data: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(data - np.max(data, axis=axis, keepdims=True))
    return _like(e / np.sum(e, axis=axis, keepdims=True), data)


@op("nn.log_softmax")
def log_softmax(data: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = data - np.max(data, axis=axis, keepdims=True)
    return _like(shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True)), data)


@op("nn.layer_norm")
def layer_norm(data: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axes: AxisArg = -1,
               epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> np.ndarray:
    ax = _axis(axes)
    mean = np.mean(data, axis=ax, keepdims=True)
    var = np.mean(np.square(data - mean), axis=ax, keepdims=True)
    out = (data - mean) / np.sqrt(var + np.asarray(epsilon, dtype=data.dtype))
    if scale:
        out = out * gamma
    if center:
        out = out + beta
    return _like(out, data)


@op("nn.leakyrelu")
def leakyrelu(data: np.ndarray, alpha: float = 0.01) -> np.ndarray:
    return _like(np.where(data > 0, data, alpha * data), data)


@op("nn.softplus")
def softplus(data: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    scaled = beta * data.astype(np.float64)
    return _like(np.where(scaled > threshold, data, np.log(1 + np.exp(scaled)) / beta), data)


@op("nn.selu")
def selu(data: np.ndarray) -> np.ndarray:
    x = data.astype(np.float64)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _like(scale * np.where(x > 0, x, alpha * (np.exp(x) - 1)), data)


@op("nn.prelu")
def prelu(data: np.ndarray, alpha: np.ndarray, axis: int = 1) -> np.ndarray:
    shape = [1] * data.ndim
    shape[axis] = -1
    return _like(np.where(data > 0, data, alpha.reshape(shape) * data), data)


@op("nn.batch_norm")
def batch_norm(data: np.ndarray, gamma: np.ndarray, beta: np.ndarray, moving_mean: np.ndarray,
               moving_var: np.ndarray, axis: int = 1, epsilon: float = 1e-5,
               center: bool = True, scale: bool = True, momentum: float = 0.1,
               training: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TVM's topi.nn.batch_norm: batch statistics and updated moving ones when training."""
    axis = axis % data.ndim
    shape = [1] * data.ndim
    shape[axis] = -1
    x = data.astype(np.float64)
    if training:
        others = tuple(a for a in range(data.ndim) if a != axis)
        mean, var = x.mean(axis=others), x.var(axis=others)
    else:
        mean, var = moving_mean.astype(np.float64), moving_var.astype(np.float64)
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + epsilon)
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    if training:
        mean = (1 - momentum) * moving_mean + momentum * mean
        var = (1 - momentum) * moving_var + momentum * var
    return _like(out, data), _like(mean, moving_mean), _like(var, moving_var)


@op("nn.rms_norm")
def rms_norm(data: np.ndarray, weight: np.ndarray, axes: AxisArg = -1,
             epsilon: float = 1e-5) -> np.ndarray:
    ax = _axis(axes)
    ms = np.mean(np.square(data), axis=ax, keepdims=True)
    return _like(data / np.sqrt(ms + np.asarray(epsilon, dtype=data.dtype)) * weight, data)


def _reduce(name: str, fn: Callable[..., Any]) -> None:
    def reduce(x: np.ndarray, axis: AxisArg = None, keepdims: bool = False) -> np.ndarray:
        return _like(fn(x, axis=_axis(axis), keepdims=bool(keepdims)), x)

    OPS[name] = reduce


for _name, _fn in {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
                   "prod": np.prod, "variance": np.var, "std": np.std}.items():
    _reduce(_name, _fn)


@op("argmax")
def argmax(x: np.ndarray, axis: int | None = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.argmax(x, axis=axis, keepdims=bool(keepdims)), dtype=np.int64)


@op("argmin")
def argmin(x: np.ndarray, axis: int | None = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.argmin(x, axis=axis, keepdims=bool(keepdims)), dtype=np.int64)


@op("reshape")
def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.reshape(x, tuple(int(d) for d in shape))


@op("permute_dims")
def permute_dims(x: np.ndarray, axes: Sequence[int] | None = None) -> np.ndarray:
    return np.transpose(x, None if axes is None else tuple(int(a) for a in axes))


@op("expand_dims")
def expand_dims(x: np.ndarray, axis: AxisArg) -> np.ndarray:
    return np.expand_dims(x, _axis(axis))  # type: ignore[arg-type]


@op("squeeze")
def squeeze(x: np.ndarray, axis: AxisArg = None) -> np.ndarray:
    return np.squeeze(x, _axis(axis))


@op("flatten")
def flatten(x: np.ndarray) -> np.ndarray:
    return np.reshape(x, (-1,))


@op("concat")
def concat(tensors: Sequence[np.ndarray], axis: int = 0) -> np.ndarray:
    return np.concatenate(list(tensors), axis=axis)


@op("split")
def split(x: np.ndarray, indices_or_sections: int | Sequence[int],
          axis: int = 0) -> tuple[np.ndarray, ...]:
    """An int n makes n parts of ceil(size / n) (the last smaller), as Relax does."""
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        chunk = -(-x.shape[axis] // n)
        cuts = [chunk * k for k in range(1, n)]
    else:
        cuts = [int(i) for i in indices_or_sections]
    return tuple(np.split(x, cuts, axis=axis))


@op("take")
def take(x: np.ndarray, indices: np.ndarray, axis: int | None = None,
         mode: str = "fast") -> np.ndarray:
    np_mode = {"fast": "raise", "clip": "clip", "wrap": "wrap"}.get(mode, "raise")
    return np.take(x, indices, axis=axis, mode=np_mode)  # type: ignore[call-overload]


@op("gather_elements")
def gather_elements(data: np.ndarray, indices: np.ndarray, axis: int = 0) -> np.ndarray:
    """out[i] = data[i with its `axis` coordinate replaced by indices[i]] (negative from the
    end); an index outside [-size, size) is an error."""
    a = axis % data.ndim
    size = data.shape[a]
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise IndexError(f"an index of {sorted({int(idx.min()), int(idx.max())})} is out of "
                         f"bounds for axis {a} with size {size}")
    rows = tuple(slice(0, n) for n in idx.shape)
    return np.take_along_axis(data[rows[:a] + (slice(None),) + rows[a + 1:]], idx % size,
                              axis=a)


@op("gather_nd")
def gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int = 0) -> np.ndarray:
    """out[b, i, r] = data[b, indices[b, i, :], r] for indices (B..., I..., M) (negative from
    the end); an index outside [-size, size) of its axis is an error."""
    b = batch_dims
    idx = np.asarray(indices, dtype=np.int64)
    m = idx.shape[-1]
    sizes = np.asarray(data.shape[b:b + m], dtype=np.int64)
    bad = np.argwhere((idx < -sizes) | (idx >= sizes))
    if bad.size:
        pos = tuple(int(v) for v in bad[0])
        raise IndexError(f"index {int(idx[pos])} at {pos} is out of bounds for axis "
                         f"{b + pos[-1]} with size {sizes[pos[-1]]}")
    idx = idx % np.maximum(sizes, 1)
    nb = math.prod(data.shape[:b])
    flat = data.reshape((nb, *data.shape[b:]))
    picks = idx.reshape((nb, -1, m))
    rows = np.arange(nb).reshape((nb, 1))
    out = flat[(rows, *(picks[..., k] for k in range(m)))]
    return out.reshape((*idx.shape[:-1], *data.shape[b + m:]))


@op("one_hot")
def one_hot(indices: np.ndarray, on_value: np.ndarray, off_value: np.ndarray, depth: int,
            axis: int = -1) -> np.ndarray:
    """`on_value` where the position along `axis` equals the index, else `off_value` (of the
    values' dtype; an index outside [0, depth) is off everywhere, as TVM's)."""
    idx = np.asarray(indices, dtype=np.int64)
    a = axis % (idx.ndim + 1)
    positions = np.arange(depth).reshape((depth,) + (1,) * (idx.ndim - a))
    hit = np.expand_dims(idx, a) == positions
    on, off = np.asarray(on_value).reshape(()), np.asarray(off_value).reshape(())
    return np.where(hit, on, off).astype(on.dtype)


@op("strided_slice")
def strided_slice(x: np.ndarray, axes: Sequence[int], begin: Sequence[int],
                  end: Sequence[int], strides: Sequence[int] | None = None,
                  assume_inbound: bool = True) -> np.ndarray:
    index: list[slice] = [slice(None)] * x.ndim
    steps = list(strides) if strides is not None else [1] * len(axes)
    for a, b, e, s in zip(axes, begin, end, steps):
        index[int(a)] = slice(int(b), int(e), int(s))
    return x[tuple(index)]


@op("slice_scatter")
def slice_scatter(input_tensor: np.ndarray, src: np.ndarray, start: int, end: int,
                  step: int = 1, axis: int = 0) -> np.ndarray:
    """A copy of the input whose Python slice `start:end:step` along `axis` is `src`."""
    out = np.array(input_tensor, copy=True)
    index: list[slice] = [slice(None)] * out.ndim
    index[int(axis)] = slice(int(start), int(end), int(step))
    out[tuple(index)] = src
    return out


@op("flip")
def flip(x: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(x, axis=axis).copy()


@op("tril")
def tril(x: np.ndarray, k: int = 0) -> np.ndarray:
    return np.tril(x, k)


@op("triu")
def triu(x: np.ndarray, k: int = 0) -> np.ndarray:
    return np.triu(x, k)


@op("tile")
def tile(x: np.ndarray, repeats: int | Sequence[int]) -> np.ndarray:
    return np.tile(x, repeats)


@op("repeat")
def repeat(x: np.ndarray, repeats: int, axis: int | None = None) -> np.ndarray:
    return np.repeat(x, repeats, axis=axis)


@op("nn.pad")
def pad(data: np.ndarray, pad_width: Sequence[int], pad_mode: str = "constant",
        pad_value: float = 0.0) -> np.ndarray:
    widths = [(int(pad_width[2 * a]), int(pad_width[2 * a + 1])) for a in range(data.ndim)]
    if pad_mode == "constant":
        return np.pad(data, widths, constant_values=np.asarray(pad_value, dtype=data.dtype))
    return np.pad(data, widths, mode=pad_mode)  # type: ignore[call-overload]


@op("broadcast_to")
def broadcast_to(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.broadcast_to(x, tuple(int(d) for d in shape)).copy()


@op("astype")
def astype(x: np.ndarray, dtype: Any) -> np.ndarray:
    return np.asarray(x).astype(to_np_dtype(dtype))


@op("where")
def where(condition: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    return _like(np.where(condition, x1, x2), x1)


@op("clip")
def clip(x: np.ndarray, min: Any, max: Any) -> np.ndarray:  # noqa: A002 (Relax names)
    return _like(np.clip(x, min, max), x)


def _scan(fn: Callable[..., np.ndarray], identity: int) -> Callable[..., np.ndarray]:
    """cumsum / cumprod in the result dtype; `exclusive` shifts in the identity (the sums of
    the elements before each position, not the inclusive result minus the element)."""

    def scan(data: np.ndarray, axis: int | None = None, dtype: Any = None,
             exclusive: bool = False) -> np.ndarray:
        dt = to_np_dtype(dtype) if dtype else np.asarray(data).dtype
        x = np.asarray(data).astype(dt)
        if axis is None:
            x, axis = x.reshape(-1), 0
        out = fn(x, axis=axis, dtype=dt)
        if exclusive:
            first = np.full_like(np.take(out, [0], axis=axis), identity)
            rest = np.take(out, range(out.shape[axis] - 1), axis=axis)
            out = np.concatenate([first, rest], axis=axis)
        return out

    return scan


OPS["cumsum"] = _scan(np.cumsum, 0)
OPS["cumprod"] = _scan(np.cumprod, 1)


@op("bucketize")
def bucketize(input_tensor: np.ndarray, boundaries: np.ndarray, out_int32: bool = False,
              right: bool = False) -> np.ndarray:
    """How many boundaries lie below each element (`right`: at or below), PyTorch's bucket
    for sorted boundaries."""
    x = np.asarray(input_tensor)[..., None]
    below = (boundaries <= x) if right else (boundaries < x)
    return below.sum(-1).astype(np.int32 if out_int32 else np.int64)


@op("topk")
def topk(data: np.ndarray, k: int = 1, axis: int = -1, ret_type: str = "both",
         largest: bool = True, dtype: Any = "int32") -> Any:
    """The k first elements along `axis` sorted (largest first, or smallest), equal ones in
    their order along the axis; NaN has no place in that order (an error)."""
    x = np.asarray(data)
    if x.dtype.kind == "f" and np.isnan(x).any():
        raise ValueError("topk of NaN is not defined")
    a = axis % x.ndim
    moved = np.moveaxis(x, a, -1)
    if largest:  # descending, ties by position: a stable sort of the reversed axis, reversed
        order = np.flip(moved.shape[-1] - 1 - np.argsort(np.flip(moved, -1), -1, kind="stable"),
                        -1)
    else:
        order = np.argsort(moved, -1, kind="stable")
    order = order[..., :moved.shape[-1] if k < 1 else k]
    values = np.moveaxis(np.take_along_axis(moved, order, -1), -1, a)
    indices = np.moveaxis(order, -1, a).astype(to_np_dtype(dtype))
    return {"both": (values, indices), "values": values, "indices": indices}[ret_type]


@op("einsum")
def einsum(operands: Sequence[np.ndarray], subscripts: str) -> np.ndarray:
    """NumPy's Einstein summation, in the operands' dtype."""
    return np.asarray(np.einsum(subscripts, *operands)).astype(np.asarray(operands[0]).dtype)


@op("arange")
def arange(start: float, end: float | None = None, step: float = 1,
           dtype: Any = None) -> np.ndarray:
    """NumPy's arange of the bounds in int64 (all integers) or float64, cast to `dtype` (int64
    or float32 by default), as TOPI computes `start + step * i` in the bounds' type."""
    if end is None:
        start, end = 0, start
    whole = all(isinstance(v, int) for v in (start, end, step))
    values = np.arange(start, end, step, dtype=np.int64 if whole else np.float64)
    return values.astype(to_np_dtype(dtype) if dtype else np.int64 if whole else np.float32)


@op("zeros")
def zeros(shape: Sequence[int], dtype: Any = "float32") -> np.ndarray:
    return np.zeros(tuple(int(d) for d in shape), dtype=to_np_dtype(dtype))


@op("ones")
def ones(shape: Sequence[int], dtype: Any = "float32") -> np.ndarray:
    return np.ones(tuple(int(d) for d in shape), dtype=to_np_dtype(dtype))


@op("full")
def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> np.ndarray:
    value = np.asarray(fill_value)
    dt = to_np_dtype(dtype) if dtype else value.dtype
    return np.full(tuple(int(d) for d in shape), value, dtype=dt)


@op("zeros_like")
def zeros_like(x: np.ndarray, dtype: Any = None) -> np.ndarray:
    return np.zeros_like(x, dtype=to_np_dtype(dtype) if dtype else None)


@op("ones_like")
def ones_like(x: np.ndarray, dtype: Any = None) -> np.ndarray:
    return np.ones_like(x, dtype=to_np_dtype(dtype) if dtype else None)


@op("full_like")
def full_like(x: np.ndarray, fill_value: Any, dtype: Any = None) -> np.ndarray:
    return np.full_like(x, np.asarray(fill_value), dtype=to_np_dtype(dtype) if dtype else None)


@op("dist.annotate_sharding")
@op("dist.redistribute")
def placed(x: np.ndarray, device_mesh: str = "", placement: str = "") -> np.ndarray:
    """The global view of a distributed program: placing a value does not change it."""
    return x


@op("sparse.matmul")
def sparse_matmul(a: Any, b: np.ndarray, out_dtype: Any = None) -> np.ndarray:
    from tirc.ir.interpreter.sparse_tensor import sparse_matmul as run

    return run(a, b, str(out_dtype) if out_dtype else None)
