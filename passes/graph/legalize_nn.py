"""Legalization of softmax, log_softmax, layer_norm, rms_norm, batch_norm, group_norm, variance
and std: reduction blocks into temporaries with the reduced axes kept as 1, then an elementwise
block that reads them broadcast; of the activations with attributes (leakyrelu, softplus, selu,
prelu); and of the losses nll_loss and cross_entropy_with_logits."""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import FLOAT32, DType
from tirc.ir.expr import PrimExpr, binop, call, cast, const, if_then_else, select
from tirc.ir.graph import StructInfo, TupleSInfo
from tirc.ir.ops.nn import group_norm_axes
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import INT64, const_dim, dim
from tirc.passes.graph.kernel import Indices, Kernel, Operand
from tirc.passes.graph.legalize_reduction import element_count, init_value, reduce_axes
from tirc.passes.graph.legalize_table import kernel_name, legalizer, out_tensor


def _kept(shape: Indices, axes: Sequence[int]) -> Indices:
    return tuple(dim(1) if k in axes else d for k, d in enumerate(shape))


@legalizer("nn.softmax", "nn.log_softmax")
def softmax(oc: OpCall, out: StructInfo) -> Kernel:
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    x = k.operand("A", oc.values["data"], oc.tensor("data"))
    axis = oc.axis(oc.values["axis"], len(x.shape))
    result = k.output(f"T_{name}", out_tensor(out))
    dt = result.dtype
    kept = _kept(x.shape, [axis])
    maxes = Operand.of(k.temp("T_maxelem", kept, dt))
    reduce_axes(k, "T_maxelem", maxes.buffer, x, [axis], True, "max")  # type: ignore[arg-type]

    def shifted(i: Indices) -> PrimExpr:
        return binop("sub", x(*i), maxes.at(i, x.shape))

    if name == "softmax":
        exps = Operand.of(k.temp("T_exp", x.shape, dt))
        k.compute("T_exp", exps.buffer, lambda i: call("exp", shifted(i)))  # type: ignore[arg-type]
        sums = Operand.of(k.temp("T_expsum", kept, dt))
        reduce_axes(k, "T_expsum", sums.buffer, exps, [axis], True, "add")  # type: ignore[arg-type]
        k.compute("T_softmax", result,
                  lambda i: binop("div", exps(*i), sums.at(i, x.shape)))
        return k
    sums = Operand.of(k.temp("T_expsum", kept, dt))
    reduce_axes(k, "T_expsum", sums.buffer, x, [axis], True, "add",  # type: ignore[arg-type]
                lambda v, xi, s: call("exp", binop("sub", v, maxes(*s))))
    k.compute("T_log_softmax", result,
              lambda i: binop("sub", shifted(i), call("log", sums.at(i, x.shape))))
    return k


def _normalizer(k: Kernel, oc: OpCall, x: Operand, axes: list[int], centered: bool
                ) -> tuple[Operand | None, Operand, PrimExpr]:
    """Temporaries with the sum (when centering) and the sum of squares over `axes`, and the
    number of elements they cover."""
    dt = x.dtype
    kept = _kept(x.shape, axes)
    count = element_count([x.shape[a] for a in axes], dt)
    sums = None
    if centered:
        sums = Operand.of(k.temp("T_sum", kept, dt))
        reduce_axes(k, "T_sum", sums.buffer, x, axes, True, "add")  # type: ignore[arg-type]

    def square(v: PrimExpr, xi: Indices, s: Indices) -> PrimExpr:
        if sums is not None:
            v = binop("sub", v, binop("div", sums(*s), count))
        return binop("mul", v, v)

    squares = Operand.of(k.temp("T_sqsum", kept, dt))
    reduce_axes(k, "T_sqsum", squares.buffer, x, axes, True, "add", square)  # type: ignore[arg-type]
    return sums, squares, count


