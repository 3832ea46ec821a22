"""Legalization of `layout_transform`: each output element reads the input element the index
map sends there, found by inverting the map (an index kept whole is that output; one split
into `i // k` and `i % k` is `o1 * k + o2`), or the pad value where that lands past the input
(tirc.ir.ops.layout)."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop, const, if_then_else
from tirc.ir.graph import StructInfo
from tirc.ir.ops.layout import layout_parts
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import const_dim, dim
from tirc.passes.graph.kernel import Indices, Kernel
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("layout_transform")
def layout_transform(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("layout_transform")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_layout_trans", out_tensor(out))
    parts = layout_parts(oc)
    pad = oc.values["pad_value"]
    pad_value = const(0 if pad is None else pad, y.dtype)

    def value(o: Indices) -> PrimExpr:
        idx: list[PrimExpr] = [dim(0)] * x.ndim
        split: set[int] = set()
        for pos, (axis, kind, f) in enumerate(parts):
            term = binop("mul", o[pos], dim(f)) if kind == "div" else o[pos]
            idx[axis] = term if kind == "whole" else binop("add", idx[axis], term)
            split |= {axis} if kind != "whole" else set()
        padded = [a for a in sorted(split) if not _divides(x.shape[a], parts, a)]
        load = x.vload(*idx)
        if not padded:
            return load
        past = binop("ge", idx[padded[0]], x.shape[padded[0]])
        for a in padded[1:]:
            past = binop("or", past, binop("ge", idx[a], x.shape[a]))
        return if_then_else(past, pad_value, load)

    k.compute("T_layout_trans", y, value)
    return k


def _divides(n: PrimExpr, parts: list[tuple[int, str, int]], axis: int) -> bool:
    """Whether the split of `axis` (size `n`) covers it exactly: a constant multiple of the
    factor (`i % k` has `k` values, so a shorter axis is padded too)."""
    c = const_dim(n)
    f = next(f for a, kind, f in parts if a == axis and kind == "mod")
    return c is not None and c % f == 0
