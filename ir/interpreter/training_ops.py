"""NumPy implementations of operators that training graphs and exported models use:
`collapse_sum_like`/`collapse_sum_to`, `nn.group_norm`, `scatter_elements`, `nn.nll_loss` and
`nn.cross_entropy_with_logits`.

Each is written from its definition (TVM's, ONNX's for the scatter), apart from the
legalization: the collapse through NumPy's broadcasting rule, the group norm on a reshaped
array in float64, the scatter as the sequential loop its definition is, the losses per target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def collapse_sum_to(data: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The sum of `data` over the axes broadcasting `shape` to data's shape would add: the
    leading extra axes, and each axis where the target has 1 and the data more."""
    target = tuple(int(d) for d in shape)
    x = np.asarray(data)
    if len(target) > x.ndim:
        raise ValueError(f"cannot collapse {x.shape} to {target}")
    lead = x.ndim - len(target)
    out = x.sum(axis=tuple(range(lead)), dtype=x.dtype) if lead else x
    ones = tuple(a for a, (d, t) in enumerate(zip(out.shape, target)) if t == 1 and d != 1)
    if ones:
        out = out.sum(axis=ones, keepdims=True, dtype=x.dtype)
    if out.shape != target:
        raise ValueError(f"cannot collapse {x.shape} to {target}")
    return np.asarray(out, dtype=x.dtype)


def collapse_sum_like(data: np.ndarray, collapse_target: np.ndarray) -> np.ndarray:
    return collapse_sum_to(data, np.shape(collapse_target))


def group_norm(data: np.ndarray, gamma: np.ndarray, beta: np.ndarray, num_groups: int,
               channel_axis: int, axes: Sequence[int], epsilon: float = 1e-5,
               center: bool = True, scale: bool = True) -> np.ndarray:
    """The channels split into `num_groups` groups; each group normalized by the mean and
    (population) variance over its channels and `axes`, then scaled and shifted per channel."""
    x = np.asarray(data, dtype=np.float64)
    c = channel_axis % x.ndim
    channels = x.shape[c]
    grouped = x.reshape(x.shape[:c] + (num_groups, channels // num_groups) + x.shape[c + 1:])
    over = tuple(sorted({c + 1} | {a % x.ndim + (a % x.ndim > c) for a in axes}))
    mean = grouped.mean(axis=over, keepdims=True)
    var = ((grouped - mean) ** 2).mean(axis=over, keepdims=True)
    out = ((grouped - mean) / np.sqrt(var + epsilon)).reshape(x.shape)
    per_channel = [1] * x.ndim
    per_channel[c] = channels
    if scale:
        out = out * np.asarray(gamma, dtype=np.float64).reshape(per_channel)
    if center:
        out = out + np.asarray(beta, dtype=np.float64).reshape(per_channel)
    return out.astype(np.asarray(data).dtype)


def instance_norm(data: np.ndarray, gamma: np.ndarray, beta: np.ndarray, channel_axis: int = 1,
                  axes: Sequence[int] = (), epsilon: float = 1e-5, center: bool = True,
                  scale: bool = True) -> np.ndarray:
    """Each channel of each instance normalized over `axes` alone: a group per channel."""
    channels = np.shape(data)[channel_axis % np.ndim(data)]
    return group_norm(data, gamma, beta, channels, channel_axis, axes, epsilon, center, scale)


def _combine(reduction: str) -> Callable[[Any, Any], Any]:
    """How an update meets the element already there (TVM's `mean` averages the two)."""
    return {
        "update": lambda old, new: new,
        "add": lambda old, new: old + new,
        "mul": lambda old, new: old * new,
        "mean": lambda old, new: (old + new) / 2,
        "min": lambda old, new: np.minimum(old, new),
        "max": lambda old, new: np.maximum(old, new),
    }[reduction]


def scatter_elements(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int = 0,
                     reduction: str = "update") -> np.ndarray:
    """A copy of `data` where each update, in row-major order of the indices, meets the
    element its index names along `axis` (a negative index counts from the end)."""
    out = np.array(data, copy=True)
    combine = _combine(reduction)
    a = axis % out.ndim
    size = out.shape[a]
    for pos in np.ndindex(*np.shape(indices)):
        i = int(indices[pos])
        if not -size <= i < size:
            raise IndexError(f"index {i} is out of bounds for axis {a} with size {size}")
        target = list(pos)
        target[a] = i % size
        old = out[tuple(target)]
        out[tuple(target)] = combine(old, updates[pos])
    return out


def nll_loss(predictions: np.ndarray, targets: np.ndarray, weights: np.ndarray | None = None,
             reduction: str = "mean", ignore_index: int = -100) -> np.ndarray:
    """-weights[t] * predictions[n, t, d...] per target t (0 where t is `ignore_index`); their
    sum, or their sum over the sum of the weights of the targets not ignored (`mean`)."""
    pred = np.asarray(predictions)
    dt = pred.dtype
    classes = pred.shape[0] if pred.ndim == 1 else pred.shape[1]
    w = np.ones(classes, dtype=np.float64) if weights is None else \
        np.asarray(weights, dtype=np.float64)
    per_class = pred[None] if pred.ndim == 1 else pred
    t = np.asarray(targets).reshape((1,) if pred.ndim == 1 else np.shape(targets))
    loss = np.zeros(t.shape, dtype=np.float64)
    weight = np.zeros(t.shape, dtype=np.float64)
    for pos in np.ndindex(*t.shape):
        c = int(t[pos])
        if c == ignore_index:
            continue
        if not 0 <= c < classes:
            raise IndexError(f"target {c} is out of range for {classes} classes")
        loss[pos] = -w[c] * float(per_class[(pos[0], c) + pos[1:]])
        weight[pos] = w[c]
    if reduction == "none":
        return loss.reshape(np.shape(targets)).astype(dt)
    if reduction == "sum":
        return np.asarray(loss.sum(), dtype=dt)
    return np.asarray(loss.sum() / weight.sum(), dtype=dt)


def cross_entropy_with_logits(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """-sum(predictions * labels), divided by the batch (the first axis) when there is one."""
    p = np.asarray(predictions, dtype=np.float64)
    total = -(p * np.asarray(labels, dtype=np.float64)).sum()
    if p.ndim > 1:
        total = total / p.shape[0]
    return np.asarray(total, dtype=np.asarray(predictions).dtype)


TRAINING_OPS: dict[str, Callable[..., Any]] = {
    "collapse_sum_like": collapse_sum_like,
    "collapse_sum_to": collapse_sum_to,
    "nn.group_norm": group_norm,
    "nn.instance_norm": instance_norm,
    "scatter_elements": scatter_elements,
    "nn.nll_loss": nll_loss,
    "nn.cross_entropy_with_logits": cross_entropy_with_logits,
}
