"""`sparse.matmul`: a sparse matrix (R.SparseTensor) times a dense matrix or vector.

`R.sparse.matmul(A, B)` with `A: R.SparseTensor((m, n), ...)` and `B: R.Tensor((n, k))` (or
`(n,)`) is the dense `(m, k)` (or `(m,)`) product, stored elements of `A` only; the dtypes
agree unless `out_dtype` says otherwise (the product then accumulates in it).
"""

from __future__ import annotations

from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dims_equal, shape_text, sinfo_text


def _sparse_matmul(oc: OpCall) -> StructInfo:
    a, b = oc.sparse("a"), oc.tensor("b")
    assert b.shape is not None
    if len(b.shape) not in (1, 2):
        oc.error(f"the dense operand is a matrix or a vector, got {sinfo_text(b)}")
    if b.dtype is not None and b.dtype != a.dtype and oc.values["out_dtype"] is None:
        oc.error(f"dtype mismatch: {a.dtype} and {b.dtype}")
    if not dims_equal(a.shape[1], b.shape[0]):
        oc.error(f"reduction dimensions differ: {shape_text(a.shape)} @ {shape_text(b.shape)}")
    out = (a.shape[0],) + tuple(b.shape[1:])
    return TensorSInfo(out, oc.values["out_dtype"] or a.dtype, len(out))


register("sparse.matmul", [Param("a", "sparse"), Param("b", "tensor"),
                           Param("out_dtype", "dtype", None)], _sparse_matmul)
