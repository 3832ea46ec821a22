"""Legalization of `zeros ones full` and their `_like` forms: one spatial block storing the
fill value (a `_like` kernel reads nothing of the tensor it takes its shape from); `arange`:
one block storing `start + step * i`; `one_hot`: the on value where the position equals the
index, else the off value."""

from __future__ import annotations

from tirc.ir.dtype import INT64, dtype
from tirc.ir.expr import PrimExpr, binop, cast, const, select
from tirc.ir.graph import PrimSInfo, StructInfo
from tirc.ir.ops.creation import arange_bounds
from tirc.ir.ops.registry import OpCall
from tirc.passes.graph.kernel import Indices, Kernel
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
    whole = all(isinstance(v, (int, PrimExpr)) for v in (start, step))
    wide = INT64 if whole else dtype("float64")
    k = Kernel("arange")
    y = k.output("T_arange", out_tensor(out))
    first = cast(wide, k.size_value(start)) if isinstance(start, PrimExpr) \
        else const(start, wide)
    k.compute("T_arange", y,
              lambda i: cast(y.dtype, first + const(step, wide) * cast(wide, i[0])))
    return k


@legalizer("one_hot")
def one_hot(oc: OpCall, out: StructInfo) -> Kernel:
    """Element (.., j at `axis`, ..) is on_value where indices[..] == j, else off_value (a
    negative or too large index matches no position, as TOPI's)."""
    k = Kernel("one_hot")
    ind = k.input("indices", oc.values["indices"], oc.tensor("indices"))
    values = []
    for name in ("on_value", "off_value"):
        s = oc.sinfo[name]
        assert isinstance(s, PrimSInfo) and s.dtype is not None
        values.append(k.scalar_operand(name, oc.values[name], s.dtype))
    on, off = values
    y = k.output("T_one_hot", out_tensor(out))
    a = oc.axis(oc.values["axis"], y.ndim)

    def value(i: Indices) -> PrimExpr:
        raw = cast(INT64, ind.vload(*i[:a], *i[a + 1:]))
        return select(binop("eq", raw, i[a]), on(), off())

    k.compute("T_one_hot", y, value)
    return k
