"""Reductions over axes: `sum mean max min prod variance std` with `axis` (None: all) and
`keepdims`; `argmax argmin` over one axis (None: the flattened tensor), giving int64."""

from __future__ import annotations

from tirc.ir.dtype import dtype
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import const_dim, dim, shape_text

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


def _statistic(oc: OpCall) -> StructInfo:
    oc.float_dtype("x")
    return _reduce(oc)


def _arg(oc: OpCall) -> StructInfo:
    s = oc.tensor("x")
    assert s.shape is not None
    if s.dtype is not None and s.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    axis = oc.values["axis"]
    axes = list(range(len(s.shape))) if axis is None else [oc.axis(axis, len(s.shape))]
    if axis is not None and not s.shape:
        oc.error("a 0-d tensor has no axis")
    if any(const_dim(s.shape[a]) == 0 for a in axes):
        oc.error(f"the reduced elements of {shape_text(s.shape)} are none: an empty axis has no "
                 "position of an extreme")
    shape = reduced_shape(oc, s.shape, axes, oc.values["keepdims"])
    return TensorSInfo(shape, dtype("int64"), len(shape))


for _name in REDUCTIONS:
    register(_name, [Param("x", "tensor"), Param("axis", "ints", None),
                     Param("keepdims", "bool", False)], _reduce)
for _name in ("variance", "std"):
    register(_name, [Param("x", "tensor"), Param("axis", "ints", None),
                     Param("keepdims", "bool", False)], _statistic)
for _name in ("argmax", "argmin"):
    register(_name, [Param("x", "tensor"), Param("axis", "int", None),
                     Param("keepdims", "bool", False)], _arg)
