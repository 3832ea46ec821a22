"""Legalization of transposed convolution (`nn.conv1d_transpose`, `nn.conv2d_transpose`),
after TOPI's `group_conv2d_transpose_nchw`: a stage that spreads the data `stride` apart and
pads it by `dilation * (k - 1) - pad_before` before and `dilation * (k - 1) - pad_after +
output_padding` after (a negative amount crops), then an ordinary convolution of that with the
kernel flipped, reducing over the input channels of a group and the taps."""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, binop, cast, const, if_then_else
from tirc.ir.graph import StructInfo
from tirc.ir.ops.conv import SPATIAL, data_axes, layout_axes, output_layout
from tirc.ir.ops.conv_transpose import TransposeGeometry, transpose_geometry
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import const_dim, dim, simplify_dim
from tirc.passes.graph.kernel import Indices, Kernel
from tirc.passes.graph.legalize_table import kernel_name, legalizer, out_tensor


def _and(conds: list[PrimExpr]) -> PrimExpr | None:
    out: PrimExpr | None = None
    for c in conds:
        out = c if out is None else binop("and", out, c)
    return out


def spread_stage(k: Kernel, x: Buffer, axes: dict[str, int], rank: int, geo: TransposeGeometry,
                 kernel: tuple[PrimExpr, ...], out_sizes: list[PrimExpr]) -> Buffer:
    """The data with `stride - 1` zeros between neighbours and the border the flipped
    kernel's windows need (TOPI's `data_pad` of the dilated data)."""
    shape = list(x.shape)
    before: list[PrimExpr] = []
    for n, c in enumerate(SPATIAL[rank]):
        span = binop("mul", dim(geo.dilation[n]), binop("sub", kernel[n], dim(1)))
        shape[axes[c]] = simplify_dim(binop("add", out_sizes[n], span))
        before.append(simplify_dim(binop("sub", span, dim(geo.pad_before[n]))))
    spread = k.temp("data_pad", tuple(shape), x.dtype)

    def value(i: Indices) -> PrimExpr:
        idx, guards = list(i), []
        for n, c in enumerate(SPATIAL[rank]):
            pos = simplify_dim(binop("sub", i[axes[c]], before[n]))
            stride = geo.strides[n]
            low = const_dim(before[n])
            if low is None or low > 0:
                guards.append(binop("ge", pos, dim(0)))
            guards.append(binop("lt", pos, binop("add", binop(
                "mul", binop("sub", x.shape[axes[c]], dim(1)), dim(stride)), dim(1))))
            if stride != 1:
                guards.append(binop("eq", binop("floormod", pos, dim(stride)), dim(0)))
                pos = binop("floordiv", pos, dim(stride))
            idx[axes[c]] = pos
        cond = _and(guards)
        load = x.vload(*idx)
        return load if cond is None else if_then_else(cond, load, const(0, x.dtype))

    k.compute("data_pad", spread, value)
    return spread


@legalizer("nn.conv1d_transpose", "nn.conv2d_transpose")
def conv_transpose(oc: OpCall, out: StructInfo) -> Kernel:
    rank = int(oc.op.name[len("nn.conv")])
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    w = k.input("W", oc.values["weight"], oc.tensor("weight"))
    y = k.output(f"T_{name}", out_tensor(out))
    dt = y.dtype
    geo = transpose_geometry(oc, rank)
    daxes = data_axes(oc, "data_layout", rank)
    kaxes = layout_axes(oc, "kernel_layout", "IO" + SPATIAL[rank])
    oaxes = output_layout(oc, "data_layout", rank)
    kernel = tuple(w.shape[kaxes[c]] for c in SPATIAL[rank])
    groups = oc.values["groups"]
    out_per_group = w.shape[kaxes["O"]]
    per_group = simplify_dim(binop("floordiv", x.shape[daxes["C"]], dim(groups)))
    out_sizes = [y.shape[oaxes[c]] for c in SPATIAL[rank]]
    data = spread_stage(k, x, daxes, rank, geo, kernel, out_sizes)

    def value(s: Indices, r: Indices) -> PrimExpr:
        f = s[oaxes["C"]]
        channel, o = r[0], f
        if groups != 1:
            group = binop("floordiv", f, out_per_group)
            channel = binop("add", binop("mul", group, per_group), r[0])
            o = binop("floormod", f, out_per_group)
        didx: list[PrimExpr] = [dim(0)] * x.ndim
        didx[daxes["N"]], didx[daxes["C"]] = s[oaxes["N"]], channel
        widx: list[PrimExpr] = [dim(0)] * w.ndim
        widx[kaxes["I"]], widx[kaxes["O"]] = channel, o
        for n, c in enumerate(SPATIAL[rank]):
            tap = r[1 + n]
            didx[daxes[c]] = binop("add", s[oaxes[c]], binop("mul", tap, dim(geo.dilation[n])))
            widx[kaxes[c]] = binop("sub", binop("sub", kernel[n], dim(1)), tap)
        return binop("mul", _to(dt, data.vload(*didx)), _to(dt, w.vload(*widx)))

    k.reduce(y.name, y, [per_group, *kernel], "add", const(0, dt), value)
    return k


def _to(dt: object, v: PrimExpr) -> PrimExpr:
    return v if v.dtype == dt else cast(dt, v)  # type: ignore[arg-type]
