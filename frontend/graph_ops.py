"""How graph-level operator calls map positional arguments: operands vs attributes.

`R.sum(x, 1, True)` and `R.sum(x, axis=1, keepdims=True)` build the same GCall: the first
`operands` positional arguments are graph values, the rest are attributes named in order.
Operators not listed here take every positional argument as an operand; keyword arguments
are always attributes (except `out_sinfo`). Shape inference of these operators comes with the
graph-level issue; this table only fixes their printed form.
"""

from __future__ import annotations

from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.elementwise import BINARY_OPS, UNARY_OPS


@dataclass(frozen=True)
class OpSig:
    operands: int
    attrs: tuple[str, ...] = ()


_UNARY = (*UNARY_OPS, "nn.relu", "nn.relu6", "nn.gelu", "nn.gelu_tanh", "nn.silu")
_BINARY = BINARY_OPS
_REDUCE = ("sum", "mean", "max", "min", "prod", "variance", "std", "argmax", "argmin")

OP_SIGNATURES: dict[str, OpSig] = {
    **{op: OpSig(1) for op in _UNARY},
    **{op: OpSig(2) for op in _BINARY},
    **{op: OpSig(1, ("axis", "keepdims")) for op in _REDUCE},
    "matmul": OpSig(2, ("out_dtype",)),
    "topk": OpSig(1, ("k", "axis", "ret_type", "largest", "dtype")),
    "bucketize": OpSig(2, ("out_int32", "right")),
    "einsum": OpSig(1, ("subscripts",)),
    "sparse.matmul": OpSig(2, ("out_dtype",)),
    "nn.softmax": OpSig(1, ("axis",)),
    "nn.log_softmax": OpSig(1, ("axis",)),
    "nn.layer_norm": OpSig(3, ("axes", "epsilon", "center", "scale")),
    "nn.rms_norm": OpSig(2, ("axes", "epsilon")),
    "nn.batch_norm": OpSig(5, ("axis", "epsilon", "center", "scale", "momentum", "training")),
    "nn.group_norm": OpSig(3, ("num_groups", "channel_axis", "axes", "epsilon", "center",
                               "scale")),
    "nn.instance_norm": OpSig(3, ("channel_axis", "axes", "epsilon", "center", "scale")),
    "nn.nll_loss": OpSig(3, ("reduction", "ignore_index")),
    "nn.cross_entropy_with_logits": OpSig(2),
    "nn.leakyrelu": OpSig(1, ("alpha",)),
    "nn.softplus": OpSig(1, ("beta", "threshold")),
    "nn.selu": OpSig(1),
    "nn.prelu": OpSig(2, ("axis",)),
    "quantize": OpSig(3, ("axis", "out_dtype")),
    "dequantize": OpSig(3, ("axis", "out_dtype")),
    "reshape": OpSig(2),
    "layout_transform": OpSig(1, ("index_map", "pad_value", "axis_separators",
                                  "input_axis_separators")),
    "flatten": OpSig(1),
    "permute_dims": OpSig(1, ("axes",)),
    "expand_dims": OpSig(1, ("axis",)),
    "squeeze": OpSig(1, ("axis",)),
    "concat": OpSig(1, ("axis",)),
    "split": OpSig(1, ("indices_or_sections", "axis")),
    "take": OpSig(2, ("axis", "mode")),
    "scatter_elements": OpSig(3, ("axis", "reduction")),
    "gather_elements": OpSig(2, ("axis",)),
    "gather_nd": OpSig(2, ("batch_dims",)),
    "scatter_nd": OpSig(3, ("reduction",)),
    "index_tensor": OpSig(2),
    "dynamic_strided_slice": OpSig(4),
    "nn.dropout": OpSig(1, ("rate",)),
    "nn.pixel_shuffle": OpSig(1, ("upscale_factor",)),
    "one_hot": OpSig(3, ("depth", "axis")),
    "broadcast_to": OpSig(2),
    "collapse_sum_like": OpSig(2),
    "collapse_sum_to": OpSig(2),
    "astype": OpSig(1, ("dtype",)),
    "arange": OpSig(0, ("start", "end", "step", "dtype")),
    "zeros": OpSig(1, ("dtype",)),
    "ones": OpSig(1, ("dtype",)),
    "full": OpSig(2, ("dtype",)),
    "full_like": OpSig(2, ("dtype",)),
    "zeros_like": OpSig(1, ("dtype",)),
    "ones_like": OpSig(1, ("dtype",)),
    "where": OpSig(3),
    "strided_slice": OpSig(1, ("axes", "begin", "end", "strides", "assume_inbound")),
    "slice_scatter": OpSig(2, ("start", "end", "step", "axis")),
    "flip": OpSig(1, ("axis",)),
    "tril": OpSig(1, ("k",)),
    "triu": OpSig(1, ("k",)),
    "tile": OpSig(1, ("repeats",)),
    "repeat": OpSig(1, ("repeats", "axis")),
    "nn.pad": OpSig(1, ("pad_width", "pad_mode", "pad_value")),
    "cumsum": OpSig(1, ("axis", "dtype", "exclusive")),
    "cumprod": OpSig(1, ("axis", "dtype", "exclusive")),
    "clip": OpSig(1, ("min", "max")),
    **{f"nn.conv{r}d": OpSig(2, ("strides", "padding", "dilation", "groups", "data_layout",
                                 "kernel_layout", "out_layout", "out_dtype")) for r in (1, 2, 3)},
    **{f"nn.{kind}_pool{r}d": OpSig(1, ("pool_size", "strides", "padding", "dilation",
                                        "ceil_mode", "count_include_pad", "layout",
                                        "out_layout"))
       for r in (1, 2, 3) for kind in ("max", "avg")},
    **{f"nn.adaptive_avg_pool{r}d": OpSig(1, ("output_size", "layout", "out_layout"))
       for r in (1, 2, 3)},
    **{f"nn.conv{r}d_transpose": OpSig(2, ("strides", "padding", "output_padding", "dilation",
                                           "groups", "data_layout", "kernel_layout",
                                           "out_layout", "out_dtype")) for r in (1, 2)},
    "nn.attention": OpSig(4, ("scale", "causal_mask", "window_size")),
    "image.affine_grid": OpSig(2, ("align_corners",)),
    **{f"image.resize{r}d": OpSig(2, ("roi", "layout", "method",
                                      "coordinate_transformation_mode", "rounding_method",
                                      "cubic_alpha", "cubic_exclude", "extrapolation_value",
                                      "out_dtype")) for r in (2, 3)},
}
