"""Tensor creation: `zeros ones full` of a (possibly symbolic) shape."""

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


for _name in ("zeros", "ones"):
    register(_name, [Param("shape", "shape"), Param("dtype", "dtype", dtype("float32"))],
             _filled)
register("full", [Param("shape", "shape"), Param("fill_value", "scalar"),
                  Param("dtype", "dtype", None)], _full)
