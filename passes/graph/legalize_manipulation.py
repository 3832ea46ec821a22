"""Legalization of shape manipulation: each output element reads the input element it comes
from (`reshape` through the row-major linear index, `concat` through a chain of
`T.if_then_else`, `split` with one block per part)."""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.arith import simplify
from tirc.ir.expr import PrimExpr, binop, cast, if_then_else, select
from tirc.ir.graph import GraphExpr, PrimSInfo, StructInfo, Tuple, TupleGetItem, TupleSInfo
from tirc.ir.ops.manipulation import split_bounds, take_indices
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import (
    INT64,
    const_dim,
    dim,
    dims_equal,
    product,
    simplify_dim,
)
from tirc.passes.graph.kernel import ZERO, Indices, Kernel, Operand
from tirc.passes.graph.legalize_table import legalizer, out_tensor


def linear_index(indices: Sequence[PrimExpr], shape: Sequence[PrimExpr]) -> PrimExpr:
    """The row-major offset of `indices` in a tensor of `shape`."""
    total: PrimExpr = ZERO
    for i, d in zip(indices, shape):
        total = binop("add", binop("mul", total, d), i)
    return total


def unravel(offset: PrimExpr, shape: Sequence[PrimExpr]) -> Indices:
    """The indices of a row-major offset in a tensor of `shape`."""
    out = []
    stride: PrimExpr = dim(1)
    for k in range(len(shape) - 1, -1, -1):
        q = binop("floordiv", offset, stride) if k < len(shape) - 1 else offset
        out.append(simplify(binop("floormod", q, shape[k]) if k > 0 else q))
        stride = binop("mul", stride, shape[k])
    return tuple(reversed(out))


