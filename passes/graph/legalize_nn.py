"""Legalization of softmax, log_softmax, layer_norm and rms_norm: reduction blocks into
temporaries with the reduced axes kept as 1, then an elementwise block that reads them
broadcast."""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.expr import PrimExpr, binop, call, const
from tirc.ir.graph import StructInfo
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
