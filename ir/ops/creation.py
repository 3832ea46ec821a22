"""Tensor creation: `zeros ones full` of a (possibly symbolic) shape, `zeros_like
ones_like full_like` of another tensor's, `arange`, `tril triu` (a tensor with the
elements above or below a diagonal of its last two axes zeroed), and `one_hot`."""

from __future__ import annotations

import math

from tirc.ir.dtype import dtype
from tirc.ir.expr import PrimExpr, binop
from tirc.ir.graph import PrimSInfo, StructInfo, TensorSInfo
from tirc.ir.ops.manipulation import target_shape
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dim, dim_text, ndim_of, simplify_dim, tensor

Bound = int | float | PrimExpr


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


def _triangle(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    if 0 <= ndim_of(s) < 2:
        oc.error(f"needs a tensor of rank 2 or more, got rank {ndim_of(s)}")
    return s


for _name in ("tril", "triu"):
    register(_name, [Param("x", "tensor"), Param("k", "int", 0)], _triangle)


def _one_hot(oc: OpCall) -> StructInfo:
    """TVM's one_hot: integer indices, on and off values R.Prim scalars of one dtype (the
    result's); the result is the indices' shape with `depth` inserted at `axis`."""
    idx = oc.tensor("indices")
    assert idx.shape is not None
    if idx.dtype is not None and not idx.dtype.is_int:
        oc.error(f"indices must be integers, got {idx.dtype}")
    dts = []
    for name in ("on_value", "off_value"):
        s = oc.sinfo.get(name)
        if not isinstance(s, PrimSInfo) or s.dtype is None:
            oc.error(f"{name} must be a scalar R.prim_value(...) of a known dtype")
        dts.append(s.dtype)
    if dts[0] != dts[1]:
        oc.error(f"on_value and off_value must have the same dtype, got {dts[0]} and {dts[1]}")
    depth = oc.values["depth"]
    if depth <= 0:
        oc.error(f"depth must be positive, got {depth}")
    axis = oc.axis(oc.values["axis"], len(idx.shape) + 1)
    shape = list(idx.shape)
    shape.insert(axis, depth)
    return tensor(shape, dts[0])


register("one_hot", [Param("indices", "tensor"), Param("on_value", "tensor"),
                     Param("off_value", "tensor"), Param("depth", "int"),
                     Param("axis", "int", -1)], _one_hot)



def arange_bounds(values: dict[str, object]) -> tuple[Bound, Bound, Bound]:
    """`R.arange`'s start, end and step as TVM reads them: `arange(n)` is `arange(0, n)`; a
    bound may be a symbolic integer (`R.prim_value(n)`)."""
    start, end, step = values["start"], values["end"], values["step"]
    if end is None:
        start, end = 0, start
    return start, end, step  # type: ignore[return-value]


def _symbolic_length(oc: OpCall, start: Bound, end: Bound, step: Bound) -> PrimExpr:
    """ceildiv(end - start, step), at least 0, of integer bounds one of which is symbolic;
    the step must then be a constant integer."""
    if not isinstance(step, int) or not all(isinstance(v, (int, PrimExpr))
                                            for v in (start, end)):
        got = [dim_text(v) if isinstance(v, PrimExpr) else str(v) for v in (start, end, step)]
        oc.error("with a symbolic bound, start and end must be integers and step a constant "
                 f"integer, got {got[0]}, {got[1]} and {got[2]}")
    span = binop("sub", dim(end), dim(start))
    num = binop("add", span, dim(step - 1 if step > 0 else step + 1))
    return simplify_dim(binop("max", binop("floordiv", num, dim(step)), dim(0)))


def arange_length(start: float, end: float, step: float) -> int:
    """How many values `R.arange` makes: ceil((end - start) / step), at least 0."""
    if all(isinstance(v, int) for v in (start, end, step)):
        return max(0, -((start - end) // step))  # type: ignore[operator]
    return max(0, math.ceil((end - start) / step))


def _arange(oc: OpCall) -> StructInfo:
    start, end, step = arange_bounds(oc.values)
    if isinstance(step, (int, float)) and step == 0:
        oc.error("step must not be 0")
    if any(isinstance(v, PrimExpr) for v in (start, end, step)):
        dt = oc.values["dtype"] or dtype("int64")
        if dt.is_bool:
            oc.error("needs a numeric dtype, got bool")
        return tensor((_symbolic_length(oc, start, end, step),), dt)
    if not all(math.isfinite(v) for v in (start, end, step)):
        oc.error(f"start, end and step must be finite, got {start}, {end} and {step}")
    dt = oc.values["dtype"] or dtype(
        "int64" if all(isinstance(v, int) for v in (start, end, step)) else "float32")
    if dt.is_bool:
        oc.error("needs a numeric dtype, got bool")
    return tensor((arange_length(start, end, step),), dt)


register("arange", [Param("start", "number_or_expr"), Param("end", "number_or_expr", None),
                    Param("step", "number_or_expr", 1), Param("dtype", "dtype", None)], _arange)