@legalizer("nn.layer_norm", "nn.rms_norm")
def norm(oc: OpCall, out: StructInfo) -> Kernel:
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    x = k.operand("A", oc.values["data"], oc.tensor("data"))
    axes = oc.axes(oc.values["axes"], len(x.shape), "axes")
    layer = name == "layer_norm"
    scale = oc.values["scale"] if layer else True
    center = oc.values["center"] if layer else False
    w = k.operand("gamma" if layer else "weight", oc.values["gamma" if layer else "weight"],
                  oc.tensor("gamma" if layer else "weight"))
    beta = k.operand("beta", oc.values["beta"], oc.tensor("beta")) if layer else None
    result = k.output(f"T_{name}", out_tensor(out))
    dt = result.dtype
    eps = const(oc.values["epsilon"], dt)
    sums, squares, count = _normalizer(k, oc, x, axes, centered=layer)

    def value(i: Indices) -> PrimExpr:
        v = x(*i)
        if sums is not None:
            v = binop("sub", v, binop("div", sums.at(i, x.shape), count))
        inv = call("rsqrt", binop("add", binop("div", squares.at(i, x.shape), count), eps))
        v = binop("mul", v, inv)
        along = tuple(i[a] for a in axes)
        if scale:
            v = binop("mul", v, w(*along))
        if center and beta is not None:
            v = binop("add", v, beta(*along))
        return v

    k.compute(f"T_{name}", result, value)
    return k


@legalizer("variance", "std")
def statistic(oc: OpCall, out: StructInfo) -> Kernel:
    name = oc.op.name
    k = Kernel(name)
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    axes = oc.axes(oc.values["axis"], len(x.shape))
    keepdims = oc.values["keepdims"]
    result = k.output(f"T_{name}", out_tensor(out))
    _, squares, count = _normalizer(k, oc, x, axes, centered=True)

    def value(i: Indices) -> PrimExpr:
        rest = iter(i)
        idx = []
        for a in range(len(x.shape)):
            if a in axes:
                idx.append(dim(0))
                if keepdims:
                    next(rest)
            else:
                idx.append(next(rest))
        v = binop("div", squares(*idx), count)
        return call("sqrt", v) if name == "std" else v

    k.compute(f"T_{name}", result, value)
    return k


SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def _activation_value(name: str, oc: OpCall, x: PrimExpr) -> PrimExpr:
    """The activation of one element (`alpha`, `beta`, `threshold` from the call)."""
    dt = x.dtype
    zero = const(0, dt)
    if name == "leakyrelu":
        return select(binop("gt", x, zero), x, binop("mul", const(oc.values["alpha"], dt), x))
    if name == "selu":
        neg = binop("mul", const(SELU_ALPHA, dt), binop("sub", call("exp", x), const(1, dt)))
        return binop("mul", const(SELU_SCALE, dt), select(binop("gt", x, zero), x, neg))
    beta = const(oc.values["beta"], dt)
    scaled = binop("mul", beta, x)
    smooth = binop("div", call("log", binop("add", const(1, dt), call("exp", scaled))), beta)
    return select(binop("gt", scaled, const(oc.values["threshold"], dt)), x, smooth)


@legalizer("nn.leakyrelu", "nn.softplus", "nn.selu")
def activation(oc: OpCall, out: StructInfo) -> Kernel:
    name = kernel_name(oc.op.name)
    k = Kernel(name)
    x = k.operand("A", oc.values["data"], oc.tensor("data"))
    y = k.output(f"T_{name}", out_tensor(out))
    k.compute(f"T_{name}", y, lambda i: _activation_value(name, oc, x(*i)))
    return k


