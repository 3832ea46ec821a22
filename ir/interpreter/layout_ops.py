"""`R.layout_transform` for the interpreter: each element moved to the index the map gives it,
the map evaluated over every index of the input (written apart from its legalization, which
inverts the map, so the two share no arithmetic)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.ir.expr import BinOp, Cast, IntImm, PrimExpr, Var

_NP_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide,
           "floormod": np.mod, "min": np.minimum, "max": np.maximum}


def _eval(e: PrimExpr, env: dict[Var, np.ndarray]) -> np.ndarray:
    """An integer index expression over arrays of index values."""
    if isinstance(e, IntImm):
        return np.int64(e.value)  # type: ignore[return-value]
    if isinstance(e, Var) and e in env:
        return env[e]
    if isinstance(e, Cast):
        return _eval(e.value, env)
    if isinstance(e, BinOp) and e.op in _NP_OPS:
        return _NP_OPS[e.op](_eval(e.a, env), _eval(e.b, env))
    raise ValueError(f"the index map's {type(e).__name__} cannot be evaluated")


def _mod_factor(e: PrimExpr, params: list[Var]) -> int | None:
    """`k` when output `e` is `i % k` of an index: that output has `k` positions even where
    the axis is shorter (TVM 0.27 infers `(1, 1, 1, 3)` for `b % 3` of a size-2 axis)."""
    if isinstance(e, BinOp) and e.op == "floormod" and isinstance(e.b, IntImm) and \
            e.a in params:
        return e.b.value  # type: ignore[return-value]
    return None


def layout_transform(x: np.ndarray, index_map: Any, pad_value: Any = None,
                     axis_separators: Any = None, input_axis_separators: Any = None
                     ) -> np.ndarray:
    """The output indexed by the map: its shape one past the largest index of each output
    (`k` for an `i % k`), the padding `pad_value` (0 when not given); two elements sent to
    one place are an error."""
    grid = np.indices(x.shape, dtype=np.int64).reshape(x.ndim, -1)
    params = list(index_map.params)
    env = dict(zip(params, grid))
    cols = [np.broadcast_to(_eval(e, env), (x.size,)) for e in index_map.body]
    if any(c.size and c.min() < 0 for c in cols):
        raise ValueError("the index map gives a negative index")
    shape = tuple(_mod_factor(e, params) or (int(c.max()) + 1 if c.size else 0)
                  for e, c in zip(index_map.body, cols))
    out = np.full(shape, 0 if pad_value is None else pad_value).astype(x.dtype)
    if x.size:
        flat = np.ravel_multi_index(tuple(cols), shape)
        if np.bincount(flat).max() > 1:
            raise ValueError("the index map sends two elements to the same place")
        out[tuple(cols)] = x.reshape(-1)
    return out


LAYOUT_OPS: dict[str, Callable[..., Any]] = {"layout_transform": layout_transform}
