"""`matmul`: NumPy's matrix product with batch broadcasting and 1-D operands."""

from __future__ import annotations

from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.elementwise import broadcast_shapes
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dim, dims_equal, shape_text


def _matmul(oc: OpCall) -> StructInfo:
    a, b = oc.tensor("x1"), oc.tensor("x2")
    out_dtype = oc.values["out_dtype"]
    if out_dtype is None or str(out_dtype) == "void":  # TVM prints "void" for "the inputs'"
        dt = oc.same_dtype("x1", "x2")
    else:
        dt = out_dtype
    assert a.shape is not None and b.shape is not None
    if not a.shape or not b.shape:
        oc.error("operands must have at least one dimension")
    sa = a.shape if len(a.shape) > 1 else (dim(1),) + a.shape
    sb = b.shape if len(b.shape) > 1 else b.shape + (dim(1),)
    if not dims_equal(sa[-1], sb[-2]):
        oc.error(f"reduction dimensions differ: {shape_text(a.shape)} @ {shape_text(b.shape)}")
    batch = broadcast_shapes(oc, sa[:-2], sb[:-2])
    out = batch + (sa[-2],) * (len(a.shape) > 1) + (sb[-1],) * (len(b.shape) > 1)
    return TensorSInfo(out, dt, len(out))


register("matmul", [Param("x1", "tensor"), Param("x2", "tensor"),
                    Param("out_dtype", "dtype", None)], _matmul)