def reshape_groups(src: Sequence[PrimExpr], dst: Sequence[PrimExpr]
                   ) -> list[tuple[list[int], list[int]]] | None:
    """Runs of source and destination axes with equal sizes (`(b, s, 64)` -> `(b, s, 4, 16)`:
    [0]-[0], [1]-[1], [2]-[2, 3]), or None when sizes cannot be matched up statically."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) and j < len(dst):
        a, b = [i], [j]
        pa, pb = src[i], dst[j]
        i, j = i + 1, j + 1
        while not dims_equal(pa, pb):
            ca, cb = const_dim(simplify_dim(pa)), const_dim(simplify_dim(pb))
            if ca is None or cb is None:
                return None
            if ca < cb and i < len(src):
                a.append(i)
                pa, i = binop("mul", pa, src[i]), i + 1
            elif cb < ca and j < len(dst):
                b.append(j)
                pb, j = binop("mul", pb, dst[j]), j + 1
            else:
                return None
        groups.append((a, b))
    if not groups:
        return [(list(range(len(src))), list(range(len(dst))))]
    groups[-1][0].extend(range(i, len(src)))
    groups[-1][1].extend(range(j, len(dst)))
    return groups


@legalizer("reshape", "flatten")
def reshape(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("reshape")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_reshape", out_tensor(out))
    groups = reshape_groups(x.shape, y.shape) or [(list(range(x.ndim)), list(range(y.ndim)))]

    def value(i: Indices) -> PrimExpr:
        idx: list[PrimExpr] = [ZERO] * x.ndim
        for src, dst in groups:
            offset = linear_index([i[d] for d in dst], [y.shape[d] for d in dst])
            for a, v in zip(src, unravel(offset, [x.shape[a] for a in src])):
                idx[a] = v
        return x.vload(*idx)

    k.compute("T_reshape", y, value)
    return k


@legalizer("permute_dims")
def permute_dims(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("transpose")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_transpose", out_tensor(out))
    axes = oc.values["axes"]
    order = ([oc.axis(a, x.ndim) for a in axes] if axes is not None
             else list(reversed(range(x.ndim))))

    def value(i: Indices) -> PrimExpr:
        idx: list[PrimExpr] = [ZERO] * x.ndim
        for j, a in enumerate(order):
            idx[a] = i[j]
        return x.vload(*idx)

    k.compute("T_transpose", y, value)
    return k


@legalizer("expand_dims")
def expand_dims(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("expand_dims")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_expand_dims", out_tensor(out))
    added = oc.axes(oc.values["axis"], y.ndim)
    k.compute("T_expand_dims", y,
              lambda i: x.vload(*[v for a, v in enumerate(i) if a not in added]))
    return k


@legalizer("squeeze")
def squeeze(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("squeeze")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_squeeze", out_tensor(out))
    values = oc.values["axis"]
    dropped = (oc.axes(values, x.ndim) if values is not None
               else [a for a, d in enumerate(x.shape) if const_dim(d) == 1])

    def value(i: Indices) -> PrimExpr:
        rest = iter(i)
        return x.vload(*[ZERO if a in dropped else next(rest) for a in range(x.ndim)])

    k.compute("T_squeeze", y, value)
    return k


@legalizer("concat")
def concat(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("concatenate")
    parts = [k.input(chr(ord("A") + n), arg, s)
             for n, (arg, s) in enumerate(zip(tuple_operand_fields(oc.values["tensors"]),
                                              oc.tensors("tensors")))]
    y = k.output("T_concat", out_tensor(out))
    axis = oc.axis(oc.values["axis"], y.ndim)
    offsets: list[PrimExpr] = [ZERO]
    for p in parts[:-1]:
        offsets.append(simplify(binop("add", offsets[-1], p.shape[axis])))

    def value(i: Indices) -> PrimExpr:
        def load(n: int) -> PrimExpr:
            idx = list(i)
            idx[axis] = simplify(binop("sub", i[axis], offsets[n])) if n else i[axis]
            return parts[n].vload(*idx)

        expr = load(len(parts) - 1)
        for n in range(len(parts) - 2, -1, -1):
            expr = if_then_else(binop("lt", i[axis], offsets[n + 1]), load(n), expr)
        return expr

    k.compute("T_concat", y, value)
    return k


def tuple_operand_fields(v: object) -> list:
    """The tensors of a tuple argument: a tuple's fields, or `t[k]` of a tuple variable (which
    legalize-ops binds to variables of their own)."""
    if isinstance(v, Tuple):
        return list(v.fields)
    sinfo = getattr(v, "struct_info", None)
    assert isinstance(v, GraphExpr) and isinstance(sinfo, TupleSInfo)
    return [TupleGetItem(v, k) for k in range(len(sinfo.fields))]


@legalizer("split")
def split(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("split")
    s = oc.tensor("x")
    x = k.input("A", oc.values["x"], s)
    assert isinstance(out, TupleSInfo) and s.shape is not None
    axis = oc.axis(oc.values["axis"], x.ndim)
    bounds = split_bounds(x.shape[axis], oc.values["indices_or_sections"])
    for n, (field, (begin, _)) in enumerate(zip(out.fields, bounds)):
        y = k.output(f"T_split_{n}", out_tensor(field))

        def value(i: Indices, begin: PrimExpr = begin) -> PrimExpr:
            idx = list(i)
            idx[axis] = binop("add", i[axis], begin)
            return x.vload(*idx)

        k.compute(f"T_split_{n}", y, value)
    return k


@legalizer("take")
def take(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("take")
    x = k.input("A", oc.values["x"], oc.tensor("x"))
    idx = take_indices(oc)
    assert idx.dtype is not None
    if isinstance(oc.sinfo.get("indices"), PrimSInfo):  # an R.Prim index
        ind = k.scalar_operand("index", oc.values["indices"], idx.dtype)
    else:
        ind = Operand.of(k.input("indices", oc.values["indices"], idx))
    y = k.output("T_take", out_tensor(out))
    axis = oc.values["axis"]
    a = oc.axis(axis, x.ndim) if axis is not None else None

    mode = oc.values["mode"]

    def position(raw: PrimExpr, size: PrimExpr) -> PrimExpr:
        """The element an index names under TVM's `mode`."""
        if mode == "clip":
            return binop("max", binop("min", raw, binop("sub", size, 1)), ZERO)
        if mode == "wrap":
            return binop("floormod", raw, size)
        return select(binop("lt", raw, ZERO), binop("add", raw, size), raw)

    rank = len(ind.shape)

    def value(i: Indices) -> PrimExpr:
        lo = a if a is not None else 0
        raw = cast(INT64, ind(*i[lo:lo + rank]))
        if a is None:
            return x.vload(*unravel(position(raw, product(x.shape)), x.shape))
        return x.vload(*i[:a], position(raw, x.shape[a]), *i[a + rank:])

    k.compute("T_take", y, value)
    return k


