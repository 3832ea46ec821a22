"""Neural-network operators: activations, softmax, layer, RMS, batch and group normalization,
the losses `nll_loss` and `cross_entropy_with_logits`, `dropout` and `pixel_shuffle`."""

from __future__ import annotations

from tirc.ir.expr import binop
from tirc.ir.graph import StructInfo, TupleSInfo
from tirc.ir.ops.elementwise import unary_any, unary_float
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import (
    const_dim,
    dim,
    dim_text,
    dims_match,
    shape_text,
    shapes_match,
    simplify_dim,
    tensor,
)


def _softmax(oc: OpCall) -> StructInfo:
    s = oc.tensor("data", known_shape=False)
    oc.float_dtype("data")
    if s.shape is not None:
        oc.axis(oc.values["axis"], len(s.shape))
    return s


def _check_scale(oc: OpCall, name: str, axes: list[int]) -> None:
    """A scale/shift operand has the shape of the data over the normalized axes."""
    data = oc.tensor("data")
    w = oc.tensor(name)
    assert data.shape is not None and w.shape is not None
    want = tuple(data.shape[a] for a in axes)
    if not shapes_match(w.shape, want):
        oc.error(f"'{name}' must have shape {shape_text(want)} (the normalized axes of "
                 f"{shape_text(data.shape)}), got {shape_text(w.shape)}")


def _norm(oc: OpCall, scales: tuple[str, ...]) -> StructInfo:
    data = oc.tensor("data")
    assert data.shape is not None
    oc.float_dtype("data")
    oc.same_dtype("data", *scales)
    axes = oc.axes(oc.values["axes"], len(data.shape), "axes")
    for name in scales:
        _check_scale(oc, name, axes)
    return data


def _activation(oc: OpCall) -> StructInfo:
    """An elementwise float activation of `data` (with attributes such as `alpha`)."""
    s = oc.tensor("data", known_shape=False)
    oc.float_dtype("data")
    return s


def _prelu(oc: OpCall) -> StructInfo:
    data = oc.tensor("data")
    assert data.shape is not None
    oc.float_dtype("data")
    oc.same_dtype("data", "alpha")
    axis = oc.axis(oc.values["axis"], len(data.shape))
    alpha = oc.tensor("alpha")
    assert alpha.shape is not None
    if len(alpha.shape) != 1 or not dims_match(alpha.shape[0], data.shape[axis]):
        oc.error(f"'alpha' must have shape {shape_text((data.shape[axis],))} (axis {axis} of "
                 f"{shape_text(data.shape)}), got {shape_text(alpha.shape)}")
    return data


BATCH_NORM_STATS = ("gamma", "beta", "moving_mean", "moving_var")


def _batch_norm(oc: OpCall) -> StructInfo:
    data = oc.tensor("data")
    assert data.shape is not None
    oc.float_dtype("data")
    oc.same_dtype("data", *BATCH_NORM_STATS)
    axis = oc.axis(oc.values["axis"], len(data.shape))
    for name in BATCH_NORM_STATS:
        _check_scale(oc, name, [axis])
    momentum = oc.values["momentum"]
    if not 0 <= momentum <= 1:
        oc.error(f"momentum must be within [0, 1], got {momentum}")
    stats = oc.tensor("moving_mean")
    return TupleSInfo((data, stats, oc.tensor("moving_var")))


for _name in ("nn.gelu", "nn.gelu_tanh", "nn.silu"):
    register(_name, [Param("x", "tensor")], unary_float)
register("nn.relu", [Param("x", "tensor")], unary_any)
register("nn.relu6", [Param("x", "tensor")], unary_any)  # TVM's: clip(x, 0, 6)
register("nn.leakyrelu", [Param("data", "tensor"), Param("alpha", "float", 0.01)], _activation)
register("nn.softplus", [Param("data", "tensor"), Param("beta", "float", 1.0),
                         Param("threshold", "float", 20.0)], _activation)
