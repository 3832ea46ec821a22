"""Legalization of elementwise operators: one spatial block over the output, with NumPy
broadcasting of each operand (an `R.Prim` operand of a binary operator is a scalar, constant or
a parameter of the kernel)."""

from __future__ import annotations

import math
from collections.abc import Callable

from tirc.ir.expr import Not, PrimExpr, binop, call, cast, const, select
from tirc.ir.graph import PrimSInfo, StructInfo
from tirc.ir.ops.elementwise import FLOAT_UNARY, ROUNDING
from tirc.ir.ops.registry import OpCall
from tirc.passes.graph.kernel import Kernel, Operand
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


def _mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """The remainder with the sign of `a` (C's fmod, NumPy's np.fmod)."""
    return call("fmod", a, b) if a.dtype.is_float else binop("truncmod", a, b)


def _floor_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """The remainder with the sign of `b` (NumPy's np.mod, its float steps: fmod, moved by b
    when the signs differ, a zero taking b's sign)."""
    if not a.dtype.is_int:
        m = call("fmod", a, b)
        zero = const(0.0, a.dtype)
        moved = select(binop("ne", binop("lt", b, zero), binop("lt", m, zero)),
                       binop("add", m, b), m)
        return select(binop("ne", m, zero), moved, call("copysign", zero, b))
    return binop("floormod", a, b)


def _intrinsic2(name: str) -> Binary:
    return lambda a, b: call(name, a, b)


BINARY: dict[str, Binary] = {
    "add": lambda a, b: binop("add", a, b),
    "subtract": lambda a, b: binop("sub", a, b),
    "multiply": lambda a, b: binop("and" if a.dtype.is_bool else "mul", a, b),
    "divide": _divide,
    "floor_divide": _floor_divide,
    "maximum": lambda a, b: binop("max", a, b),
    "minimum": lambda a, b: binop("min", a, b),
    "power": _power,
    "atan2": _intrinsic2("atan2"),
    "equal": lambda a, b: binop("eq", a, b),
    "not_equal": lambda a, b: binop("ne", a, b),
    "less": lambda a, b: binop("lt", a, b),
    "less_equal": lambda a, b: binop("le", a, b),
    "greater": lambda a, b: binop("gt", a, b),
    "greater_equal": lambda a, b: binop("ge", a, b),
    "mod": _mod,
    "floor_mod": _floor_mod,
    "bitwise_and": _intrinsic2("bitwise_and"),
    "bitwise_or": _intrinsic2("bitwise_or"),
    "bitwise_xor": _intrinsic2("bitwise_xor"),
    "left_shift": _intrinsic2("shift_left"),
    "right_shift": _intrinsic2("shift_right"),
    "logical_and": lambda a, b: binop("and", a, b),
    "logical_or": lambda a, b: binop("or", a, b),
    "logical_xor": lambda a, b: binop("ne", a, b),
}


def _abs(x: PrimExpr) -> PrimExpr:
    if x.dtype.is_float:
        return call("abs", x)
    return select(binop("lt", x, const(0, x.dtype)), binop("sub", const(0, x.dtype), x), x)


def _sign(x: PrimExpr) -> PrimExpr:
    """1, -1 or 0 as NumPy's np.sign: a float NaN stays NaN, -0.0 gives 0."""
    one, zero = const(1, x.dtype), const(0, x.dtype)
    if x.dtype.kind == "uint":
        return select(binop("gt", x, zero), one, zero)
    rest = select(binop("eq", x, zero), zero, x) if x.dtype.is_float else zero
    return select(binop("gt", x, zero), one,
                  select(binop("lt", x, zero), const(-1, x.dtype), rest))


def _gelu(x: PrimExpr) -> PrimExpr:
    half, one = const(0.5, x.dtype), const(1.0, x.dtype)
    scaled = binop("mul", x, const(1.0 / math.sqrt(2.0), x.dtype))
    return binop("mul", binop("mul", half, x), binop("add", one, call("erf", scaled)))


