"""Reductions over axes: `sum mean max min prod` with `axis` (None: all) and `keepdims`."""

from __future__ import annotations

from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dim

REDUCTIONS = ("sum", "mean", "max", "min", "prod")


def reduced_shape(oc: OpCall, shape: tuple, axes: list[int], keepdims: bool) -> tuple:
    """The shape left after reducing `axes` (kept as 1 with keepdims)."""
    out = []
    for k, d in enumerate(shape):
        if k not in axes:
            out.append(d)
        elif keepdims:
            out.append(dim(1))
    return tuple(out)


def _reduce(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    if s.dtype is not None and s.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    keepdims = oc.values["keepdims"]
    if s.shape is None:
        axis = oc.values["axis"]
        nd = s.ndim if keepdims or s.ndim < 0 else (
            0 if axis is None else s.ndim - len(axis))
        return TensorSInfo(None, s.dtype, nd)
    axes = oc.axes(oc.values["axis"], len(s.shape))
    shape = reduced_shape(oc, s.shape, axes, keepdims)
    return TensorSInfo(shape, s.dtype, len(shape))


for _name in REDUCTIONS:
    register(_name, [Param("x", "tensor"), Param("axis", "ints", None),
                     Param("keepdims", "bool", False)], _reduce)