@legalizer("gather_elements")
def gather_elements(oc: OpCall, out: StructInfo) -> Kernel:
    """Each output element reads the data at its own coordinates, the `axis` one replaced by
    its index (a negative index from the end)."""
    k = Kernel("gather_elements")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    ind = k.input("indices", oc.values["indices"], oc.tensor("indices"))
    y = k.output("T_gather_elements", out_tensor(out))
    a = oc.axis(oc.values["axis"], x.ndim)

    def value(i: Indices) -> PrimExpr:
        raw = cast(INT64, ind.vload(*i))
        idx = select(binop("lt", raw, ZERO), binop("add", raw, x.shape[a]), raw)
        return x.vload(*i[:a], idx, *i[a + 1:])

    k.compute("T_gather_elements", y, value)
    return k


@legalizer("gather_nd")
def gather_nd(oc: OpCall, out: StructInfo) -> Kernel:
    """Output (b.., i.., r..) reads data (b.., indices[b.., i.., 0..M-1], r..) (a negative
    index from the end of its axis)."""
    k = Kernel("gather_nd")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    ind = k.input("indices", oc.values["indices"], oc.tensor("indices"))
    y = k.output("T_gather_nd", out_tensor(out))
    b = oc.values["batch_dims"]
    m = const_dim(ind.shape[-1])
    assert m is not None
    lead = ind.ndim - 1

    def value(i: Indices) -> PrimExpr:
        picks = []
        for j in range(m):
            raw = cast(INT64, ind.vload(*i[:lead], dim(j)))
            size = x.shape[b + j]
            picks.append(select(binop("lt", raw, ZERO), binop("add", raw, size), raw))
        return x.vload(*i[:b], *picks, *i[lead:])

    k.compute("T_gather_nd", y, value)
    return k


@legalizer("broadcast_to")
def broadcast_to(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("broadcast_to")
    x = k.operand("A", oc.values["x"], oc.tensor("x"))
    y = k.output("T_broadcast_to", out_tensor(out))
    k.compute("T_broadcast_to", y, lambda i: x.at(i, y.shape))
    return k


@legalizer("nn.pixel_shuffle")
def pixel_shuffle(oc: OpCall, out: StructInfo) -> Kernel:
    """Output (.., c, h, w) reads input (.., c * r * r + (h % r) * r + w % r, h // r, w // r)
    (TOPI's pixel_shuffle)."""
    k = Kernel("pixel_shuffle")
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output("T_pixel_shuffle", out_tensor(out))
    r = dim(oc.values["upscale_factor"])

    def value(i: Indices) -> PrimExpr:
        *lead, c, h, w = i
        channel = binop("add", binop("add", binop("mul", c, binop("mul", r, r)),
                                     binop("mul", binop("floormod", h, r), r)),
                        binop("floormod", w, r))
        return x.vload(*lead, channel, binop("floordiv", h, r), binop("floordiv", w, r))

    k.compute("T_pixel_shuffle", y, value)
    return k
