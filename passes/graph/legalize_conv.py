"""Legalization of convolution and pooling: a padding stage where the windows overlap the
padding (TVM's `pad_temp`), then one reduction block over the window (and the input channels of
a group); average pooling divides the window sums by the number of elements each window
counts."""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, binop, cast, const, if_then_else, maximum, minimum
from tirc.ir.graph import StructInfo
from tirc.ir.ops.conv import (
    SPATIAL,
    Geometry,
    adaptive_sizes,
    conv_geometry,
    data_axes,
    layout_axes,
    output_layout,
    pool_axes,
    pool_geometry,
    pool_out_axes,
)
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import const_dim, dim, dims_equal, product, simplify_dim
from tirc.passes.graph.kernel import Indices, Kernel
from tirc.passes.graph.legalize_reduction import init_value
from tirc.passes.graph.legalize_table import kernel_name, legalizer, out_tensor


def _rank(oc: OpCall) -> int:
    return int(oc.op.name[-2])


def _and(conds: Sequence[PrimExpr]) -> PrimExpr | None:
    out: PrimExpr | None = None
    for c in conds:
        out = c if out is None else binop("and", out, c)
    return out


def pad_stage(k: Kernel, x: Buffer, axes: dict[str, int], rank: int, geo: Geometry,
              fill: PrimExpr, ceil_mode: bool = False) -> tuple[Buffer, Geometry]:
    """The data padded with `fill` (TVM's `pad_temp`), and the geometry without padding that
    reads it: the window loop then loads without a guard, so it vectorizes. A ceil-mode window
    may overhang the padding after by up to `stride - 1` elements; those are padded too."""
    after = [geo.pad_after[n] + (geo.strides[n] - 1 if ceil_mode else 0) for n in range(rank)]
    if not any(geo.pad_before) and not any(after):
        return x, geo
    shape = list(x.shape)
    for n, c in enumerate(SPATIAL[rank]):
        shape[axes[c]] = simplify_dim(binop("add", x.shape[axes[c]],
                                            dim(geo.pad_before[n] + after[n])))
    padded = k.temp("pad_temp", tuple(shape), x.dtype)

    def value(i: Indices) -> PrimExpr:
        idx, guards = list(i), []
        for n, c in enumerate(SPATIAL[rank]):
            pos = binop("sub", i[axes[c]], dim(geo.pad_before[n])) if geo.pad_before[n] \
                else i[axes[c]]
            if geo.pad_before[n]:
                guards.append(binop("ge", pos, dim(0)))
            if after[n]:
                guards.append(binop("lt", pos, x.shape[axes[c]]))
            idx[axes[c]] = pos
        cond = _and(guards)
        load = x.vload(*idx)
        return load if cond is None else if_then_else(cond, load, fill)

    k.compute("pad_temp", padded, value)
    none = (0,) * rank
    return padded, Geometry(geo.window, geo.strides, geo.dilation, none, none)


def window_load(x: Buffer, axes: dict[str, int], rank: int, geo: Geometry,
                fixed: dict[str, PrimExpr], outer: Indices, taps: Indices) -> PrimExpr:
    """The element at window tap `taps` of output position `outer` (per spatial axis) of
    data without padding, with the batch and channel indices in `fixed`."""
    idx: list[PrimExpr] = [dim(0)] * x.ndim
    for c, v in fixed.items():
        idx[axes[c]] = v
    for n, c in enumerate(SPATIAL[rank]):
        idx[axes[c]] = binop("add", binop("mul", outer[n], dim(geo.strides[n])),
                             binop("mul", taps[n], dim(geo.dilation[n])))
    return x.vload(*idx)


@legalizer("nn.conv1d", "nn.conv2d", "nn.conv3d")
def conv(oc: OpCall, out: StructInfo) -> Kernel:
    rank = _rank(oc)
    k = Kernel(kernel_name(oc.op.name))
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    w = k.input("W", oc.values["weight"], oc.tensor("weight"))
    y = k.output(f"T_{kernel_name(oc.op.name)}", out_tensor(out))
    dt = y.dtype
    geo = conv_geometry(oc, rank, w.shape)
    daxes = data_axes(oc, "data_layout", rank)
    kaxes = layout_axes(oc, "kernel_layout", "OI" + SPATIAL[rank])
    oaxes = output_layout(oc, "data_layout", rank)
    groups = oc.values["groups"]
    per_group = w.shape[kaxes["I"]]
    out_per_group = simplify_dim(binop("floordiv", w.shape[kaxes["O"]], dim(groups)))
    data, inner = pad_stage(k, x, daxes, rank, geo, const(0, x.dtype))

    def value(s: Indices, r: Indices) -> PrimExpr:
        f = s[oaxes["C"]]
        channel = r[0]
        if groups != 1:
            group = binop("floordiv", f, out_per_group)
            channel = binop("add", binop("mul", group, per_group), r[0])
        outer = tuple(s[oaxes[c]] for c in SPATIAL[rank])
        a = window_load(data, daxes, rank, inner, {"N": s[oaxes["N"]], "C": channel}, outer,
                        r[1:])
        widx: list[PrimExpr] = [dim(0)] * w.ndim
        widx[kaxes["O"]], widx[kaxes["I"]] = f, r[0]
        for n, c in enumerate(SPATIAL[rank]):
            widx[kaxes[c]] = r[1 + n]
        return binop("mul", _to(dt, a), _to(dt, w.vload(*widx)))

    k.reduce(y.name, y, [per_group, *geo.window], "add", const(0, dt), value)
    return k


def _to(dt: object, v: PrimExpr) -> PrimExpr:
    return v if v.dtype == dt else cast(dt, v)  # type: ignore[arg-type]


