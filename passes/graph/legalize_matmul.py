"""Legalization of `matmul`: one reduction block `C[b, i, j] += A[b, i, k] * B[b, k, j]`, with
broadcast batch dimensions and 1-D operands as NumPy treats them."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop, cast
from tirc.ir.graph import StructInfo
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
