"""Elementwise operators: binary arithmetic and comparisons with NumPy broadcasting, unary math,
and `astype`."""

from __future__ import annotations

from tirc.ir.dtype import BOOL
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import Shape, const_dim, dims_equal, ndim_of, shape_text

ARITH = ("add", "subtract", "multiply", "divide", "floor_divide", "maximum", "minimum", "power")
COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid")
ANY_UNARY = ("negative", "abs")


def broadcast_shapes(oc: OpCall, a: Shape, b: Shape) -> Shape:
    """NumPy broadcasting of two shapes; symbolic dimensions must be provably equal (or 1)."""
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        da = a[-k] if k <= len(a) else None
        db = b[-k] if k <= len(b) else None
        if da is None or db is None:
            out.append(da if db is None else db)
        elif const_dim(da) == 1:
            out.append(db)
        elif const_dim(db) == 1:
            out.append(da)
        elif dims_equal(da, db):
            out.append(db if const_dim(da) is None and const_dim(db) is not None else da)
        else:
            oc.error(f"cannot broadcast {shape_text(a)} with {shape_text(b)}")
    return tuple(reversed(out))


def _binary(oc: OpCall) -> StructInfo:
    x1, x2 = oc.tensor("x1", known_shape=False), oc.tensor("x2", known_shape=False)
    dt = oc.same_dtype("x1", "x2")
    if oc.op.name in COMPARE:
        dt = BOOL
    elif dt is not None and dt.is_bool:
        oc.error("arithmetic on bool tensors")
    if x1.shape is None or x2.shape is None:
        n1, n2 = ndim_of(x1), ndim_of(x2)
        return TensorSInfo(None, dt, max(n1, n2) if n1 >= 0 and n2 >= 0 else -1)
    shape = broadcast_shapes(oc, x1.shape, x2.shape)
    return TensorSInfo(shape, dt, len(shape))


def unary_float(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    oc.float_dtype("x")
    return s


def unary_any(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    if s.dtype is not None and s.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    return s


def _astype(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    return TensorSInfo(s.shape, oc.values["dtype"], ndim_of(s))


for _name in ARITH + COMPARE:
    register(_name, [Param("x1", "tensor"), Param("x2", "tensor")], _binary)
for _name in FLOAT_UNARY:
    register(_name, [Param("x", "tensor")], unary_float)
for _name in ANY_UNARY:
    register(_name, [Param("x", "tensor")], unary_any)
register("astype", [Param("x", "tensor"), Param("dtype", "dtype")], _astype)
