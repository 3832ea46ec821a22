"""Legalization of reductions (`sum mean max min prod`): one reduction block over the reduced
axes; `mean` adds a block dividing by the number of reduced elements. `argmax` and `argmin`
reduce twice: the extreme value, then the first position holding it (or, for floats, the first
NaN, as NumPy answers). `collapse_sum_like`/`collapse_sum_to` reduce the axes broadcasting
added: one reduction block into the target's shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, binop, cast, const, select
from tirc.ir.graph import StructInfo, TupleSInfo
from tirc.ir.ops.reduction import collapse_axes, collapse_target, topk_axis
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import INT64, dim, product
from tirc.passes.graph.kernel import ZERO, Indices, Kernel, Operand, limit
from tirc.passes.graph.legalize_manipulation import linear_index
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


@legalizer("argmax", "argmin")
def arg_reduction(oc: OpCall, out: StructInfo) -> Kernel:
    name = oc.op.name
    k = Kernel(name)
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    axis = oc.values["axis"]
    axes = list(range(x.ndim)) if axis is None else [oc.axis(axis, x.ndim)]
    keepdims = oc.values["keepdims"]
    result = k.output(f"T_{name}", out_tensor(out))
    combine = "max" if name == "argmax" else "min"
    kept = tuple(dim(1) if a in axes else d for a, d in enumerate(x.shape))
    best = k.temp(f"T_{combine}", kept, x.dtype)
    reduce_axes(k, f"T_{combine}", best, Operand.of(x), axes, True, combine)
    extents = [x.shape[a] for a in axes]
    total = product(extents)
    is_float = x.dtype.is_float

    def position(v: PrimExpr, xi: Indices, s: Indices) -> PrimExpr:
        """The flat position of a tap holding the extreme (offset by `total` for floats, so
        that a NaN, at its plain position, comes first), else past every position."""
        flat = linear_index([xi[a] for a in axes], extents)
        m = best.vload(*[ZERO if a in axes else xi[a] for a in range(x.ndim)])
        if not is_float:
            return select(binop("eq", v, m), flat, total)
        hit = select(binop("eq", v, m), binop("add", flat, total),
                     binop("mul", total, dim(2)))
        return select(binop("ne", v, v), flat, hit)

    if not is_float:
        reduce_axes(k, f"T_{name}", result, Operand.of(x), axes, keepdims, "min", position)
        return k
    found = k.temp("T_position", result.shape, INT64)
    reduce_axes(k, "T_position", found, Operand.of(x), axes, keepdims, "min", position)

    def unshift(i: Indices) -> PrimExpr:
        p = found.vload(*i)
        return select(binop("ge", p, total), binop("sub", p, total), p)

    k.compute(f"T_{name}", result, unshift)
    return k


@legalizer("collapse_sum_like", "collapse_sum_to")
def collapse_sum(oc: OpCall, out: StructInfo) -> Kernel:
    """Each target element sums the data over the leading axes and those where the target
    has 1: the kept axes read the output index, the reduced ones a reduction variable."""
    k = Kernel("collapse_sum")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    result = k.output("T_collapse_sum", out_tensor(out))
    data_shape = tuple(oc.tensor("data").shape or ())
    lead, ones = collapse_axes(oc, data_shape, collapse_target(oc))
    reduced = lead + ones

    def value(s: Indices, r: Indices) -> PrimExpr:
        idx = [r[reduced.index(a)] if a in reduced else s[a - len(lead)]
               for a in range(x.ndim)]
        return x.vload(*idx)

    k.reduce("T_collapse_sum", result, [x.shape[a] for a in reduced], "add",
             init_value("add", result.dtype), value)
    return k


@legalizer("topk")
def topk(oc: OpCall, out: StructInfo) -> Kernel:
    """Each element's rank along the axis (how many come before it: larger ones, or equal
    ones earlier, for `largest`), then for each of the k first ranks the position holding
    it (the one element of that rank) and the data there."""
    axis, count = topk_axis(oc)
    k = Kernel("topk")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    ret = oc.values["ret_type"]
    fields = out.fields if isinstance(out, TupleSInfo) else (out,)
    values = k.output("T_topk_values", out_tensor(fields[0])) if ret != "indices" else None
    dt = oc.values["dtype"]
    shape = [dim(count) if a == axis else d for a, d in enumerate(x.shape)]
    positions = k.output("T_topk_indices", out_tensor(fields[-1])) if ret != "values" else \
        k.temp("T_topk_indices", shape, dt)
    before = "gt" if oc.values["largest"] else "lt"

    def other(i: Indices, j: PrimExpr) -> Indices:
        return (*i[:axis], j, *i[axis + 1:])

    def precedes(i: Indices, r: Indices) -> PrimExpr:
        """1 when the element at position r[0] of i's row comes before element i."""
        them, me = x.vload(*other(i, r[0])), x.vload(*i)
        first = binop("or", binop(before, them, me),
                      binop("and", binop("eq", them, me), binop("lt", r[0], i[axis])))
        return select(first, const(1, INT64), const(0, INT64))

    rank = k.temp("T_rank", list(x.shape), INT64)
    k.reduce("T_rank", rank, [x.shape[axis]], "add", const(0, INT64), precedes)

    def holder(s: Indices, r: Indices) -> PrimExpr:
        """Position r[0] when its element has the rank s[axis], else 0."""
        return select(binop("eq", rank.vload(*other(s, r[0])), s[axis]), cast(dt, r[0]),
                      const(0, dt))

    k.reduce("T_topk_indices", positions, [x.shape[axis]], "add", const(0, dt), holder)
    if values is not None:
        k.compute("T_topk_values", values,
                  lambda i: x.vload(*other(i, cast(INT64, positions.vload(*i)))))
    return k


@legalizer("bucketize")
def bucketize(oc: OpCall, out: StructInfo) -> Kernel:
    """Each element's count of the boundaries below it (at or below it, for `right`)."""
    k = Kernel("bucketize")
    x = k.input("A", oc.values["input_tensor"], oc.tensor("input_tensor"))
    b = k.input("boundaries", oc.values["boundaries"], oc.tensor("boundaries"))
    y = k.output("T_bucketize", out_tensor(out))
    below = "le" if oc.values["right"] else "lt"
    k.reduce("T_bucketize", y, [b.shape[0]], "add", const(0, y.dtype),
             lambda i, r: select(binop(below, b.vload(r[0]), x.vload(*i)), const(1, y.dtype),
                                 const(0, y.dtype)))
    return k
