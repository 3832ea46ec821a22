"""Neural-network operators: activations, softmax, layer, RMS and batch normalization."""

from __future__ import annotations

from tirc.ir.graph import StructInfo, TupleSInfo
from tirc.ir.ops.elementwise import unary_any, unary_float
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dims_equal, shape_text


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
    if len(w.shape) != len(want) or not all(dims_equal(x, y) for x, y in zip(w.shape, want)):
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
    if len(alpha.shape) != 1 or not dims_equal(alpha.shape[0], data.shape[axis]):
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
