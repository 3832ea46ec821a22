"""What each collective does, on numpy arrays: the meaning the MPI and NCCL shims implement.

Each function takes the arrays of one group (the devices along one mesh axis, in coordinate
order) and returns the array each member ends with. A split dimension is balanced
(`np.array_split`). The numpy-simulated mesh runs programs with these; the tests compare the
real engines against them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

REDUCE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
}


def reduce(arrays: Sequence[np.ndarray], op: str) -> np.ndarray:
    """The elementwise `op`-reduction of the arrays, in coordinate order."""
    out = np.array(arrays[0], copy=True)
    for a in arrays[1:]:
        out = np.asarray(REDUCE[op](out, a)).astype(out.dtype, copy=False)
    return out


def all_reduce(arrays: Sequence[np.ndarray], op: str = "sum") -> list[np.ndarray]:
    """Every member gets the reduction of all members' arrays."""
    total = reduce(arrays, op)
    return [total.copy() for _ in arrays]


def all_gather(arrays: Sequence[np.ndarray], axis: int) -> list[np.ndarray]:
    """Every member gets the members' arrays concatenated along `axis`."""
    whole = np.concatenate(arrays, axis=axis)
    return [whole.copy() for _ in arrays]


def reduce_scatter(arrays: Sequence[np.ndarray], op: str, axis: int) -> list[np.ndarray]:
    """Member c gets part c (balanced) of the reduction along `axis`."""
    return [np.ascontiguousarray(p) for p in np.array_split(reduce(arrays, op), len(arrays),
                                                            axis=axis)]


def all_to_all(arrays: Sequence[np.ndarray], split_axis: int,
               concat_axis: int) -> list[np.ndarray]:
    """Member i gets part i of every member's array (split along `split_axis`), concatenated
    along `concat_axis`."""
    parts = [np.array_split(a, len(arrays), axis=split_axis) for a in arrays]
    return [np.concatenate([parts[j][i] for j in range(len(arrays))], axis=concat_axis)
            for i in range(len(arrays))]


def broadcast(arrays: Sequence[np.ndarray], root: int) -> list[np.ndarray]:
    """Every member gets the root's array."""
    return [arrays[root].copy() for _ in arrays]


def scatter(arrays: Sequence[np.ndarray], axis: int, root: int) -> list[np.ndarray]:
    """Member c gets part c (balanced) along `axis` of the root's array."""
    return [np.ascontiguousarray(p) for p in np.array_split(arrays[root], len(arrays),
                                                            axis=axis)]


def shard(arrays: Sequence[np.ndarray], axis: int) -> list[np.ndarray]:
    """Member c keeps part c (balanced) of its own array along `axis`: nothing moves."""
    p = len(arrays)
    return [np.ascontiguousarray(np.array_split(a, p, axis=axis)[c])
            for c, a in enumerate(arrays)]


def run(op: str, arrays: Sequence[np.ndarray], attrs: dict[str, object]) -> list[np.ndarray]:
    """The collective graph operator `op` (`ccl.allreduce`, ...) over one group."""
    if op == "ccl.allreduce":
        return all_reduce(arrays, str(attrs.get("op_type", "sum")))
    if op == "ccl.allgather":
        return all_gather(arrays, int(attrs.get("axis", 0)))  # type: ignore[arg-type]
    if op == "ccl.reduce_scatter":
        return reduce_scatter(arrays, str(attrs.get("op_type", "sum")),
                              int(attrs.get("axis", 0)))  # type: ignore[arg-type]
    if op == "ccl.all_to_all":
        return all_to_all(arrays, int(attrs.get("split_axis", 0)),  # type: ignore[arg-type]
                          int(attrs.get("concat_axis", 0)))  # type: ignore[arg-type]
    if op == "ccl.broadcast":
        return broadcast(arrays, int(attrs.get("root", 0)))  # type: ignore[arg-type]
    if op in ("ccl.scatter", "ccl.scatter_from_worker0"):
        return scatter(arrays, int(attrs.get("axis", 0)),  # type: ignore[arg-type]
                       int(attrs.get("root", 0)))  # type: ignore[arg-type]
    if op == "ccl.broadcast_from_worker0":
        return broadcast(arrays, 0)
    if op == "ccl.shard":
        return shard(arrays, int(attrs.get("axis", 0)))  # type: ignore[arg-type]
    raise ValueError(f"unknown collective R.{op}")
