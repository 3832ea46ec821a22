"""Legalization of `zeros ones full` and their `_like` forms: one spatial block storing the
fill value (a `_like` kernel reads nothing of the tensor it takes its shape from); `arange`:
one block storing `start + step * i`."""

from __future__ import annotations

from tirc.ir.dtype import INT64, dtype
from tirc.ir.expr import cast, const
from tirc.ir.graph import StructInfo
from tirc.ir.ops.creation import arange_bounds
from tirc.ir.ops.registry import OpCall
from tirc.passes.graph.kernel import Kernel
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("zeros", "ones", "zeros_like", "ones_like")
def filled(oc: OpCall, out: StructInfo) -> Kernel:
    name = oc.op.name
    k = Kernel(name)
    y = k.output(f"T_{name}", out_tensor(out))
    k.compute(f"T_{name}", y, lambda i: const(1 if name.startswith("ones") else 0, y.dtype))
    return k


@legalizer("full", "full_like")
def full(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel(oc.op.name)
    fill = k.operand("fill_value", oc.values["fill_value"], oc.tensor("fill_value"))
    y = k.output("T_full", out_tensor(out))
    k.compute("T_full", y, lambda i: cast(y.dtype, fill()))
    return k


@legalizer("arange")
def arange(oc: OpCall, out: StructInfo) -> Kernel:
    """TOPI's arange: `start + step * i` in int64 when the bounds are integers, else in
    float64, cast to the result's dtype."""
    start, _, step = arange_bounds(oc.values)
    wide = INT64 if isinstance(start, int) and isinstance(step, int) else dtype("float64")
    k = Kernel("arange")
    y = k.output("T_arange", out_tensor(out))
    k.compute("T_arange", y,
              lambda i: cast(y.dtype, const(start, wide) + const(step, wide) * cast(wide, i[0])))
    return k
