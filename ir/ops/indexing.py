"""Indexing by index tensors, with TVM 0.27's shape rules: `scatter_nd` (ONNX's ScatterND with
TVM's reductions), `index_tensor` (PyTorch's advanced indexing, `data[I0, I1, ...]`) and
`dynamic_strided_slice` (a strided slice whose bounds are int64 tensors, so that only the
rank of its result is known)."""

from __future__ import annotations

from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.elementwise import broadcast_shapes
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import const_dim, ndim_of, shape_text, shapes_match, tensor

SCATTER_ND_REDUCTIONS = ("update", "add", "mul", "min", "max")


def _scatter_nd(oc: OpCall) -> StructInfo:
    """TVM's scatter_nd: integer indices (..., K) with K constant and at most the data's
    rank, updates of shape indices.shape[:-1] + data.shape[K:] and the data's dtype; the
    result is the data's."""
    x, idx, upd = oc.tensor("data"), oc.tensor("indices"), oc.tensor("updates")
    assert x.shape is not None and idx.shape is not None and upd.shape is not None
    if idx.dtype is not None and not idx.dtype.is_int:
        oc.error(f"indices must be integers, got {idx.dtype}")
    oc.same_dtype("data", "updates")
    reduction = oc.values["reduction"]
    if reduction not in SCATTER_ND_REDUCTIONS:
        oc.error(f"reduction must be one of {', '.join(SCATTER_ND_REDUCTIONS)}, got "
                 f"'{reduction}'")
    if x.dtype is not None and x.dtype.is_bool and reduction != "update":
        oc.error(f"reduction '{reduction}' needs a numeric tensor, got bool")
    if len(idx.shape) == 0:
        oc.error("indices must have at least one axis (the last holds the coordinates)")
    k = const_dim(idx.shape[-1])
    if k is None:
        oc.error(f"the last axis of the indices {shape_text(idx.shape)} must have a constant "
                 "size")
    if not 1 <= k <= len(x.shape):
        oc.error(f"the last axis of the indices {shape_text(idx.shape)} must be in [1, "
                 f"{len(x.shape)}] (the data's rank)")
    want = (*idx.shape[:-1], *x.shape[k:])
    if not shapes_match(upd.shape, want):
        oc.error(f"updates {shape_text(upd.shape)} must have the shape indices.shape[:-1] + "
                 f"data.shape[{k}:] = {shape_text(want)}")
    return x


def _index_tensor(oc: OpCall) -> StructInfo:
    """TVM's index_tensor: k (1 <= k <= rank) integer index tensors broadcast together to B;
    the result is B + data.shape[k:], of the data's dtype."""
    x = oc.tensor("data")
    assert x.shape is not None
    idx = oc.tensors("indices")
    if not idx:
        oc.error("needs at least one index tensor")
    if len(idx) > len(x.shape):
        oc.error(f"{len(idx)} index tensors for data {shape_text(x.shape)} of rank "
                 f"{len(x.shape)}")
    shape: tuple = ()
    for n, s in enumerate(idx):
        if s.dtype is not None and not s.dtype.is_int:
            oc.error(f"index tensor {n} must have an integer dtype, got {s.dtype}")
        assert s.shape is not None
        shape = broadcast_shapes(oc, shape, s.shape)
    return tensor((*shape, *x.shape[len(idx):]), x.dtype)


def _dynamic_strided_slice(oc: OpCall) -> StructInfo:
    """TVM's dynamic_strided_slice: begin, end and strides are 1-d int64 tensors of one entry
    per axis of the data; the result has the data's dtype and rank, its shape unknown."""
    x = oc.tensor("data", known_shape=False)
    ndim = ndim_of(x)
    for name in ("begin", "end", "strides"):
        s = oc.tensor(name, known_shape=False)
        if ndim_of(s) not in (-1, 1):
            oc.error(f"{name} must be a 1-d tensor (one entry per axis), got rank {ndim_of(s)}")
        if s.dtype is not None and str(s.dtype) != "int64":
            oc.error(f"{name} must be int64, got {s.dtype}")
        n = const_dim(s.shape[0]) if s.shape is not None and len(s.shape) == 1 else None
        if n is not None and ndim != -1 and n != ndim:
            oc.error(f"{name} has {n} entries for data of rank {ndim}")
    return TensorSInfo(None, x.dtype, ndim)


register("scatter_nd", [Param("data", "tensor"), Param("indices", "tensor"),
                        Param("updates", "tensor"), Param("reduction", "str", "update")],
         _scatter_nd)
register("index_tensor", [Param("data", "tensor"), Param("indices", "tensors")], _index_tensor)
register("dynamic_strided_slice", [Param("data", "tensor"), Param("begin", "tensor"),
                                   Param("end", "tensor"), Param("strides", "tensor")],
         _dynamic_strided_slice)