def window_count(geo: Geometry, k: int, outer: PrimExpr, size: PrimExpr,
                 include_pad: bool) -> PrimExpr:
    """How many taps of the window at output position `outer` along axis `k` an average
    counts: those inside the data, or inside the padded data with `include_pad`."""
    start = binop("sub", binop("mul", outer, dim(geo.strides[k])), dim(geo.pad_before[k]))
    lo = dim(-geo.pad_before[k]) if include_pad else dim(0)
    hi = binop("add", size, dim(geo.pad_after[k])) if include_pad else size
    d = dim(geo.dilation[k])
    last = minimum(binop("sub", geo.window[k], dim(1)),
                   binop("floordiv", binop("sub", binop("sub", hi, dim(1)), start), d))
    first = maximum(dim(0), binop("sub", dim(0),
                                  binop("floordiv", binop("sub", start, lo), d)))
    return maximum(dim(0), binop("add", binop("sub", last, first), dim(1)))


@legalizer("nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d", "nn.avg_pool1d",
           "nn.avg_pool2d", "nn.avg_pool3d")
def pool(oc: OpCall, out: StructInfo) -> Kernel:
    rank = _rank(oc)
    name = kernel_name(oc.op.name)
    is_max = name.startswith("max")
    k = Kernel(name)
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output(f"T_{name}", out_tensor(out))
    dt = y.dtype
    geo = pool_geometry(oc, rank)
    ceil_mode = oc.values["ceil_mode"]
    axes = pool_axes(oc, "layout", rank)
    oaxes = pool_out_axes(oc, rank)
    combine = "max" if is_max else "add"
    fill = init_value(combine, dt)
    data, inner = pad_stage(k, x, axes, rank, geo, fill, ceil_mode)

    def value(s: Indices, r: Indices) -> PrimExpr:
        outer = tuple(s[oaxes[c]] for c in SPATIAL[rank])
        return window_load(data, axes, rank, inner, _passed(s, oaxes, rank), outer, r)

    if is_max:
        k.reduce(y.name, y, list(geo.window), combine, fill, value)
        return k
    sums = k.temp("T_pool_sum", y.shape, dt)
    k.reduce("T_pool_sum", sums, list(geo.window), combine, fill, value)
    include = oc.values["count_include_pad"]

    def average(i: Indices) -> PrimExpr:
        counts = [window_count(geo, n, i[oaxes[c]], x.shape[axes[c]], include)
                  for n, c in enumerate(SPATIAL[rank])]
        return binop("div", sums.vload(*i), cast(dt, product(counts)))

    k.compute(y.name, y, average)
    return k


def _passed(s: Indices, oaxes: dict[str, int], rank: int) -> dict[str, PrimExpr]:
    """The output indices of the axes a window passes through (batch, channels and their
    blocked sub-axes), by layout letter."""
    return {c: s[pos] for c, pos in oaxes.items() if c not in SPATIAL[rank]}


def _bounds(o: PrimExpr, size: int, out: int) -> tuple[PrimExpr, PrimExpr]:
    """The window [start, end) of adaptive output position `o` (PyTorch's and TVM's rule)."""
    start = binop("floordiv", binop("mul", o, dim(size)), dim(out))
    end = binop("floordiv", binop("add", binop("mul", binop("add", o, dim(1)), dim(size)),
                                  dim(out - 1)), dim(out))
    return start, end


@legalizer("nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool3d")
def adaptive_pool(oc: OpCall, out: StructInfo) -> Kernel:
    rank = _rank(oc)
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output(f"T_{name}", out_tensor(out))
    dt = y.dtype
    axes = pool_axes(oc, "layout", rank)
    oaxes = pool_out_axes(oc, rank)
    sizes = adaptive_sizes(oc, rank)
    ins = [x.shape[axes[c]] for c in SPATIAL[rank]]
    if all(dims_equal(a, b) for a, b in zip(ins, sizes)):  # one element per window
        def copy(i: Indices) -> PrimExpr:
            idx: list[PrimExpr] = [dim(0)] * x.ndim
            for c, pos in oaxes.items():
                idx[axes[c]] = i[pos]
            return x.vload(*idx)

        k.compute(y.name, y, copy)
        return k
    consts = [(const_dim(a), const_dim(b)) for a, b in zip(ins, sizes)]
    longest = [max(-(-(o + 1) * n // m) - (o * n // m) for o in range(m))  # type: ignore[operator]
               for n, m in consts]

    def value(s: Indices, r: Indices) -> PrimExpr:
        idx: list[PrimExpr] = [dim(0)] * x.ndim
        for c, v in _passed(s, oaxes, rank).items():
            idx[axes[c]] = v
        guards = []
        for n, c in enumerate(SPATIAL[rank]):
            start, end = _bounds(s[oaxes[c]], *consts[n])  # type: ignore[arg-type]
            idx[axes[c]] = binop("add", start, r[n])
            if longest[n] > 1:
                guards.append(binop("lt", binop("add", start, r[n]), end))
        cond = _and(guards)
        load = x.vload(*idx)
        return load if cond is None else if_then_else(cond, load, const(0, dt))

    sums = k.temp("T_pool_sum", y.shape, dt)
    k.reduce("T_pool_sum", sums, [dim(v) for v in longest], "add", const(0, dt), value)

    def average(i: Indices) -> PrimExpr:
        counts = []
        for n, c in enumerate(SPATIAL[rank]):
            start, end = _bounds(i[oaxes[c]], *consts[n])  # type: ignore[arg-type]
            counts.append(binop("sub", end, start))
        return binop("div", sums.vload(*i), cast(dt, product(counts)))

    k.compute(y.name, y, average)
    return k
