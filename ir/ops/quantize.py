"""`R.quantize` and `R.dequantize` (TVM's QDQ operators): per-axis affine quantization.

`quantize(data, scale, zero_point, axis=-1, out_dtype="int8")` is
`clip(round(data / scale) + zero_point, qmin, qmax)` cast to `out_dtype`, computed in the
data's float type (`round` ties to even); `dequantize(data, scale, zero_point, axis=-1,
out_dtype="float32")` is `float32(int32(data) - int32(zero_point)) * float32(scale)`, clipped
to the float16 range before a float16 result. `scale` and `zero_point` are scalars (0-d
tensors, `R.const`) or 1-d tensors with one value per position along `axis`.
"""

from __future__ import annotations

from tirc.ir.dtype import DType, dtype
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dim_text, dims_match, shape_text, tensor


def qdq_axis(oc: OpCall) -> int:
    """The data axis that `scale` and `zero_point` run along."""
    data = oc.tensor("data")
    assert data.shape is not None
    return oc.axis(oc.values["axis"], len(data.shape))


def _per_axis(oc: OpCall, name: str) -> TensorSInfo:
    """`scale` or `zero_point`: a scalar, or one value per position along the axis."""
    data, s = oc.tensor("data"), oc.tensor(name)
    assert data.shape is not None and s.shape is not None
    if len(s.shape) > 1:
        oc.error(f"'{name}' must be a scalar or 1-d, got {shape_text(s.shape)}")
    if len(s.shape) == 1:
        size = data.shape[qdq_axis(oc)]
        if not dims_match(s.shape[0], size):
            oc.error(f"'{name}' has {dim_text(s.shape[0])} values; axis "
                     f"{oc.values['axis']} of {shape_text(data.shape)} has {dim_text(size)}")
    return s


def _kinds(oc: OpCall, data_kind: str, out: DType) -> None:
    """The data, scale, zero point and result dtypes each of its kind."""
    data, scale, zp = oc.tensor("data"), _per_axis(oc, "scale"), _per_axis(oc, "zero_point")
    want_float = data_kind == "float"
    if data.dtype is not None and (data.dtype.is_float != want_float or data.dtype.is_bool):
        oc.error(f"'data' must be a {data_kind} tensor, got {data.dtype}")
    if scale.dtype is not None and not scale.dtype.is_float:
        oc.error(f"'scale' must be a float tensor, got {scale.dtype}")
    if zp.dtype is not None and (zp.dtype.is_float or zp.dtype.is_bool):
        oc.error(f"'zero_point' must be an integer tensor, got {zp.dtype}")
    if out.is_float == want_float or out.is_bool:
        kind = "an integer" if want_float else "a float"
        oc.error(f"out_dtype must be {kind} type, got {out}")


def _out(oc: OpCall) -> DType:
    """The result dtype (`out_dtype`; its default is a name)."""
    return dtype(str(oc.values["out_dtype"]))


def _quantize(oc: OpCall) -> StructInfo:
    out = _out(oc)
    _kinds(oc, "float", out)
    data = oc.tensor("data")
    return tensor(data.shape, out)


def _dequantize(oc: OpCall) -> StructInfo:
    out = _out(oc)
    _kinds(oc, "integer", out)
    if str(out) not in ("float16", "float32"):
        oc.error(f"out_dtype must be float16 or float32, got {out}")
    data = oc.tensor("data")
    return tensor(data.shape, out)


_PARAMS = [Param("data", "tensor"), Param("scale", "tensor"), Param("zero_point", "tensor"),
           Param("axis", "int", -1)]
register("quantize", [*_PARAMS, Param("out_dtype", "dtype", "int8")], _quantize)
register("dequantize", [*_PARAMS, Param("out_dtype", "dtype", "float32")], _dequantize)
