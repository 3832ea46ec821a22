"""Legalization of `strided_slice`, `flip`, `tile` and `repeat`: each output element reads the
one input element it copies."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import dim
from tirc.ir.ops.slicing import slice_ranges, tile_repeats
from tirc.passes.graph.kernel import Indices, Kernel
from tirc.passes.graph.legalize_manipulation import unravel
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("strided_slice")
def strided_slice(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("strided_slice")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_strided_slice", out_tensor(out))
    ranges = slice_ranges(oc)

    def value(i: Indices) -> PrimExpr:
        idx = list(i)
        for axis, (start, _, step) in ranges.items():
            idx[axis] = binop("add", dim(start), binop("mul", i[axis], dim(step)))
        return x.vload(*idx)

    k.compute("T_strided_slice", y, value)
    return k


@legalizer("flip")
def flip(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("flip")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_reverse_sequence", out_tensor(out))
    axis = oc.axis(oc.values["axis"], x.ndim)

    def value(i: Indices) -> PrimExpr:
        idx = list(i)
        idx[axis] = binop("sub", binop("sub", x.shape[axis], dim(1)), i[axis])
        return x.vload(*idx)

    k.compute("T_reverse_sequence", y, value)
    return k


@legalizer("tile")
def tile(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("tile")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_tile", out_tensor(out))
    lead = len(tile_repeats(oc)) - x.ndim

    def value(i: Indices) -> PrimExpr:
        return x.vload(*[binop("floormod", i[lead + a], x.shape[a]) for a in range(x.ndim)])

    k.compute("T_tile", y, value)
    return k


@legalizer("repeat")
def repeat(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("repeat")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_repeat", out_tensor(out))
    reps = dim(oc.values["repeats"])
    axis = oc.values["axis"]

    def value(i: Indices) -> PrimExpr:
        if axis is None:
            return x.vload(*unravel(binop("floordiv", i[0], reps), x.shape))
        a = oc.axis(axis, x.ndim)
        idx = list(i)
        idx[a] = binop("floordiv", i[a], reps)
        return x.vload(*idx)

    k.compute("T_repeat", y, value)
    return k
