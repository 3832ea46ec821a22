"""Legalization of `zeros ones full`: one spatial block storing the fill value."""

from __future__ import annotations

from tirc.ir.expr import const
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.passes.graph.kernel import Kernel
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("zeros", "ones")
def filled(oc: OpCall, out: StructInfo) -> Kernel:
    name = oc.op.name
    k = Kernel(name)
    y = k.output(f"T_{name}", out_tensor(out))
    k.compute(f"T_{name}", y, lambda i: const(1 if name == "ones" else 0, y.dtype))
    return k


@legalizer("full")
def full(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("full")
    fill = k.operand("fill_value", oc.values["fill_value"], oc.tensor("fill_value"))
    y = k.output("T_full", out_tensor(out))
    k.compute("T_full", y, lambda i: fill())
    return k
