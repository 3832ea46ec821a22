"""NumPy fused multi-head attention for the reference interpreter (`nn.attention`).

Written from the definition, apart from the legalization: the scores `Q K^T` of every head at
once with `einsum`, scaled (by `scale`, else divided by `sqrt(head_dim)`), the bias added with
NumPy broadcasting, the masked scores set to -inf, a softmax over the keys, and the weighted
sum of the values. float32 and float64 are computed in float64, half precision in float32.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def causal_keep(seq: int, seq_kv: int, mask: str) -> np.ndarray:
    """The (seq, seq_kv) boolean matrix of the scores a causal mask keeps: `np.tril` with
    k = 0 (`TopLeft`) or k = |seq - seq_kv| (`BottomRight`), as TVM defines them."""
    offset = 0 if mask == "TopLeft" else abs(seq - seq_kv)
    return np.tril(np.ones((seq, seq_kv), dtype=bool), k=offset)


def attention(query: np.ndarray, key: np.ndarray, value: np.ndarray,
              bias: np.ndarray | None = None, scale: float | None = None,
              causal_mask: str | None = None, window_size: int | None = None) -> np.ndarray:
    """softmax(Q K^T * scale + bias, masked) V per batch and head, in the BSNH layout."""
    if window_size is not None:
        raise ValueError("sliding-window attention (window_size) is not supported")
    dt = np.asarray(query).dtype
    acc = np.dtype(np.float64) if dt.itemsize >= 4 else np.dtype(np.float32)
    q, k, v = (np.asarray(a).astype(acc) for a in (query, key, value))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k)
    if scale is None:
        scores = scores / math.sqrt(q.shape[3])
    else:
        scores = scores * scale
    if bias is not None:
        scores = scores + np.asarray(bias).astype(acc)
    if causal_mask is not None:
        keep = causal_keep(q.shape[1], k.shape[1], causal_mask)
        scores = np.where(keep, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", weights, v).astype(dt)


ATTENTION_OPS: dict[str, Callable[..., Any]] = {"nn.attention": attention}
