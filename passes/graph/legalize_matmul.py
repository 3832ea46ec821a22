"""Legalization of `matmul`: one reduction block `C[b, i, j] += A[b, i, k] * B[b, k, j]`, with
broadcast batch dimensions and 1-D operands as NumPy treats them; `einsum`: one block summing
the product of the operands over the labels the result does not keep."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop, cast
from tirc.ir.graph import StructInfo, Tuple, TupleGetItem
from tirc.ir.ops.matmul import einsum_labels
from tirc.ir.ops.registry import OpCall
from tirc.passes.graph.kernel import Indices, Kernel, broadcast_indices
from tirc.passes.graph.legalize_reduction import init_value
from tirc.passes.graph.legalize_table import legalizer, out_tensor


@legalizer("matmul")
def matmul(oc: OpCall, out: StructInfo) -> Kernel:
    k = Kernel("matmul")
    a = k.input("A", oc.values["x1"], oc.tensor("x1"))
    b = k.input("B", oc.values["x2"], oc.tensor("x2"))
    c = k.output("matmul", out_tensor(out))
    a_batch = a.shape[:-2]
    b_batch = b.shape[:-2]
    nb = len(c.shape) - (a.ndim > 1) - (b.ndim > 1)
    out_batch = c.shape[:nb]
    reduce_extent = a.shape[-1]

    def value(s: Indices, r: Indices) -> PrimExpr:
        batch, rest = s[:nb], s[nb:]
        kk = r[0]
        ai = broadcast_indices(batch, a_batch, out_batch) + ((rest[0], kk) if a.ndim > 1
                                                             else (kk,))
        bi = broadcast_indices(batch, b_batch, out_batch) + ((kk, rest[-1]) if b.ndim > 1
                                                             else (kk,))
        x, y = a.vload(*ai), b.vload(*bi)
        return binop("mul", cast(c.dtype, x), cast(c.dtype, y))

    k.reduce("matmul", c, [reduce_extent], "add", init_value("add", c.dtype), value)
    return k


@legalizer("einsum")
def einsum(oc: OpCall, out: StructInfo) -> Kernel:
    """`T[out labels] += A0[labels 0] * A1[labels 1] * ...` over the labels only the operands
    have (none: one spatial block); a label repeated in an operand reads its diagonal."""
    inputs, rhs, _ = einsum_labels(oc)
    arg = oc.values["operands"]
    fields = list(arg.fields) if isinstance(arg, Tuple) else \
        [TupleGetItem(arg, n) for n in range(len(inputs))]
    k = Kernel("einsum")
    bufs = [k.input(f"A{n}", f, t) for n, (f, t) in
            enumerate(zip(fields, oc.tensors("operands")))]
    y = k.output("T_einsum", out_tensor(out))
    summed = [c for c in dict.fromkeys("".join(inputs)) if c not in rhs]

    def value(s: Indices, r: Indices) -> PrimExpr:
        at = {**dict(zip(rhs, s)), **dict(zip(summed, r))}
        loads = [b.vload(*(at[c] for c in labels)) for labels, b in zip(inputs, bufs)]
        product = loads[0]
        for v in loads[1:]:
            product = binop("mul", product, v)
        return product

    # a summed label's extent from the kernel's own buffer (a symbolic size is the kernel's)
    extent = {}
    for labels, b in zip(inputs, bufs):
        for c, d in zip(labels, b.shape):
            extent.setdefault(c, d)
    if summed:
        k.reduce("T_einsum", y, [extent[c] for c in summed], "add", init_value("add", y.dtype),
                 value)
    else:
        k.compute("T_einsum", y, lambda i: value(i, ()))
    return k
