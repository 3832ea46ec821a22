"""Transposed convolution over 1 or 2 spatial axes (`nn.conv1d_transpose`,
`nn.conv2d_transpose`), with TVM Relax's attributes and layouts.

The weight's `I` axis is the data's channels and its `O` axis the output channels of one group
(TVM's `IOW`/`IOHW`); the result has `O * groups` channels. Along a spatial axis the output
size is `(in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + output_padding + 1`,
and input position `i`, tap `t` add into output position `i * stride - pad_before +
t * dilation`. `output_padding` must be smaller than the stride, as TVM requires. Layouts are
any order of the letters, as for `nn.conv*d`.
"""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.conv import (
    SPATIAL,
    arrange,
    conv_operands,
    data_axes,
    layout_axes,
    output_layout,
    padding,
    per_axis,
)
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import (
    const_dim,
    dim,
    dim_text,
    dims_match,
    simplify_dim,
)


@dataclass(frozen=True)
class TransposeGeometry:
    """The attributes of a transposed convolution per spatial axis (in `D H W` order)."""

    kernel: tuple[PrimExpr, ...]
    strides: tuple[int, ...]
    dilation: tuple[int, ...]
    pad_before: tuple[int, ...]
    pad_after: tuple[int, ...]
    output_padding: tuple[int, ...]

    def out_size(self, k: int, size: PrimExpr) -> PrimExpr:
        """The output size along spatial axis `k` of an input of `size`."""
        grown = binop("mul", binop("sub", size, dim(1)), dim(self.strides[k]))
        span = binop("mul", dim(self.dilation[k]), binop("sub", self.kernel[k], dim(1)))
        extra = self.output_padding[k] + 1 - self.pad_before[k] - self.pad_after[k]
        return simplify_dim(binop("add", binop("add", grown, span), dim(extra)))


def output_padding(oc: OpCall, rank: int, strides: tuple[int, ...]) -> tuple[int, ...]:
    """`output_padding` per spatial axis: non-negative and smaller than the stride."""
    values = oc.values["output_padding"]
    values = (values,) if isinstance(values, int) else tuple(values)
    if len(values) == 1:
        values = values * rank
    if len(values) != rank:
        oc.error(f"'output_padding' needs 1 or {rank} values, got {len(values)}")
    if any(v < 0 for v in values):
        oc.error(f"'output_padding' must not be negative, got {values}")
    if any(p >= s for p, s in zip(values, strides)):
        oc.error(f"'output_padding' {values} must be smaller than the strides {strides}")
    return values


def transpose_geometry(oc: OpCall, rank: int) -> TransposeGeometry:
    """The geometry of a transposed convolution call (kernel sizes from the weight)."""
    weight = oc.tensor("weight")
    assert weight.shape is not None
    kaxes = layout_axes(oc, "kernel_layout", "IO" + SPATIAL[rank])
    before, after = padding(oc, rank)
    strides = per_axis(oc, "strides", rank)
    return TransposeGeometry(tuple(weight.shape[kaxes[c]] for c in SPATIAL[rank]), strides,
                             per_axis(oc, "dilation", rank), before, after,
                             output_padding(oc, rank, strides))


def _conv_transpose(oc: OpCall, rank: int) -> StructInfo:
    data, weight = oc.tensor("data"), oc.tensor("weight")
    assert data.shape is not None and weight.shape is not None
    dt = conv_operands(oc, rank)
    groups = oc.values["groups"]
    daxes = data_axes(oc, "data_layout", rank)
    kaxes = layout_axes(oc, "kernel_layout", "IO" + SPATIAL[rank])
    geo = transpose_geometry(oc, rank)
    channels = data.shape[daxes["C"]]
    in_channels = weight.shape[kaxes["I"]]
    if not dims_match(channels, in_channels):
        oc.error(f"the data has {dim_text(channels)} channels; the weight takes "
                 f"{dim_text(in_channels)} (its I axis)")
    ic = const_dim(in_channels)
    if ic is not None and ic % groups:
        oc.error(f"{ic} input channels do not divide into {groups} groups")
    sizes = {"N": data.shape[daxes["N"]],
             "C": simplify_dim(binop("mul", weight.shape[kaxes["O"]], dim(groups)))}
    for k, c in enumerate(SPATIAL[rank]):
        size = geo.out_size(k, data.shape[daxes[c]])
        value = const_dim(size)
        if value is not None and value < 1:
            oc.error(f"the padding leaves no output along axis {c}: {value} positions")
        sizes[c] = size
    shape = arrange(output_layout(oc, "data_layout", rank), sizes)
    return TensorSInfo(shape, dt, len(shape))


for _rank in (1, 2):
    _sp = SPATIAL[_rank]
    register(f"nn.conv{_rank}d_transpose", [
        Param("data", "tensor"), Param("weight", "tensor"), Param("strides", "ints", (1,)),
        Param("padding", "ints", (0,)), Param("output_padding", "ints", (0,)),
        Param("dilation", "ints", (1,)), Param("groups", "int", 1),
        Param("data_layout", "str", "NC" + _sp), Param("kernel_layout", "str", "IO" + _sp),
        Param("out_layout", "str", None), Param("out_dtype", "dtype", None)],
        lambda oc, r=_rank: _conv_transpose(oc, r))
