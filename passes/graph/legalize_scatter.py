"""Legalization of `scatter_elements` as the gather it equals: each output element reduces
the updates whose index names it, so that no store depends on an index."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop, cast, const, if_then_else, select
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import INT64, dims_equal
from tirc.passes.graph.kernel import ZERO, Indices, Kernel, limit
from tirc.passes.graph.legalize_reduction import init_value
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("scatter_elements")
def scatter_elements(oc: OpCall, out: StructInfo) -> Kernel:
    """Each output element reduces over the positions `k` along `axis` of the indices in its
    row (the same coordinates off the axis) those whose index, negative ones wrapped once,
    names it: `update` takes the last (a max over k), `add`/`mul` sum or multiply them onto
    the data, `min`/`max` fold them with it, and TVM's sequential `mean` ((old + new) / 2
    per update, in order) weighs the data by 0.5^m and the j-th of m updates by 0.5^(m-j+1),
    from a product over the later updates to the same element. An index out of range names
    no element: the output is never written outside its bounds."""
    k = Kernel("scatter_elements")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    ind = k.input("indices", oc.values["indices"], oc.tensor("indices"))
    upd = k.input("updates", oc.values["updates"], oc.tensor("updates"))
    y = k.output("T_scatter_elements", out_tensor(out))
    a = oc.axis(oc.values["axis"], x.ndim)
    reduction = oc.values["reduction"]
    dt = y.dtype
    rows = [b for b in range(x.ndim) if b != a and not dims_equal(ind.shape[b], x.shape[b])]

    def at(p: Indices, pos: PrimExpr) -> Indices:
        return tuple(pos if b == a else p[b] for b in range(x.ndim))

    def target(p: Indices, pos: PrimExpr) -> PrimExpr:
        raw = cast(INT64, ind.vload(*at(p, pos)))
        return select(binop("lt", raw, ZERO), binop("add", raw, x.shape[a]), raw)

    def named(p: Indices, pos: PrimExpr) -> PrimExpr:
        return binop("eq", target(p, pos), p[a])

    def guarded(p: Indices, value: PrimExpr, otherwise: PrimExpr) -> PrimExpr:
        """`value` where the indices have a row for output element `p`, else `otherwise`."""
        if not rows:
            return value
        cond = binop("lt", p[rows[0]], ind.shape[rows[0]])
        for b in rows[1:]:
            cond = binop("and", cond, binop("lt", p[b], ind.shape[b]))
        return if_then_else(cond, value, otherwise)

    extent = [ind.shape[a]]
    if reduction == "update":
        last = k.temp("T_last", y.shape, INT64)
        none = const(-1, INT64)
        k.reduce("T_last", last, extent, "max", limit(INT64, highest=False),
                 lambda p, r: guarded(p, select(named(p, r[0]), r[0], none), none))
        k.compute("T_scatter_elements", y, lambda p: if_then_else(
            binop("ge", last.vload(*p), ZERO), upd.vload(*at(p, last.vload(*p))), x.vload(*p)))
        return k
    if reduction == "mean":
        half, one = const(0.5, dt), const(1, dt)
        later = k.temp("T_later", ind.shape, dt)

        def after(q: Indices, r: Indices) -> PrimExpr:
            same = binop("and", binop("gt", r[0], q[a]),
                         binop("eq", target(q, r[0]), target(q, q[a])))
            return select(same, half, one)

        k.reduce("T_later", later, extent, "mul", one, after)
        keep = k.temp("T_keep", y.shape, dt)
        k.reduce("T_keep", keep, extent, "mul", one,
                 lambda p, r: guarded(p, select(named(p, r[0]), half, one), one))
        total = k.temp("T_sum", y.shape, dt)

        def weighted(p: Indices, r: Indices) -> PrimExpr:
            w = binop("mul", binop("mul", upd.vload(*at(p, r[0])), half),
                      later.vload(*at(p, r[0])))
            return guarded(p, select(named(p, r[0]), w, const(0, dt)), const(0, dt))

        k.reduce("T_sum", total, extent, "add", const(0, dt), weighted)
        k.compute("T_scatter_elements", y, lambda p: binop(
            "add", binop("mul", x.vload(*p), keep.vload(*p)), total.vload(*p)))
        return k
    combine = {"add": "add", "mul": "mul", "min": "min", "max": "max"}[reduction]
    acc = k.temp("T_acc", y.shape, dt)

    def contribution(p: Indices, r: Indices) -> PrimExpr:
        rest = x.vload(*p) if combine in ("min", "max") else \
            const(0 if combine == "add" else 1, dt)
        return guarded(p, select(named(p, r[0]), upd.vload(*at(p, r[0])), rest), rest)

    k.reduce("T_acc", acc, extent, combine, init_value(combine, dt), contribution)
    k.compute("T_scatter_elements", y,
              lambda p: binop(combine, x.vload(*p), acc.vload(*p)))
    return k
