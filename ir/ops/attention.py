"""Fused multi-head attention (`nn.attention`), with TVM Relax's parameters and checks.

Every operand is 4-D in the BSNH layout: query `(batch, seq, heads, head_dim)`, key
`(batch, seq_kv, heads, head_dim)`, value `(batch, seq_kv, heads, head_dim_v)`; the result is
`(batch, seq, heads, head_dim_v)`. The optional `bias` is 4-D, its last axis `seq_kv` and the
others equal to `(batch, heads, seq)` or 1 (broadcast). `causal_mask` is `TopLeft`
(`np.tril(k=0)`) or `BottomRight` (`np.tril(k=abs(seq - seq_kv))`, as TVM defines it).
Sliding-window attention (`window_size`) is refused, as TVM's legalization refuses it; so are
key and value with fewer heads than the query (grouped-query attention), which TVM's shape
inference accepts but its legalization cannot reshape.
"""

from __future__ import annotations

from tirc.ir.expr import PrimExpr
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import const_dim, dim_text, dims_match, shape_text

CAUSAL_MASKS = ("TopLeft", "BottomRight")
AXES = ("batch size", "sequence length", "number of heads", "head dimension")


def _same(oc: OpCall, a: str, b: str, axis: int, x: PrimExpr, y: PrimExpr) -> None:
    """An error unless dimension `axis` of the operands `a` and `b` (sizes `x`, `y`) agree."""
    if not dims_match(x, y):
        oc.error(f"the {a} has {AXES[axis]} {dim_text(x)} but the {b} has {dim_text(y)}")


def _attention(oc: OpCall) -> StructInfo:
    names = ("query", "key", "value")
    q, k, v = (oc.tensor(n) for n in names)
    for name, s in zip(names, (q, k, v)):
        assert s.shape is not None
        if len(s.shape) != 4:
            oc.error(f"'{name}' must have 4 dimensions (batch, sequence, heads, head "
                     f"dimension), got {shape_text(s.shape)}")
    with_bias = oc.values["bias"] is not None
    dt = oc.same_dtype(*names, *(("bias",) if with_bias else ()))
    if dt is not None and not dt.is_float:
        oc.error(f"needs floating-point tensors, got {dt}")
    assert q.shape is not None and k.shape is not None and v.shape is not None
    batch, seq, heads, head_dim = q.shape
    seq_kv = k.shape[1]
    for name, s in (("key", k), ("value", v)):
        assert s.shape is not None
        _same(oc, "query", name, 0, batch, s.shape[0])
        if not dims_match(heads, s.shape[2]):
            oc.error(f"the query has {dim_text(heads)} heads but the {name} has "
                     f"{dim_text(s.shape[2])} (grouped-query attention is not supported)")
    _same(oc, "key", "value", 1, seq_kv, v.shape[1])
    _same(oc, "query", "key", 3, head_dim, k.shape[3])
    if with_bias:
        bias = oc.tensor("bias")
        assert bias.shape is not None
        if len(bias.shape) != 4:
            oc.error(f"'bias' must have 4 dimensions (batch, heads, sequence, key sequence), "
                     f"got {shape_text(bias.shape)}")
        want = (batch, heads, seq, seq_kv)
        for axis, (b, w) in enumerate(zip(bias.shape, want)):
            if axis < 3 and const_dim(b) == 1:
                continue  # broadcast: no size to assume equal (a run-time check would refuse)
            if not dims_match(b, w):
                oc.error(f"'bias' of shape {shape_text(bias.shape)} does not broadcast to "
                         f"(batch, heads, seq, seq_kv) = {shape_text(want)}")
    mask = oc.values["causal_mask"]
    if mask is not None and mask not in CAUSAL_MASKS:
        oc.error(f"unknown causal_mask '{mask}' (expected 'TopLeft' or 'BottomRight')")
    if oc.values["window_size"] is not None:
        oc.error("sliding-window attention (window_size) is not supported: TVM's "
                 "legalization refuses it too")
    shape = (batch, seq, heads, v.shape[3])
    return TensorSInfo(shape, dt, 4)


register("nn.attention", [
    Param("query", "tensor"), Param("key", "tensor"), Param("value", "tensor"),
    Param("bias", "tensor", None), Param("scale", "float", None),
    Param("causal_mask", "str", None), Param("window_size", "int", None)], _attention)
