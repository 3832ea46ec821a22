"""NumPy convolution and pooling for the reference interpreter (`nn.conv*d`, `nn.max_pool*d`,
`nn.avg_pool*d`, `nn.adaptive_avg_pool*d`; pooling in blocked layouts such as `NCHW16c`).

Written apart from the legalization on purpose: the data is moved to the canonical layout
(`N C spatial...`), padded explicitly and visited one window tap at a time, so the two
implementations share no arithmetic. A convolution sums float32 and float64 in float64,
integers in the result type, and half precision in its own type in the kernel's order
(channel, then tap), as TVM's legalization does.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tirc.ir.dtype import dtype
from tirc.ir.interpreter.values import np_dtype

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
IntsArg = int | Sequence[int]


def per_axis(v: IntsArg, rank: int) -> tuple[int, ...]:
    """An attribute given once or once per spatial axis, one value per axis."""
    values = (v,) if isinstance(v, int) else tuple(int(x) for x in v)
    return values * rank if len(values) == 1 else values


def padding_pairs(v: IntsArg, rank: int) -> list[tuple[int, int]]:
    """TVM's padding (one value, one per axis, or all befores then all afters) as a
    (before, after) pair per spatial axis."""
    values = (v,) if isinstance(v, int) else tuple(int(x) for x in v)
    if len(values) == 1:
        values = values * (2 * rank)
    elif len(values) == rank:
        values = values + values
    return [(values[k], values[rank + k]) for k in range(rank)]


def _to_canonical(x: np.ndarray, layout: str, letters: str) -> np.ndarray:
    if sorted(layout) != sorted(letters) or x.ndim != len(letters):
        raise ValueError(f"layout '{layout}' of a {x.ndim}-d tensor is not an order of the "
                         f"axes {letters}")
    return np.transpose(x, [layout.index(c) for c in letters])


def _from_canonical(x: np.ndarray, layout: str, letters: str) -> np.ndarray:
    return np.transpose(x, [letters.index(c) for c in layout])


def _taps(data: np.ndarray, window: Sequence[int], strides: Sequence[int],
          dilation: Sequence[int], out: Sequence[int]) -> Any:
    """Each window tap with the strided view of `data` (`N C spatial...`) it reads."""
    for tap in itertools.product(*(range(w) for w in window)):
        index = [slice(None), slice(None)]
        for t, s, d, o in zip(tap, strides, dilation, out):
            index.append(slice(t * d, t * d + (o - 1) * s + 1, s))
        yield tap, data[tuple(index)]


def _out_sizes(sizes: Sequence[int], window: Sequence[int], strides: Sequence[int],
               dilation: Sequence[int], pads: Sequence[tuple[int, int]],
               ceil_mode: bool = False) -> list[int]:
    out = []
    for n, w, s, d, (b, a) in zip(sizes, window, strides, dilation, pads):
        room = n + b + a - (d * (w - 1) + 1) + (s - 1 if ceil_mode else 0)
        size = room // s + 1
        if ceil_mode:  # no window starts in the padding after (window j starts at j * s - b)
            size = min(size, (n + b - 1) // s + 1)
        out.append(size)
    return out


def conv(data: np.ndarray, weight: np.ndarray, strides: IntsArg = 1, padding: IntsArg = 0,
         dilation: IntsArg = 1, groups: int = 1, data_layout: str = "", kernel_layout: str = "",
         out_layout: str | None = None, out_dtype: Any = None, *, rank: int) -> np.ndarray:
    """Grouped N-d convolution, cross-correlation as in TVM and PyTorch."""
    sp = SPATIAL[rank]
    data_layout = data_layout or "NC" + sp
    kernel_layout = kernel_layout or "OI" + sp
    dt = np.result_type(data) if out_dtype in (None, "void") else np_dtype(dtype(str(out_dtype)))
    acc = np.dtype(np.float64) if dt.kind == "f" and dt.itemsize >= 4 else dt
    x = _to_canonical(np.asarray(data), data_layout, "NC" + sp).astype(acc)
    w = _to_canonical(np.asarray(weight), kernel_layout, "OI" + sp).astype(acc)
    s, d, pads = per_axis(strides, rank), per_axis(dilation, rank), padding_pairs(padding, rank)
    out = _out_sizes(x.shape[2:], w.shape[2:], s, d, pads)
    x = np.pad(x, [(0, 0), (0, 0), *pads])
    n, o, per_group = x.shape[0], w.shape[0], w.shape[1]
    xs = x.reshape(n, groups, per_group, *x.shape[2:])
    ws = w.reshape(groups, o // groups, per_group, *w.shape[2:])
    result = np.zeros((n, groups, o // groups, *out), dtype=acc)
    views = list(_taps(xs.reshape(n * groups, per_group, *x.shape[2:]), w.shape[2:], s, d, out))
    if acc.kind == "f" and acc.itemsize < 4:  # in its own type, channel by channel
        for i in range(per_group):
            for tap, view in views:
                part = view.reshape(n, groups, per_group, 1, *out)[:, :, i]
                taps = ws[(slice(None), slice(None), i, *tap)].reshape(
                    1, groups, o // groups, *([1] * rank))
                result = (result + (part * taps).astype(acc)).astype(acc)
    else:
        for tap, view in views:
            part = view.reshape(n, groups, per_group, *out)
            taps = ws[(slice(None), slice(None), slice(None), *tap)]
            result += np.einsum("ngi...,goi->ngo...", part, taps)
    y = result.reshape(n, o, *out).astype(dt)
    return _from_canonical(y, out_layout or data_layout, "NC" + sp)


def _window_count(size: int, out: int, window: int, stride: int, dil: int,
                  pad: tuple[int, int], include_pad: bool) -> np.ndarray:
    """Per output position, the taps an average counts (inside the data, or the padded data)."""
    lo, hi = (-pad[0], size + pad[1]) if include_pad else (0, size)
    counts = []
    for p in range(out):
        start = p * stride - pad[0]
        counts.append(sum(1 for t in range(window) if lo <= start + t * dil < hi))
    return np.asarray(counts)


def pool(data: np.ndarray, pool_size: IntsArg = 1, strides: IntsArg = 1,
         padding: IntsArg = 0, dilation: IntsArg = 1, ceil_mode: bool = False,
         count_include_pad: bool | None = None, layout: str = "",
         out_layout: str | None = None, *, rank: int, kind: str) -> np.ndarray:
    """Max or average pooling; padding is the lowest value (max) or zero (average)."""
    sp = SPATIAL[rank]
    layout = layout or "NC" + sp
    if count_include_pad is None:
        count_include_pad = kind == "avg" and rank != 2
    x = _to_canonical(np.asarray(data), layout, "NC" + sp)
    window, s = per_axis(pool_size, rank), per_axis(strides, rank)
    d, pads = per_axis(dilation, rank), padding_pairs(padding, rank)
    out = _out_sizes(x.shape[2:], window, s, d, pads, ceil_mode)
    extra = [max(0, (o - 1) * st + dl * (w - 1) + 1 - (n + b + a))
             for o, st, dl, w, n, (b, a) in zip(out, s, d, window, x.shape[2:], pads)]
    if kind == "max":
        low = (np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min)
        padded = np.pad(x, [(0, 0), (0, 0), *[(b, a + e) for (b, a), e in zip(pads, extra)]],
                        constant_values=low)
        result = None
        for _, view in _taps(padded, window, s, d, out):
            result = view.copy() if result is None else np.maximum(result, view)
        assert result is not None
        return _from_canonical(result, out_layout or layout, "NC" + sp)
    padded = np.pad(x.astype(np.float64),
                    [(0, 0), (0, 0), *[(b, a + e) for (b, a), e in zip(pads, extra)]])
    total = np.zeros((*x.shape[:2], *out))
    for _, view in _taps(padded, window, s, d, out):
        total += view
    count = np.ones(out)
    for k in range(rank):
        shape = [1] * rank
        shape[k] = out[k]
        count = count * _window_count(x.shape[2 + k], out[k], window[k], s[k], d[k], pads[k],
                                      bool(count_include_pad)).reshape(shape)
    with np.errstate(all="ignore"):
        result = (total / count).astype(x.dtype)
    return _from_canonical(result, out_layout or layout, "NC" + sp)


def adaptive_avg_pool(data: np.ndarray, output_size: IntsArg | None = None, layout: str = "",
                      out_layout: str | None = None, *, rank: int) -> np.ndarray:
    """Average over the windows [floor(o*n/m), ceil((o+1)*n/m)) of each output position."""
    sp = SPATIAL[rank]
    layout = layout or "NC" + sp
    x = _to_canonical(np.asarray(data), layout, "NC" + sp)
    sizes = x.shape[2:]
    out = list(sizes) if output_size is None else list(per_axis(output_size, rank))
    result = np.zeros((*x.shape[:2], *out), dtype=x.dtype)
    for pos in itertools.product(*(range(m) for m in out)):
        index: list[slice] = [slice(None), slice(None)]
        for o, n, m in zip(pos, sizes, out):
            index.append(slice(o * n // m, -(-(o + 1) * n // m)))
        window = x[tuple(index)].astype(np.float64)
        result[(slice(None), slice(None), *pos)] = window.mean(axis=tuple(range(2, 2 + rank)))
    return _from_canonical(result, out_layout or layout, "NC" + sp)


def _any_layout(fn: Callable[..., np.ndarray], rank: int) -> Callable[..., np.ndarray]:
    """Pooling `fn` for blocked layouts too (`NCHW16c`): every axis but the spatial ones is
    folded into one batch axis of an `NC` + spatial tensor, and unfolded after."""
    sp = SPATIAL[rank]

    def run(data: np.ndarray, *args: Any, layout: str = "", out_layout: str | None = None,
            **kw: Any) -> np.ndarray:
        letters = "".join(ch for ch in layout if ch.isalpha())
        if letters == layout:
            return fn(data, *args, layout=layout, out_layout=out_layout, **kw)
        if out_layout not in (None, "", layout):
            raise ValueError(f"out_layout '{out_layout}' differs from the blocked layout "
                             f"'{layout}'")
        keep = [k for k, ch in enumerate(letters) if ch not in sp]
        order = keep + [letters.index(ch) for ch in sp]
        moved = np.transpose(np.asarray(data), order)
        lead = moved.shape[:len(keep)]
        flat = moved.reshape((int(np.prod(lead)), 1, *moved.shape[len(keep):]))
        y = fn(flat, *args, layout="NC" + sp, **kw)
        return np.transpose(y.reshape((*lead, *y.shape[2:])), np.argsort(order))

    return run


WINDOW_OPS: dict[str, Callable[..., Any]] = {}
for _rank in (1, 2, 3):
    WINDOW_OPS[f"nn.conv{_rank}d"] = functools.partial(conv, rank=_rank)
    WINDOW_OPS[f"nn.max_pool{_rank}d"] = _any_layout(
        functools.partial(pool, rank=_rank, kind="max"), _rank)
    WINDOW_OPS[f"nn.avg_pool{_rank}d"] = _any_layout(
        functools.partial(pool, rank=_rank, kind="avg"), _rank)
    WINDOW_OPS[f"nn.adaptive_avg_pool{_rank}d"] = _any_layout(
        functools.partial(adaptive_avg_pool, rank=_rank), _rank)