register("nn.selu", [Param("data", "tensor")], _activation)
register("nn.prelu", [Param("data", "tensor"), Param("alpha", "tensor"), Param("axis", "int", 1)],
         _prelu)
register("nn.batch_norm", [Param("data", "tensor"), Param("gamma", "tensor"),
                           Param("beta", "tensor"), Param("moving_mean", "tensor"),
                           Param("moving_var", "tensor"), Param("axis", "int"),
                           Param("epsilon", "float", 1e-5), Param("center", "bool", True),
                           Param("scale", "bool", True), Param("momentum", "float", 0.1),
                           Param("training", "bool", True)], _batch_norm)
for _name in ("nn.softmax", "nn.log_softmax"):
    register(_name, [Param("data", "tensor"), Param("axis", "int", -1)], _softmax)
register("nn.layer_norm", [Param("data", "tensor"), Param("gamma", "tensor"),
                           Param("beta", "tensor"), Param("axes", "ints", (-1,)),
                           Param("epsilon", "float", 1e-5), Param("center", "bool", True),
                           Param("scale", "bool", True)],
         lambda oc: _norm(oc, ("gamma", "beta")))
register("nn.rms_norm", [Param("data", "tensor"), Param("weight", "tensor"),
                         Param("axes", "ints", (-1,)), Param("epsilon", "float", 1e-5)],
         lambda oc: _norm(oc, ("weight",)))


def group_norm_axes(oc: OpCall) -> tuple[int, list[int], int]:
    """The channel axis, the other normalized axes and the channels per group; an error for a
    channel axis among `axes`, a symbolic channel count or one `num_groups` does not divide.
    `nn.instance_norm` is the group norm with one group per channel."""
    data = oc.tensor("data")
    assert data.shape is not None
    nd = len(data.shape)
    channel = oc.axis(oc.values["channel_axis"], nd, "channel_axis")
    axes = oc.axes(oc.values["axes"], nd, "axes")
    if channel in axes:
        oc.error(f"channel_axis {oc.values['channel_axis']} must not be among the axes "
                 f"{tuple(oc.values['axes'])}")
    channels = const_dim(data.shape[channel])
    groups = oc.values.get("num_groups", channels)
    if groups is not None and groups < 1:
        oc.error(f"num_groups must be positive, got {groups}")
    if channels is None:
        oc.error(f"the channel axis {channel} has the symbolic size "
                 f"{dim_text(data.shape[channel])}; {oc.op.name[3:]} needs a constant number "
                 "of channels")
    if channels % groups:
        oc.error(f"{channels} channels (axis {channel}) do not split into {groups} groups")
    return channel, axes, channels // groups


def _group_norm(oc: OpCall) -> StructInfo:
    data = oc.tensor("data")
    assert data.shape is not None
    oc.float_dtype("data")
    oc.same_dtype("data", "gamma", "beta")
    channel, _, _ = group_norm_axes(oc)
    for name in ("gamma", "beta"):
        _check_scale(oc, name, [channel])
    return data


NLL_REDUCTIONS = ("none", "mean", "sum")


def _nll_loss(oc: OpCall) -> StructInfo:
    """predictions (C,), (N, C) or (N, C, d1, ...); targets the same without C, integers;
    weights (C,); the loss per target (`none`) or their weighted mean or sum."""
    pred, targets = oc.tensor("predictions"), oc.tensor("targets")
    assert pred.shape is not None and targets.shape is not None
    dt = oc.float_dtype("predictions")
    if targets.dtype is not None and not targets.dtype.is_int:
        oc.error(f"targets must be integers, got {targets.dtype}")
    reduction = oc.values["reduction"]
    if reduction not in NLL_REDUCTIONS:
        oc.error(f"reduction must be one of {', '.join(NLL_REDUCTIONS)}, got '{reduction}'")
    if not pred.shape:
        oc.error("predictions need at least one axis (the classes), got a 0-d tensor")
    want = pred.shape[:1] + pred.shape[2:] if len(pred.shape) > 1 else ()
    if not shapes_match(targets.shape, want):
        oc.error(f"targets must have shape {shape_text(want)} (the predictions "
                 f"{shape_text(pred.shape)} without the class axis), got "
                 f"{shape_text(targets.shape)}")
    if oc.values["weights"] is not None:
        oc.same_dtype("predictions", "weights")
        w = oc.tensor("weights")
        assert w.shape is not None
        classes = pred.shape[1 if len(pred.shape) > 1 else 0]
        if len(w.shape) != 1 or not dims_match(w.shape[0], classes):
            oc.error(f"weights must have shape {shape_text((classes,))} (one per class), got "
                     f"{shape_text(w.shape)}")
    return tensor(targets.shape if reduction == "none" else (), dt)


