"""Legalization of `scatter_nd` as the gather it equals (each output element reduces the
updates whose index row names it, so no store depends on an index) and of `index_tensor`
(each output element reads the data at its broadcast index tensors' values)."""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.arith import simplify
from tirc.ir.buffer import Buffer
from tirc.ir.expr import PrimExpr, binop, cast, const, if_then_else, select
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import INT64, dim, product
from tirc.passes.graph.kernel import ZERO, Indices, Kernel, broadcast_indices
from tirc.passes.graph.legalize_manipulation import tuple_operand_fields
from tirc.passes.graph.legalize_reduction import init_value
from tirc.passes.graph.legalize_table import legalizer, out_tensor


def _unravel(flat: PrimExpr, shape: Sequence[PrimExpr]) -> Indices:
    """The row-major indices of position `flat` in a tensor of `shape`."""
    out: list[PrimExpr] = []
    for k in reversed(range(len(shape))):
        out.append(binop("floormod", flat, shape[k]) if k else flat)
        flat = binop("floordiv", flat, shape[k])
    return tuple(reversed(out))


def wrapped(raw: PrimExpr, size: PrimExpr) -> PrimExpr:
    """An index read from a tensor as int64, a negative one counted from the end of `size`."""
    value = cast(INT64, raw)
    return select(binop("lt", value, ZERO), binop("add", value, size), value)


@legalizer("scatter_nd")
def scatter_nd(oc: OpCall, out: StructInfo) -> Kernel:
    """Output element (p_0..p_K-1, r...) reduces over the index rows q (flattened) whose
    coordinates name it: `update` takes the last such row (a max over q), `add`/`mul` sum or
    multiply the updates onto the data, `min`/`max` fold them with it. A row out of range
    names no element."""
    k = Kernel("scatter_nd")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    ind = k.input("indices", oc.values["indices"], oc.tensor("indices"))
    upd = k.input("updates", oc.values["updates"], oc.tensor("updates"))
    y = k.output("T_scatter_nd", out_tensor(out))
    rows = ind.shape[:-1]
    depth = len(ind.shape) - 1
    width = len(x.shape) - len(upd.shape) + depth
    extent = [simplify(product(rows))] if rows else [dim(1)]
    reduction = oc.values["reduction"]

    def row(r: PrimExpr) -> Indices:
        return _unravel(r, rows) if rows else ()

    def named(p: Indices, r: PrimExpr) -> PrimExpr:
        q = row(r)
        cond = None
        for j in range(width):
            eq = binop("eq", wrapped(ind.vload(*q, dim(j)), x.shape[j]), p[j])
            cond = eq if cond is None else binop("and", cond, eq)
        assert cond is not None
        return cond

    def update_at(p: Indices, r: PrimExpr) -> PrimExpr:
        return upd.vload(*row(r), *p[width:])

    if reduction == "update":
        last = k.temp("T_last", y.shape, INT64)
        none = const(-1, INT64)
        k.reduce("T_last", last, extent, "max", none,
                 lambda p, r: select(named(p, r[0]), r[0], none))
        k.compute("T_scatter_nd", y, lambda p: if_then_else(
            binop("ge", last.vload(*p), ZERO), update_at(p, last.vload(*p)), x.vload(*p)))
        return k
    acc = k.temp("T_acc", y.shape, y.dtype)

    def contribution(p: Indices, r: Indices) -> PrimExpr:
        rest = x.vload(*p) if reduction in ("min", "max") else \
            const(0 if reduction == "add" else 1, y.dtype)
        return select(named(p, r[0]), update_at(p, r[0]), rest)

    k.reduce("T_acc", acc, extent, reduction, init_value(reduction, y.dtype), contribution)
    k.compute("T_scatter_nd", y, lambda p: binop(reduction, x.vload(*p), acc.vload(*p)))
    return k


@legalizer("index_tensor")
def index_tensor(oc: OpCall, out: StructInfo) -> Kernel:
    """Output (b..., r...) reads data (I0[b], I1[b], ..., r...), each index tensor read where
    NumPy broadcasting pairs it with b (a negative index from the end of its axis)."""
    k = Kernel("index_tensor")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    picks: list[Buffer] = [k.input(f"I{n}", arg, s) for n, (arg, s) in enumerate(
        zip(tuple_operand_fields(oc.values["indices"]), oc.tensors("indices")))]
    y = k.output("T_index_tensor", out_tensor(out))
    lead = y.ndim - (x.ndim - len(picks))

    def value(i: Indices) -> PrimExpr:
        b, shape = i[:lead], y.shape[:lead]
        at = [wrapped(p.vload(*broadcast_indices(b, p.shape, shape)), x.shape[a])
              for a, p in enumerate(picks)]
        return x.vload(*at, *i[lead:])

    k.compute("T_index_tensor", y, value)
    return k
