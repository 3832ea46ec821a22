"""NumPy implementations of `scatter_nd`, `index_tensor`, `dynamic_strided_slice`,
`nn.pixel_shuffle` and `nn.dropout` for the reference interpreter, written from the
operators' definitions (TVM 0.27's) rather than from their legalizations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def _wrapped(index: int, size: int, where: str) -> int:
    """A negative index counted from the end; an index outside [-size, size) is an error."""
    if not -size <= index < size:
        raise IndexError(f"index {index} at {where} is out of bounds for an axis of size "
                         f"{size}")
    return index % size


def scatter_nd(data: np.ndarray, indices: np.ndarray, updates: np.ndarray,
               reduction: str = "update") -> np.ndarray:
    """A copy of `data` where update u[p, r...] meets out[indices[p, :], r...] for each
    position p of the indices in row-major order (TOPI's sequential order: a later `update`
    wins), combined as `reduction` says."""
    out = np.array(data, copy=True)
    idx = np.asarray(indices)
    k = idx.shape[-1]
    combine: Callable[[Any, Any], Any] = {
        "update": lambda old, new: new, "add": lambda old, new: old + new,
        "mul": lambda old, new: old * new, "min": np.minimum, "max": np.maximum}[reduction]
    for pos in np.ndindex(*idx.shape[:-1]):
        target = tuple(_wrapped(int(idx[pos][j]), out.shape[j], f"{(*pos, j)}")
                       for j in range(k))
        out[target] = combine(out[target], updates[pos])
    return out


def index_tensor(data: np.ndarray, indices: Sequence[np.ndarray]) -> np.ndarray:
    """`data[I0, I1, ...]` as NumPy's advanced indexing reads it: the index tensors broadcast
    together, the axes after the indexed ones kept (a negative index counts from the end)."""
    arr = np.asarray(data)
    picks = []
    for a, ind in enumerate(indices):
        ind = np.asarray(ind, dtype=np.int64)
        bad = np.argwhere((ind < -arr.shape[a]) | (ind >= arr.shape[a]))
        if bad.size:
            pos = tuple(int(v) for v in bad[0])
            raise IndexError(f"index {int(ind[pos])} at {pos} of index tensor {a} is out of "
                             f"bounds for axis {a} with size {arr.shape[a]}")
        picks.append(ind)
    return arr[tuple(picks)]


def pixel_shuffle(data: np.ndarray, upscale_factor: int) -> np.ndarray:
    """(..., C * r * r, H, W) -> (..., C, H * r, W * r): out[.., c, h, w] reads
    in[.., c * r * r + (h % r) * r + w % r, h // r, w // r] (channels past the last whole
    group of r * r, where a symbolic count has a remainder, are not read, as in TOPI)."""
    r = upscale_factor
    whole = np.asarray(data)
    arr = whole[..., :whole.shape[-3] // (r * r) * (r * r), :, :]
    *lead, c, h, w = arr.shape
    split = arr.reshape((*lead, c // (r * r), r, r, h, w))
    n = len(lead)
    moved = split.transpose((*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return moved.reshape((*lead, c // (r * r), h * r, w * r))


def dropout(data: np.ndarray, rate: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Inference dropout, as TVM legalizes it: the data unchanged, and a mask of ones of the
    data's dtype (no element dropped)."""
    arr = np.asarray(data)
    return arr.copy(), np.ones_like(arr)


def dynamic_strided_slice(data: np.ndarray, begin: np.ndarray, end: np.ndarray,
                          strides: np.ndarray) -> np.ndarray:
    """`data[b0:e0:s0, b1:e1:s1, ...]` with Python's slice rules (negative bounds from the
    end, bounds clamped to the axis), which TVM's compiled slice follows; a zero stride is
    an error."""
    arr = np.asarray(data)
    parts = [np.asarray(v).reshape(-1) for v in (begin, end, strides)]
    if any(len(p) != arr.ndim for p in parts):
        raise ValueError(f"begin, end and strides need {arr.ndim} entries, got "
                         f"{', '.join(str(len(p)) for p in parts)}")
    if np.any(parts[2] == 0):
        raise ValueError(f"strides must not be 0, got {parts[2].tolist()}")
    return arr[tuple(slice(int(b), int(e), int(s)) for b, e, s in zip(*parts))].copy()


INDEXING_OPS: dict[str, Callable[..., Any]] = {
    "dynamic_strided_slice": dynamic_strided_slice,
    "scatter_nd": scatter_nd,
    "index_tensor": index_tensor,
    "nn.pixel_shuffle": pixel_shuffle,
    "nn.dropout": dropout,
}
