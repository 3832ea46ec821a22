"""Neural-network operators: activations, softmax, layer and RMS normalization."""

from __future__ import annotations

from tirc.ir.graph import StructInfo
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


for _name in ("nn.gelu", "nn.silu"):
    register(_name, [Param("x", "tensor")], unary_float)
register("nn.relu", [Param("x", "tensor")], unary_any)
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