def _gelu_tanh(x: PrimExpr) -> PrimExpr:
    """TVM's tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    half, one = const(0.5, x.dtype), const(1.0, x.dtype)
    cube = binop("mul", binop("mul", x, x), x)
    inner = binop("mul", const(math.sqrt(2.0 / math.pi), x.dtype),
                  binop("add", x, binop("mul", const(0.044715, x.dtype), cube)))
    return binop("mul", binop("mul", half, x), binop("add", one, call("tanh", inner)))


def _intrinsic(name: str) -> Callable[[PrimExpr], PrimExpr]:
    return lambda x: call(name, x)


def _rounding(name: str) -> Callable[[PrimExpr], PrimExpr]:
    """floor/ceil/round/trunc: the intrinsic of a float, an integer unchanged (TVM's)."""
    return lambda x: call(name, x) if x.dtype.is_float else x


UNARY: dict[str, Callable[[PrimExpr], PrimExpr]] = {
    **{name: _intrinsic(name) for name in FLOAT_UNARY},
    **{name: _rounding(name) for name in ROUNDING},
    "negative": lambda x: binop("sub", const(0, x.dtype), x),
    "abs": _abs,
    "nn.relu": lambda x: binop("max", x, const(0, x.dtype)),
    "nn.relu6": lambda x: binop("min", binop("max", x, const(0, x.dtype)), const(6, x.dtype)),
    "nn.gelu": _gelu,
    "nn.gelu_tanh": _gelu_tanh,
    "nn.silu": lambda x: binop("mul", x, call("sigmoid", x)),
    "square": lambda x: binop("mul", x, x),
    "sign": _sign,
    "isnan": lambda x: binop("ne", x, x),
    "isinf": lambda x: binop("eq", call("abs", x), const(math.inf, x.dtype)),
    "isfinite": lambda x: binop("lt", call("abs", x), const(math.inf, x.dtype)),
    "bitwise_not": _intrinsic("bitwise_not"),
    "logical_not": lambda x: Not(x),
}


@legalizer(*BINARY)
def binary(oc: OpCall, out: StructInfo) -> Kernel:
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    a, b = (_binary_operand(oc, k, x, n) for x, n in (("x1", "A"), ("x2", "B")))
    c = k.output(f"T_{name}", out_tensor(out))
    fn = BINARY[oc.op.name]
    k.compute(f"T_{name}", c, lambda i: fn(a.at(i, c.shape), b.at(i, c.shape)))
    return k


def _binary_operand(oc: OpCall, k: Kernel, param: str, name: str) -> Operand:
    """A binary operand: a tensor, or an `R.Prim` scalar (folded in, or a scalar parameter)."""
    s = oc.sinfo.get(param)
    if isinstance(s, PrimSInfo):
        return k.scalar_operand(name.lower(), oc.values[param], s.dtype)
    return k.operand(name, oc.values[param], oc.tensor(param))


@legalizer(*UNARY)
def unary(oc: OpCall, out: StructInfo) -> Kernel:
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    c = k.output(f"T_{name}", out_tensor(out))
    fn = UNARY[oc.op.name]
    k.compute(f"T_{name}", c, lambda i: fn(x(*i)))
    return k


@legalizer("where")
def where(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("where")
    c = k.operand("C", oc.values["condition"], oc.tensor("condition"))
    a = k.operand("A", oc.values["x1"], oc.tensor("x1"))
    b = k.operand("B", oc.values["x2"], oc.tensor("x2"))
    y = k.output("T_where", out_tensor(out))
    k.compute("T_where", y, lambda i: select(c.at(i, y.shape), a.at(i, y.shape),
                                             b.at(i, y.shape)))
    return k


@legalizer("clip")
def clip(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("clip")
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_clip", out_tensor(out))
    lo, hi = (const(oc.values[n], y.dtype) for n in ("min", "max"))
    k.compute("T_clip", y, lambda i: binop("min", binop("max", x(*i), lo), hi))
    return k


@legalizer("astype")
def astype(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("astype")
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    c = k.output("T_astype", out_tensor(out))
    k.compute("T_astype", c, lambda i: cast(c.dtype, x(*i)))
    return k
