"""Legalization of reductions (`sum mean max min prod`): one reduction block over the reduced
axes; `mean` adds a block dividing by the number of reduced elements."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, binop, cast, const
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import product
from tirc.passes.graph.kernel import Indices, Kernel, Operand, limit
from tirc.passes.graph.legalize_table import legalizer, out_tensor


def init_value(combine: str, dt: object) -> PrimExpr:
    """The identity of a combiner: 0 for add, 1 for mul, the dtype's extremes for max/min."""
    if combine == "add":
        return const(0, dt)  # type: ignore[arg-type]
    if combine == "mul":
        return const(1, dt)  # type: ignore[arg-type]
    return limit(dt, highest=combine == "min")  # type: ignore[arg-type]


def reduce_axes(k: Kernel, name: str, out: Buffer, x: Operand, axes: Sequence[int],
                keepdims: bool, combine: str,
                fn: Callable[[PrimExpr, Indices, Indices], PrimExpr] | None = None) -> None:
    """`out = combine over axes of fn(x[...])`; `out` has x's shape without (or with 1 at)
    the reduced axes. `fn(value, x_indices, out_indices)` maps each element (identity)."""
    extents = [x.shape[a] for a in axes]

    def value(s: Indices, r: Indices) -> PrimExpr:
        spatial = iter(s)
        idx = []
        for axis in range(len(x.shape)):
            if axis in axes:
                idx.append(r[list(axes).index(axis)])
                if keepdims:
                    next(spatial)
            else:
                idx.append(next(spatial))
        v = x(*idx)
        return fn(v, tuple(idx), s) if fn is not None else v

    k.reduce(name, out, extents, combine, init_value(combine, out.dtype), value)


def element_count(extents: Sequence[PrimExpr], dt: object) -> PrimExpr:
    """The number of reduced elements as a value of `dt`."""
    return cast(dt, product(list(extents)))  # type: ignore[arg-type]


_COMBINE = {"sum": "add", "mean": "add", "max": "max", "min": "min", "prod": "mul"}


@legalizer(*_COMBINE)
def reduction(oc: OpCall, out: StructInfo) -> Kernel:
    name = oc.op.name
    k = Kernel(name)
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    axes = oc.axes(oc.values["axis"], len(x.shape))
    keepdims = oc.values["keepdims"]
    result = k.output(f"T_{name}", out_tensor(out))
    if name != "mean":
        reduce_axes(k, f"T_{name}", result, x, axes, keepdims, _COMBINE[name])
        return k
    total = k.temp("T_sum", result.shape, result.dtype)
    reduce_axes(k, "T_sum", total, x, axes, keepdims, "add")
    count = element_count([x.shape[a] for a in axes], result.dtype)
    div = "div" if result.dtype.is_float else "truncdiv"
    k.compute("T_mean", result, lambda i: binop(div, total.vload(*i), count))
    return k