@legalizer("nn.prelu")
def prelu(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("prelu")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    alpha = k.input("alpha", oc.values["alpha"], oc.tensor("alpha"))
    y = k.output("T_prelu", out_tensor(out))
    axis = oc.axis(oc.values["axis"], x.ndim)

    def value(i: Indices) -> PrimExpr:
        v = x.vload(*i)
        return select(binop("gt", v, const(0, v.dtype)), v,
                      binop("mul", alpha.vload(i[axis]), v))

    k.compute("T_prelu", y, value)
    return k


@legalizer("nn.batch_norm")
def batch_norm(oc: OpCall, out: StructInfo) -> Kernel:
    """Training mode normalizes by the batch's statistics over every axis but `axis` and
    returns the moving statistics updated with `momentum` (as TVM's topi does:
    (1 - momentum) * moving + momentum * batch); inference mode normalizes by the moving
    statistics and returns them unchanged."""
    assert isinstance(out, TupleSInfo)
    k = Kernel("batch_norm")
    x = k.operand("A", oc.values["data"], oc.tensor("data"))
    stats = {name: k.input(name, oc.values[name], oc.tensor(name)) for name in
             ("gamma", "beta", "moving_mean", "moving_var")}
    y = k.output("T_batch_norm", out_tensor(out.fields[0]))
    new_mean = k.output("T_moving_mean", out_tensor(out.fields[1]))
    new_var = k.output("T_moving_var", out_tensor(out.fields[2]))
    dt = y.dtype
    axis = oc.axis(oc.values["axis"], len(x.shape))
    eps = const(oc.values["epsilon"], dt)
    training = oc.values["training"]

    def channel(c: PrimExpr) -> Indices:
        return tuple(c if a == axis else dim(0) for a in range(len(x.shape)))

    if training:
        axes = [a for a in range(len(x.shape)) if a != axis]
        sums, squares, count = _normalizer(k, oc, x, axes, centered=True)
        assert sums is not None

        def mean(c: PrimExpr) -> PrimExpr:
            return binop("div", sums(*channel(c)), count)

        def var(c: PrimExpr) -> PrimExpr:
            return binop("div", squares(*channel(c)), count)
    else:
        def mean(c: PrimExpr) -> PrimExpr:
            return stats["moving_mean"].vload(c)

        def var(c: PrimExpr) -> PrimExpr:
            return stats["moving_var"].vload(c)

    def value(i: Indices) -> PrimExpr:
        c = i[axis]
        v = binop("div", binop("sub", x(*i), mean(c)),
                  call("sqrt", binop("add", var(c), eps)))
        if oc.values["scale"]:
            v = binop("mul", v, stats["gamma"].vload(c))
        if oc.values["center"]:
            v = binop("add", v, stats["beta"].vload(c))
        return v

    k.compute("T_batch_norm", y, value)
    m = const(oc.values["momentum"], dt)
    keep = binop("sub", const(1, dt), m)
    for result, name, batch in ((new_mean, "moving_mean", mean), (new_var, "moving_var", var)):
        moving = stats[name]

        def update(i: Indices, moving: Buffer = moving, batch: object = batch) -> PrimExpr:
            if not training:
                return moving.vload(*i)
            return binop("add", binop("mul", keep, moving.vload(*i)),
                         binop("mul", m, batch(i[0])))  # type: ignore[operator]

        k.compute(result.name, result, update)
    return k


def accumulator(dt: DType) -> DType:
    """The type statistics are summed in: float32 for the half-precision types (as TOPI's
    group_norm does), the data's own otherwise."""
    return FLOAT32 if dt.bits < 32 else dt


@legalizer("nn.group_norm", "nn.instance_norm")
def group_norm(oc: OpCall, out: StructInfo) -> Kernel:
    """The statistics of each group (its channels and `axes`; instance_norm: one channel) in
    temporaries whose channel axis counts groups, summed in float32 for half precision: the
    sum, then the sum of squared deviations from the mean; then every element normalized by
    its group's."""
    name = oc.op.name[3:]
    k = Kernel(name)
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    gamma = k.input("gamma", oc.values["gamma"], oc.tensor("gamma"))
    beta = k.input("beta", oc.values["beta"], oc.tensor("beta"))
    result = k.output(f"T_{name}", out_tensor(out))
    channel, axes, per_group = group_norm_axes(oc)
    acc = accumulator(x.dtype)
    size = dim(per_group)
    groups = dim((const_dim(x.shape[channel]) or 0) // per_group)
    stats_shape = tuple(groups if a == channel else dim(1) if a in axes
                        else d for a, d in enumerate(x.shape))
    extents = [size] + [x.shape[a] for a in axes]
    count = element_count(extents, acc)

    def element(s: Indices, r: Indices) -> PrimExpr:
        """The data element of group statistics `s` at reduction position `r`."""
        idx = [binop("add", binop("mul", s[a], size), r[0]) if a == channel else
               r[1 + axes.index(a)] if a in axes else s[a] for a in range(x.ndim)]
        return cast(acc, x.vload(*idx))

    def group(i: Indices) -> Indices:
        """The statistics of the group of data element `i`."""
        return tuple(binop("floordiv", i[a], size) if a == channel else dim(0) if a in axes
                     else i[a] for a in range(x.ndim))

    sums = k.temp("T_sum", stats_shape, acc)
    k.reduce("T_sum", sums, extents, "add", init_value("add", acc), element)
    squares = k.temp("T_sqsum", stats_shape, acc)

    def deviation(s: Indices, r: Indices) -> PrimExpr:
        d = binop("sub", element(s, r), binop("div", sums.vload(*s), count))
        return binop("mul", d, d)

    k.reduce("T_sqsum", squares, extents, "add", init_value("add", acc), deviation)

    def value(i: Indices) -> PrimExpr:
        g = group(i)
        mean = binop("div", sums.vload(*g), count)
        inv = call("rsqrt", binop("add", binop("div", squares.vload(*g), count),
                                  const(oc.values["epsilon"], acc)))
        v = binop("mul", binop("sub", cast(acc, x.vload(*i)), mean), inv)
        if oc.values["scale"]:
            v = binop("mul", v, cast(acc, gamma.vload(i[channel])))
        if oc.values["center"]:
            v = binop("add", v, cast(acc, beta.vload(i[channel])))
        return v

    k.compute(f"T_{name}", result, value)
    return k


@legalizer("nn.nll_loss")
def nll_loss(oc: OpCall, out: StructInfo) -> Kernel:
    """The loss of each target, `-weights[c] * predictions[n, c, d...]` read only where `c` is
    not `ignore_index` (an out-of-range class reads out of bounds, as `take` does); then its
    sum, or that sum over the sum of the weights of the targets not ignored (`mean`)."""
    k = Kernel("nll_loss")
    pred = k.input("predictions", oc.values["predictions"], oc.tensor("predictions"))
    targets = k.input("targets", oc.values["targets"], oc.tensor("targets"))
    weights = (k.input("weights", oc.values["weights"], oc.tensor("weights"))
               if oc.values["weights"] is not None else None)
    result = k.output("T_nll_loss", out_tensor(out))
    dt = result.dtype
    ignore = const(oc.values["ignore_index"], INT64)
    reduction = oc.values["reduction"]

    def weight(c: PrimExpr) -> PrimExpr:
        return weights.vload(c) if weights is not None else const(1, dt)

    def loss(t: Indices) -> PrimExpr:
        c = cast(INT64, targets.vload(*t))
        at = (c,) if pred.ndim == 1 else (t[0], c, *t[1:])
        term = binop("mul", binop("sub", const(0, dt), pred.vload(*at)), weight(c))
        return if_then_else(binop("ne", c, ignore), term, const(0, dt))

    def counted(t: Indices) -> PrimExpr:
        c = cast(INT64, targets.vload(*t))
        return if_then_else(binop("ne", c, ignore), weight(c), const(0, dt))

    if reduction == "none" or targets.ndim == 0:
        if reduction == "mean":
            k.compute("T_nll_loss", result, lambda i: binop("div", loss(()), counted(())))
        else:
            k.compute("T_nll_loss", result, loss)
        return k
    extents = list(targets.shape)
    if reduction == "sum":
        k.reduce("T_nll_loss", result, extents, "add", const(0, dt), lambda s, r: loss(r))
        return k
    total = k.temp("T_loss_sum", (), dt)
    k.reduce("T_loss_sum", total, extents, "add", const(0, dt), lambda s, r: loss(r))
    weights_total = k.temp("T_weight_sum", (), dt)
    k.reduce("T_weight_sum", weights_total, extents, "add", const(0, dt),
             lambda s, r: counted(r))
    k.compute("T_nll_loss", result,
              lambda i: binop("div", total.vload(), weights_total.vload()))
    return k


@legalizer("nn.cross_entropy_with_logits")
def cross_entropy_with_logits(oc: OpCall, out: StructInfo) -> Kernel:
    """`-sum(predictions * labels)`, over the batch size (the first axis) when rank > 1."""
    k = Kernel("cross_entropy_with_logits")
    x = k.input("predictions", oc.values["predictions"], oc.tensor("predictions"))
    y = k.input("labels", oc.values["labels"], oc.tensor("labels"))
    result = k.output("T_cross_entropy", out_tensor(out))
    dt = result.dtype
    if x.ndim == 0:
        k.compute("T_cross_entropy", result,
                  lambda i: binop("sub", const(0, dt), binop("mul", x.vload(), y.vload())))
        return k
    total = k.temp("T_sum", (), dt)
    k.reduce("T_sum", total, list(x.shape), "add", const(0, dt),
             lambda s, r: binop("mul", x.vload(*r), y.vload(*r)))

    def value(i: Indices) -> PrimExpr:
        v = binop("sub", const(0, dt), total.vload())
        return binop("div", v, cast(dt, x.shape[0])) if x.ndim > 1 else v

    k.compute("T_cross_entropy", result, value)
    return k


@legalizer("nn.dropout")
def dropout(oc: OpCall, out: StructInfo) -> Kernel:
    """Inference dropout, as TVM 0.27 legalizes it: the data copied to the output and a mask
    of ones of the data's dtype (`topi.identity` and `topi.full_like(x, 1.0)`)."""
    assert isinstance(out, TupleSInfo)
    k = Kernel("dropout")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output("T_dropout", out_tensor(out.fields[0]))
    mask = k.output("T_mask", out_tensor(out.fields[1]))
    k.compute("T_dropout", y, lambda i: x.vload(*i))
    k.compute("T_mask", mask, lambda i: const(1, mask.dtype))
    return k
