"""Tensor creation: `zeros ones full` of a (possibly symbolic) shape, and `zeros_like
ones_like full_like` of another tensor's."""

from __future__ import annotations

from tirc.ir.dtype import dtype
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.manipulation import target_shape
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import ndim_of, tensor


def _filled(oc: OpCall) -> StructInfo:
    return tensor(target_shape(oc), oc.values["dtype"])


def _full(oc: OpCall) -> StructInfo:
    fill = oc.sinfo.get("fill_value")
    if not isinstance(fill, TensorSInfo) or ndim_of(fill) != 0:
        oc.error("fill_value must be a scalar (R.const or a 0-d tensor)")
    dt = oc.values["dtype"] or fill.dtype
    return tensor(target_shape(oc), dt)


def _like(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    fill = oc.sinfo.get("fill_value")
    if "fill_value" in oc.values and (not isinstance(fill, TensorSInfo) or ndim_of(fill) != 0):
        oc.error("fill_value must be a scalar (R.const or a 0-d tensor)")
    return TensorSInfo(s.shape, oc.values["dtype"] or s.dtype, ndim_of(s))


for _name in ("zeros_like", "ones_like"):
    register(_name, [Param("x", "tensor"), Param("dtype", "dtype", None)], _like)
register("full_like", [Param("x", "tensor"), Param("fill_value", "scalar"),
                       Param("dtype", "dtype", None)], _like)
for _name in ("zeros", "ones"):
    register(_name, [Param("shape", "shape"), Param("dtype", "dtype", dtype("float32"))],
             _filled)
register("full", [Param("shape", "shape"), Param("fill_value", "scalar"),
                  Param("dtype", "dtype", None)], _full)
