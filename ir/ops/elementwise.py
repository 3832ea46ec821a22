"""Elementwise operators: binary arithmetic, comparisons, bitwise and logical operators with
NumPy broadcasting; unary math and predicates; `where`, `clip` and `astype`.

An operand of a binary operator may be an `R.Prim` scalar (`R.add(x, R.prim_value(...))`), as
TVM's binary operators allow: it broadcasts as a tensor of shape `(1,)` of its dtype
(`operand_sinfo`), so a tensor's shape is kept and a 0-d tensor gives `(1,)`."""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir.dtype import BOOL, INT64
from tirc.ir.expr import IntImm
from tirc.ir.graph import PrimSInfo, StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import Shape, const_dim, dims_match, ndim_of, shape_text

ARITH = ("add", "subtract", "multiply", "divide", "floor_divide", "maximum", "minimum", "power",
         "mod", "floor_mod", "atan2")
COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
LOGICAL = ("logical_and", "logical_or", "logical_xor")
FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "tan", "sinh",
               "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf")
# Rounding: of a float tensor, its intrinsic; of an integer tensor, the tensor (TVM's).
ROUNDING = ("floor", "ceil", "round", "trunc")
ANY_UNARY = ("negative", "abs", "square", "sign", *ROUNDING)
FLOAT_TESTS = ("isnan", "isinf", "isfinite")  # float tensor -> bool tensor
BINARY_OPS = ARITH + COMPARE + BITWISE + LOGICAL
UNARY_OPS = FLOAT_UNARY + ANY_UNARY + FLOAT_TESTS + ("bitwise_not", "logical_not")


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
        elif dims_match(da, db):
            out.append(db if const_dim(da) is None and const_dim(db) is not None else da)
        else:
            oc.error(f"cannot broadcast {shape_text(a)} with {shape_text(b)}")
    return tuple(reversed(out))


def operand_sinfo(oc: OpCall, name: str) -> TensorSInfo:
    """A binary operand's struct info: a tensor's own, an `R.Prim` scalar's as TVM broadcasts
    it (a tensor of shape `(1,)`); two scalars are refused, their result not being a tensor."""
    s = oc.sinfo.get(name)
    if not isinstance(s, PrimSInfo):
        return oc.tensor(name, known_shape=False)
    if all(isinstance(oc.sinfo.get(n), PrimSInfo) for n in ("x1", "x2")):
        oc.error("both operands are R.Prim scalars, whose result is an R.Prim (TVM's), not "
                 "a tensor: not supported yet; make one operand a tensor")
    return TensorSInfo((IntImm(1, INT64),), s.dtype, 1)


def _binary(oc: OpCall) -> StructInfo:
    x1, x2 = operand_sinfo(oc, "x1"), operand_sinfo(oc, "x2")
    if x1.dtype is not None and x2.dtype is not None and x1.dtype != x2.dtype:
        oc.error(f"dtype mismatch: {x1.dtype} and {x2.dtype}")
    dt = x1.dtype if x1.dtype is not None else x2.dtype
    name = oc.op.name
    if name in BITWISE and dt is not None and not dt.is_int:
        oc.error(f"needs integer tensors, got {dt}")
    if name == "atan2" and dt is not None and not dt.is_float:
        oc.error(f"needs float tensors, got {dt}")
    if name in LOGICAL and dt is not None and not dt.is_bool:
        oc.error(f"needs bool tensors, got {dt}")
    if name in COMPARE:
        dt = BOOL
    elif name in ARITH and dt is not None and dt.is_bool and name != "multiply":
        oc.error("arithmetic on bool tensors")  # multiply is `and` (NumPy's, LLVM's i1)
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


def _float_test(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    oc.float_dtype("x")
    return TensorSInfo(s.shape, BOOL, ndim_of(s))


def _of_kind(kind: str) -> Callable[[OpCall], StructInfo]:
    """Unary operators on one kind of tensor: `bitwise_not` on integers, `logical_not` on
    bools."""

    def infer(oc: OpCall) -> StructInfo:
        s = oc.tensor("x", known_shape=False)
        ok = s.dtype is None or (s.dtype.is_int if kind == "integer" else s.dtype.is_bool)
        if not ok:
            oc.error(f"needs {kind} tensors, got {s.dtype}")
        return s

    return infer


def _where(oc: OpCall) -> StructInfo:
    c = oc.tensor("condition", known_shape=False)
    if c.dtype is not None and not c.dtype.is_bool:
        oc.error(f"the condition must be a bool tensor, got {c.dtype}")
    x1, x2 = oc.tensor("x1", known_shape=False), oc.tensor("x2", known_shape=False)
    dt = oc.same_dtype("x1", "x2")
    if c.shape is None or x1.shape is None or x2.shape is None:
        return TensorSInfo(None, dt, max(ndim_of(c), ndim_of(x1), ndim_of(x2)))
    shape = broadcast_shapes(oc, broadcast_shapes(oc, c.shape, x1.shape), x2.shape)
    return TensorSInfo(shape, dt, len(shape))


def _clip(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    if s.dtype is not None and s.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    if oc.values["min"] > oc.values["max"]:
        oc.error(f"min {oc.values['min']} is greater than max {oc.values['max']}")
    return s


def _astype(oc: OpCall) -> StructInfo:
    s = oc.tensor("x", known_shape=False)
    return TensorSInfo(s.shape, oc.values["dtype"], ndim_of(s))


for _name in BINARY_OPS:
    register(_name, [Param("x1", "tensor"), Param("x2", "tensor")], _binary)
for _name in FLOAT_UNARY:
    register(_name, [Param("x", "tensor")], unary_float)
for _name in ANY_UNARY:
    register(_name, [Param("x", "tensor")], unary_any)
for _name in FLOAT_TESTS:
    register(_name, [Param("x", "tensor")], _float_test)
register("bitwise_not", [Param("x", "tensor")], _of_kind("integer"))
register("logical_not", [Param("x", "tensor")], _of_kind("bool"))
register("where", [Param("condition", "tensor"), Param("x1", "tensor"), Param("x2", "tensor")],
         _where)
register("clip", [Param("x", "tensor"), Param("min", "float"), Param("max", "float")], _clip)
register("astype", [Param("x", "tensor"), Param("dtype", "dtype")], _astype)
