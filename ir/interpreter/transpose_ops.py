"""NumPy transposed convolution for the reference interpreter (`nn.conv1d_transpose`,
`nn.conv2d_transpose`).

Written as the scatter the operator is defined by, apart from the legalization (which gathers
from a dilated, padded copy of the data with the kernel flipped): every input position `i`
and kernel tap `t` add `x[i] * w[t]` into output position `i * stride - pad_before +
t * dilation`. The sums run into a buffer that also holds the positions the padding crops,
which are cut off at the end. float32 and float64 sum in float64, integers in the result type,
half precision in float32.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.ir.dtype import dtype
from tirc.ir.interpreter.values import np_dtype
from tirc.ir.interpreter.window_ops import IntsArg, padding_pairs, per_axis

SPATIAL = {1: "W", 2: "HW"}


def conv_transpose(data: np.ndarray, weight: np.ndarray, strides: IntsArg = 1,
                   padding: IntsArg = 0, output_padding: IntsArg = 0, dilation: IntsArg = 1,
                   groups: int = 1, data_layout: str = "", kernel_layout: str = "",
                   out_layout: str | None = None, out_dtype: Any = None, *,
                   rank: int) -> np.ndarray:
    """Grouped transposed convolution (the gradient of `conv*d` with respect to its data)."""
    sp = SPATIAL[rank]
    data_layout = data_layout or "NC" + sp
    kernel_layout = kernel_layout or "IO" + sp
    dt = np.result_type(data) if out_dtype in (None, "void") else np_dtype(dtype(str(out_dtype)))
    acc = np.dtype(np.float64) if dt.kind == "f" and dt.itemsize >= 4 else \
        np.dtype(np.float32) if dt.kind == "f" else dt
    x = np.transpose(np.asarray(data), [data_layout.index(c) for c in "NC" + sp]).astype(acc)
    w = np.transpose(np.asarray(weight), [kernel_layout.index(c) for c in "IO" + sp]).astype(acc)
    s, d = per_axis(strides, rank), per_axis(dilation, rank)
    pads, extra = padding_pairs(padding, rank), per_axis(output_padding, rank)
    n, channels = x.shape[:2]
    per_group, out_per_group = channels // groups, w.shape[1]
    ins, taps = x.shape[2:], w.shape[2:]
    full = [(i - 1) * st + dl * (k - 1) + 1 + e for i, st, dl, k, e in zip(ins, s, d, taps, extra)]
    result = np.zeros((n, groups, out_per_group, *full), dtype=acc)
    xs = x.reshape(n, groups, per_group, *ins)
    ws = w.reshape(groups, per_group, out_per_group, *taps)
    for tap in itertools.product(*(range(k) for k in taps)):
        contribution = np.einsum("ngc...,gco->ngo...", xs,
                                 ws[(slice(None), slice(None), slice(None), *tap)])
        index = [slice(None)] * 3
        for t, st, dl, i in zip(tap, s, d, ins):
            index.append(slice(t * dl, t * dl + (i - 1) * st + 1, st))
        result[tuple(index)] += contribution
    crop = [slice(None)] * 3
    for f, (before, after) in zip(full, pads):
        crop.append(slice(before, f - after))
    kept = result[tuple(crop)]
    y = kept.reshape(n, groups * out_per_group, *kept.shape[3:]).astype(dt)
    layout = out_layout or data_layout
    return np.transpose(y, [("NC" + sp).index(c) for c in layout])


TRANSPOSE_OPS: dict[str, Callable[..., Any]] = {
    f"nn.conv{r}d_transpose": functools.partial(conv_transpose, rank=r) for r in (1, 2)}
