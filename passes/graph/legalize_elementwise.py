"""Legalization of elementwise operators: one spatial block over the output, with NumPy
broadcasting of each operand."""

from __future__ import annotations

import math
from collections.abc import Callable

from tirc.ir.expr import PrimExpr, binop, call, cast, const, select
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.passes.graph.kernel import Kernel
from tirc.passes.graph.legalize_table import kernel_name, legalizer, out_tensor

Binary = Callable[[PrimExpr, PrimExpr], PrimExpr]


def _divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return binop("div" if a.dtype.is_float else "truncdiv", a, b)


def _floor_divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return call("floor", binop("div", a, b)) if a.dtype.is_float else binop("floordiv", a, b)


def _power(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if a.dtype.is_float:
        return call("pow", a, b)
    wide = "float64"
    return cast(a.dtype, call("pow", cast(wide, a), cast(wide, b)))


BINARY: dict[str, Binary] = {
    "add": lambda a, b: binop("add", a, b),
    "subtract": lambda a, b: binop("sub", a, b),
    "multiply": lambda a, b: binop("mul", a, b),
    "divide": _divide,
    "floor_divide": _floor_divide,
    "maximum": lambda a, b: binop("max", a, b),
    "minimum": lambda a, b: binop("min", a, b),
    "power": _power,
    "equal": lambda a, b: binop("eq", a, b),
    "not_equal": lambda a, b: binop("ne", a, b),
    "less": lambda a, b: binop("lt", a, b),
    "less_equal": lambda a, b: binop("le", a, b),
    "greater": lambda a, b: binop("gt", a, b),
    "greater_equal": lambda a, b: binop("ge", a, b),
}


def _abs(x: PrimExpr) -> PrimExpr:
    if x.dtype.is_float:
        return call("abs", x)
    return select(binop("lt", x, const(0, x.dtype)), binop("sub", const(0, x.dtype), x), x)


def _gelu(x: PrimExpr) -> PrimExpr:
    half, one = const(0.5, x.dtype), const(1.0, x.dtype)
    scaled = binop("mul", x, const(1.0 / math.sqrt(2.0), x.dtype))
    return binop("mul", binop("mul", half, x), binop("add", one, call("erf", scaled)))


def _intrinsic(name: str) -> Callable[[PrimExpr], PrimExpr]:
    return lambda x: call(name, x)


UNARY: dict[str, Callable[[PrimExpr], PrimExpr]] = {
    **{name: _intrinsic(name) for name in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid")},
    "negative": lambda x: binop("sub", const(0, x.dtype), x),
    "abs": _abs,
    "nn.relu": lambda x: binop("max", x, const(0, x.dtype)),
    "nn.gelu": _gelu,
    "nn.silu": lambda x: binop("mul", x, call("sigmoid", x)),
}


@legalizer(*BINARY)
def binary(oc: OpCall, out: StructInfo) -> Kernel:
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    a = k.operand("A", oc.values["x1"], oc.tensor("x1"))
    b = k.operand("B", oc.values["x2"], oc.tensor("x2"))
    c = k.output(f"T_{name}", out_tensor(out))
    fn = BINARY[oc.op.name]
    k.compute(f"T_{name}", c, lambda i: fn(a.at(i, c.shape), b.at(i, c.shape)))
    return k


@legalizer(*UNARY)
def unary(oc: OpCall, out: StructInfo) -> Kernel:
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    c = k.output(f"T_{name}", out_tensor(out))
    fn = UNARY[oc.op.name]
    k.compute(f"T_{name}", c, lambda i: fn(x(*i)))
    return k


@legalizer("astype")
def astype(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("astype")
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    c = k.output("T_astype", out_tensor(out))
    k.compute("T_astype", c, lambda i: cast(c.dtype, x(*i)))
    return k
