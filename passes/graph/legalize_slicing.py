"""Legalization of `strided_slice`, `slice_scatter`, `flip`, `tile`, `repeat` and `nn.pad`: each
output element reads the one input element it copies (a constant where `pad` fills, or where
`tril`/`triu` zero it); `cumsum` and `cumprod` as a reduction over the axis up to each
position."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop, cast, const, if_then_else, maximum, minimum, select
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import dim
from tirc.ir.ops.slicing import pad_widths, scatter_range, slice_ranges, tile_repeats
from tirc.passes.graph.kernel import Indices, Kernel
from tirc.passes.graph.legalize_manipulation import unravel
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("slice_scatter")
def slice_scatter(oc: OpCall, out: StructInfo) -> Kernel:
    """Each output element reads src where its position along the axis is one of the slice's
    (`start + k * step`, k its src position), the input elsewhere."""
    k = Kernel("slice_scatter")
    x = k.input("A", oc.values["input_tensor"], oc.tensor("input_tensor"))
    src = k.input("src", oc.values["src"], oc.tensor("src"))
    y = k.output("T_slice_scatter", out_tensor(out))
    axis, (start, stop, step) = scatter_range(oc)

    def value(i: Indices) -> PrimExpr:
        off = binop("sub", i[axis], dim(start))
        inside = binop("and", binop("and", binop("ge", off, dim(0)),
                                    binop("lt", i[axis], dim(stop))),
                       binop("eq", binop("floormod", off, dim(step)), dim(0)))
        at = [*i[:axis], binop("floordiv", off, dim(step)), *i[axis + 1:]]
        return if_then_else(inside, src.vload(*at), x.vload(*i))

    k.compute("T_slice_scatter", y, value)
    return k


@legalizer("strided_slice")
def strided_slice(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("strided_slice")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_strided_slice", out_tensor(out))
    ranges = slice_ranges(oc)

    def value(i: Indices) -> PrimExpr:
        idx = list(i)
        for axis, (start, _, step) in ranges.items():
            first = k.dims([start])[0]  # a symbolic bound over the kernel's sizes
            idx[axis] = binop("add", first, binop("mul", i[axis], dim(step)))
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


@legalizer("tril", "triu")
def triangle(oc: OpCall, out: StructInfo) -> Kernel:
    """Element (.., i, j) is kept where j - i <= k (tril) or j - i >= k (triu), else 0."""
    name = oc.op.name
    k = Kernel(name)
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output(f"T_{name}", out_tensor(out))
    keep = "le" if name == "tril" else "ge"

    def value(i: Indices) -> PrimExpr:
        offset = binop("sub", i[-1], i[-2])
        return select(binop(keep, offset, dim(oc.values["k"])), x.vload(*i),
                      const(0, x.dtype))

    k.compute(f"T_{name}", y, value)
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


def _source(i: PrimExpr, before: int, size: PrimExpr, mode: str) -> PrimExpr:
    """The input position an `edge` or `reflect` padded position copies."""
    pos = binop("sub", i, dim(before))
    last = binop("sub", size, dim(1))
    if mode == "edge":
        return minimum(maximum(pos, dim(0)), last)
    low = select(binop("lt", pos, dim(0)), binop("sub", dim(0), pos), pos)
    return select(binop("gt", low, last), binop("sub", binop("mul", last, dim(2)), low), low)


@legalizer("nn.pad")
def pad(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("pad")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output("PadInput", out_tensor(out))
    widths = pad_widths(oc)
    mode = oc.values["pad_mode"]

    def value(i: Indices) -> PrimExpr:
        if mode != "constant":
            return x.vload(*[_source(v, b, d, mode) if (b or e) else v
                             for v, (b, e), d in zip(i, widths, x.shape)])
        guards, idx = [], []
        for v, (b, e), d in zip(i, widths, x.shape):
            pos = binop("sub", v, dim(b)) if b else v
            if b:
                guards.append(binop("ge", pos, dim(0)))
            if e:
                guards.append(binop("lt", pos, d))
            idx.append(pos)
        load = x.vload(*idx)
        if not guards:
            return load
        cond = guards[0]
        for g in guards[1:]:
            cond = binop("and", cond, g)
        return if_then_else(cond, load, const(oc.values["pad_value"], x.dtype))

    k.compute("PadInput", y, value)
    return k


@legalizer("cumsum", "cumprod")
def scan(oc: OpCall, out: StructInfo) -> Kernel:
    """Each output position reduces the inputs up to it (before it when `exclusive`), in
    order; a flattened scan (no axis) reads the input through its row-major position."""
    name = oc.op.name
    k = Kernel(name)
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output(f"T_{name}", out_tensor(out))
    axis = oc.values["axis"]
    a = oc.axis(axis, x.ndim) if axis is not None else 0
    extent = y.shape[a]
    combine = "add" if name == "cumsum" else "mul"
    identity = const(0 if combine == "add" else 1, y.dtype)
    before = "lt" if oc.values["exclusive"] else "le"

    def value(s: Indices, r: Indices) -> PrimExpr:
        idx = list(s)
        idx[a] = r[0]
        v = x.vload(*idx) if axis is not None else x.vload(*unravel(r[0], x.shape))
        v = v if v.dtype == y.dtype else cast(y.dtype, v)
        return select(binop(before, r[0], s[a]), v, identity)

    k.reduce(f"T_{name}", y, [extent], combine, identity, value)
    return k
