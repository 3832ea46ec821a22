"""Legalization of softmax, log_softmax, layer_norm, rms_norm, batch_norm, variance and std:
reduction blocks into temporaries with the reduced axes kept as 1, then an elementwise block
that reads them broadcast; and of the activations with attributes (leakyrelu, softplus, selu,
prelu)."""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, binop, call, const, select
from tirc.ir.graph import StructInfo, TupleSInfo
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import dim
from tirc.passes.graph.kernel import Indices, Kernel, Operand
from tirc.passes.graph.legalize_reduction import element_count, reduce_axes
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