def _cross_entropy(oc: OpCall) -> StructInfo:
    pred, labels = oc.tensor("predictions"), oc.tensor("labels")
    assert pred.shape is not None and labels.shape is not None
    dt = oc.float_dtype("predictions")
    oc.same_dtype("predictions", "labels")
    if not shapes_match(pred.shape, labels.shape):
        oc.error(f"predictions {shape_text(pred.shape)} and labels {shape_text(labels.shape)} "
                 "must have the same shape")
    return tensor((), dt)


register("nn.group_norm", [Param("data", "tensor"), Param("gamma", "tensor"),
                           Param("beta", "tensor"), Param("num_groups", "int"),
                           Param("channel_axis", "int"), Param("axes", "ints"),
                           Param("epsilon", "float", 1e-5), Param("center", "bool", True),
                           Param("scale", "bool", True)], _group_norm)
register("nn.instance_norm", [Param("data", "tensor"), Param("gamma", "tensor"),
                              Param("beta", "tensor"), Param("channel_axis", "int", 1),
                              Param("axes", "ints"), Param("epsilon", "float", 1e-5),
                              Param("center", "bool", True), Param("scale", "bool", True)],
         _group_norm)
register("nn.nll_loss", [Param("predictions", "tensor"), Param("targets", "tensor"),
                         Param("weights", "tensor", None), Param("reduction", "str", "mean"),
                         Param("ignore_index", "int", -100)], _nll_loss)
register("nn.cross_entropy_with_logits", [Param("predictions", "tensor"),
                                          Param("labels", "tensor")], _cross_entropy)


def _dropout(oc: OpCall) -> StructInfo:
    """TVM's dropout: a tuple (output, mask), both of the data's struct info; the rate is a
    probability in [0, 1] (PyTorch's bound; TVM reads it only when training)."""
    x = oc.tensor("data", known_shape=False)
    rate = oc.values["rate"]
    if not 0 <= rate <= 1:
        oc.error(f"rate must be within [0, 1], got {rate}")
    return TupleSInfo((x, x))


def _pixel_shuffle(oc: OpCall) -> StructInfo:
    """TVM's pixel_shuffle: (..., C * r * r, H, W) -> (..., C, H * r, W * r), the channel
    axis third from the end."""
    x = oc.tensor("data")
    assert x.shape is not None
    if len(x.shape) < 3:
        oc.error(f"data must have at least 3 axes (..., C, H, W), got {shape_text(x.shape)}")
    r = oc.values["upscale_factor"]
    if r <= 0:
        oc.error(f"upscale_factor must be positive, got {r}")
    c, h, w = x.shape[-3:]
    n = const_dim(c)
    if n is not None and n % (r * r):
        oc.error(f"the channels {n} of {shape_text(x.shape)} must be divisible by "
                 f"upscale_factor squared ({r * r})")
    scale = dim(r)
    out = (simplify_dim(binop("floordiv", c, dim(r * r))), simplify_dim(binop("mul", h, scale)),
           simplify_dim(binop("mul", w, scale)))
    return tensor((*x.shape[:-3], *out), x.dtype)


register("nn.dropout", [Param("data", "tensor"), Param("rate", "float", 0.5)], _dropout)
register("nn.pixel_shuffle", [Param("data", "tensor"), Param("upscale_factor", "int")],
         _pixel_shuffle)
