"""`matmul`: NumPy's matrix product with batch broadcasting and 1-D operands; `einsum`:
NumPy's Einstein summation (explicit `->` or implicit output, no ellipsis)."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.ops.elementwise import broadcast_shapes
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import dim, dim_text, dims_match, shape_text


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
    if not dims_match(sa[-1], sb[-2]):
        oc.error(f"reduction dimensions differ: {shape_text(a.shape)} @ {shape_text(b.shape)}")
    batch = broadcast_shapes(oc, sa[:-2], sb[:-2])
    out = batch + (sa[-2],) * (len(a.shape) > 1) + (sb[-1],) * (len(b.shape) > 1)
    return TensorSInfo(out, dt, len(out))


register("matmul", [Param("x1", "tensor"), Param("x2", "tensor"),
                    Param("out_dtype", "dtype", None)], _matmul)


def einsum_labels(oc: OpCall) -> tuple[list[str], str, dict[str, PrimExpr]]:
    """The operands' labels, the result's (NumPy's implicit output: the labels written once,
    sorted) and each label's size; an error for a malformed or unsupported `subscripts`."""
    tensors = oc.tensors("operands")
    subs = oc.values["subscripts"].replace(" ", "")
    if "." in subs:
        oc.error(f"an ellipsis in the subscripts {subs!r} is not supported")
    lhs, arrow, rhs = subs.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(tensors):
        oc.error(f"the subscripts {subs!r} name {len(inputs)} operands, got {len(tensors)}")
    sizes: dict[str, PrimExpr] = {}
    for n, (labels, t) in enumerate(zip(inputs, tensors)):
        assert t.shape is not None
        if labels and not labels.isalpha():
            oc.error(f"the subscripts {subs!r} must be letters")
        if len(labels) != len(t.shape):
            oc.error(f"operand {n} has {len(t.shape)} dimensions, its subscripts "
                     f"{labels!r} {len(labels)}")
        for c, d in zip(labels, t.shape):
            if c in sizes and not dims_match(sizes[c], d):
                oc.error(f"label {c!r} has the sizes {dim_text(sizes[c])} and {dim_text(d)}")
            sizes.setdefault(c, d)
    if not arrow:
        rhs = "".join(sorted(c for c in sizes if lhs.count(c) == 1))
    elif not (rhs.isalpha() or not rhs) or len(set(rhs)) != len(rhs) or \
            any(c not in sizes for c in rhs):
        oc.error(f"the output subscripts {rhs!r} must be distinct labels of the operands")
    return inputs, rhs, sizes


def _einsum(oc: OpCall) -> StructInfo:
    dts = {t.dtype for t in oc.tensors("operands") if t.dtype is not None}
    if len(dts) > 1:
        oc.error(f"dtype mismatch: {' and '.join(sorted(str(d) for d in dts))}")
    _, rhs, sizes = einsum_labels(oc)
    shape = tuple(sizes[c] for c in rhs)
    return TensorSInfo(shape, next(iter(dts), None), len(shape))


register("einsum", [Param("operands", "tensors"), Param("subscripts", "str")], _einsum)
