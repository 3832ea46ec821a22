"""Reductions over axes: `sum mean max min prod variance std` with `axis` (None: all) and
`keepdims`; `argmax argmin` over one axis (None: the flattened tensor), giving int64;
`collapse_sum_like` and `collapse_sum_to`, the sum over the axes NumPy broadcasting would add to
reach the data's shape from a target's; `topk`, the k largest (or smallest) along an axis;
`bucketize`, how many boundaries lie below each element."""

from __future__ import annotations

from tirc.ir.dtype import dtype
from tirc.ir.expr import PrimExpr
from tirc.ir.graph import StructInfo, TensorSInfo, TupleSInfo
from tirc.ir.ops.manipulation import target_shape
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import const_dim, dim, dim_text, dims_equal, shape_text, tensor

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


def collapse_axes(oc: OpCall, data: tuple[PrimExpr, ...], target: tuple[PrimExpr, ...]
                  ) -> tuple[list[int], list[int]]:
    """The data axes summed away (those before the target's) and those summed into a size-1
    target axis, matched from the last axis as TVM's collapse_sum does; an error where the
    target does not broadcast to the data."""
    if len(target) > len(data):
        oc.error(f"cannot collapse {shape_text(data)} to {shape_text(target)}: the target has "
                 "more axes than the data")
    lead = len(data) - len(target)
    kept_one = []
    for a in range(lead, len(data)):
        d, t = data[a], target[a - lead]
        if dims_equal(d, t):
            continue
        if const_dim(t) == 1:
            kept_one.append(a)
            continue
        if const_dim(d) is not None and const_dim(t) is not None:
            oc.error(f"cannot collapse {shape_text(data)} to {shape_text(target)}: axis {a} "
                     f"has {dim_text(d)} elements and the target's {dim_text(t)}")
        oc.error(f"cannot collapse {shape_text(data)} to {shape_text(target)}: the sizes "
                 f"{dim_text(d)} and {dim_text(t)} of axis {a} are not provably equal")
    return list(range(lead)), kept_one


def collapse_target(oc: OpCall) -> tuple[PrimExpr, ...]:
    """The shape a collapse_sum reduces to: the target tensor's, or the shape argument."""
    if oc.op.name == "collapse_sum_like":
        target = oc.tensor("collapse_target")
        assert target.shape is not None
        return tuple(target.shape)
    return target_shape(oc)


def _collapse_sum(oc: OpCall) -> StructInfo:
    x = oc.tensor("data")
    assert x.shape is not None
    if x.dtype is not None and x.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    target = collapse_target(oc)
    collapse_axes(oc, tuple(x.shape), target)
    return tensor(target, x.dtype)


register("collapse_sum_like", [Param("data", "tensor"), Param("collapse_target", "tensor")],
         _collapse_sum)
register("collapse_sum_to", [Param("data", "tensor"), Param("shape", "shape")], _collapse_sum)


TOPK_RETURNS = ("both", "values", "indices")


def topk_axis(oc: OpCall) -> tuple[int, int]:
    """topk's axis and k (below 1: the whole axis, as TVM's); the axis needs a constant size."""
    x = oc.tensor("data")
    assert x.shape is not None
    axis = oc.axis(oc.values["axis"], len(x.shape))
    size = const_dim(x.shape[axis])
    if size is None:
        oc.error(f"axis {oc.values['axis']} has the symbolic size {dim_text(x.shape[axis])}; "
                 "topk needs an axis of constant size")
    k = size if oc.values["k"] < 1 else oc.values["k"]
    if k > size:
        oc.error(f"k {k} is larger than the axis ({size} elements)")
    return axis, k


def _topk(oc: OpCall) -> StructInfo:
    """The k first elements along the axis in order (largest first, or smallest), ties by
    position: their values, their positions (`dtype`) or both."""
    x = oc.tensor("data")
    assert x.shape is not None
    if x.dtype is not None and x.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    if oc.values["ret_type"] not in TOPK_RETURNS:
        oc.error(f"ret_type must be one of {', '.join(TOPK_RETURNS)}, got "
                 f"'{oc.values['ret_type']}'")
    if not oc.values["dtype"].is_int:
        oc.error(f"dtype must be an integer type, got {oc.values['dtype']}")
    axis, k = topk_axis(oc)
    shape = list(x.shape)
    shape[axis] = dim(k)
    values, indices = tensor(shape, x.dtype), tensor(shape, oc.values["dtype"])
    return {"both": TupleSInfo((values, indices)), "values": values,
            "indices": indices}[oc.values["ret_type"]]


register("topk", [Param("data", "tensor"), Param("k", "int", 1), Param("axis", "int", -1),
                  Param("ret_type", "str", "both"), Param("largest", "bool", True),
                  Param("dtype", "dtype", dtype("int32"))], _topk)


def _bucketize(oc: OpCall) -> StructInfo:
    """The input's shape; each element's bucket among 1-D boundaries of its dtype."""
    x, b = oc.tensor("input_tensor"), oc.tensor("boundaries")
    assert x.shape is not None and b.shape is not None
    if len(b.shape) != 1:
        oc.error(f"boundaries must be 1-D, got {shape_text(b.shape)}")
    dt = oc.same_dtype("input_tensor", "boundaries")
    if dt is not None and dt.is_bool:
        oc.error("needs a numeric tensor, got bool")
    return tensor(x.shape, "int32" if oc.values["out_int32"] else "int64")


register("bucketize", [Param("input_tensor", "tensor"), Param("boundaries", "tensor"),
                       Param("out_int32", "bool", False), Param("right", "bool", False)],
         _bucketize)
