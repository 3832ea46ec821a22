"""Legalization of `R.quantize` and `R.dequantize` as TVM's: one elementwise block; `scale` and
`zero_point` read at the element's position along `axis` (or folded in when constants)."""

from __future__ import annotations

from tirc.ir.dtype import FLOAT32, INT32
from tirc.ir.expr import PrimExpr, binop, call, cast, const
from tirc.ir.graph import StructInfo
from tirc.ir.ops.quantize import qdq_axis
from tirc.ir.ops.registry import OpCall
from tirc.passes.graph.kernel import Indices, Kernel, Operand, limit
from tirc.passes.graph.legalize_table import legalizer, out_tensor


def _operands(oc: OpCall, k: Kernel) -> tuple[Operand, Operand, Operand]:
    return (k.operand("A", oc.values["data"], oc.tensor("data")),
            k.operand("B", oc.values["scale"], oc.tensor("scale")),
            k.operand("C", oc.values["zero_point"], oc.tensor("zero_point")))


def _at(op: Operand, i: Indices, axis: int) -> PrimExpr:
    """A scalar's value, or a per-axis tensor's at the element's position along `axis`."""
    return op(i[axis]) if op.shape else op()


@legalizer("quantize")
def quantize(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("quantize")
    a, b, c = _operands(oc, k)
    y = k.output("quantized", out_tensor(out))
    axis = qdq_axis(oc)
    dt = a.dtype
    lo, hi = (cast(dt, limit(y.dtype, highest)) for highest in (False, True))

    def value(i: Indices) -> PrimExpr:
        q = binop("add", call("round", binop("div", a(*i), cast(dt, _at(b, i, axis)))),
                  cast(dt, _at(c, i, axis)))
        return cast(y.dtype, binop("max", binop("min", q, hi), lo))

    k.compute("quantized", y, value)
    return k


@legalizer("dequantize")
def dequantize(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("dequantize")
    a, b, c = _operands(oc, k)
    y = k.output("dequantized", out_tensor(out))
    axis = qdq_axis(oc)

    def value(i: Indices) -> PrimExpr:
        shifted = binop("sub", cast(INT32, a(*i)), cast(INT32, _at(c, i, axis)))
        v = binop("mul", cast(FLOAT32, shifted), cast(FLOAT32, _at(b, i, axis)))
        if y.dtype == FLOAT32:
            return v
        top = const(65504.0, FLOAT32)
        return cast(y.dtype, binop("max", binop("min", v, top), const(-65504.0, FLOAT32)))

    k.compute("dequantized", y, value)
    return k
