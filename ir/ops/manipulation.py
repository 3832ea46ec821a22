"""Shape manipulation: reshape, permute_dims, expand_dims, squeeze, concat, split, take,
broadcast_to, gather_elements, gather_nd, and scatter_elements (ONNX's ScatterElements, TVM's
reductions)."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop
from tirc.ir.graph import PrimSInfo, ShapeExpr, StructInfo, TensorSInfo, TupleSInfo
from tirc.ir.ops.elementwise import broadcast_shapes
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import (
    const_dim,
    dim,
    dims_match,
    divide_product,
    product,
    shape_text,
    shapes_match,
    simplify_dim,
    tensor,
)


def target_shape(oc: OpCall, name: str = "shape") -> tuple[PrimExpr, ...]:
    """The dimensions of a shape argument (a shape literal or a shape-typed value)."""
    v = oc.values[name]
    if isinstance(v, ShapeExpr):
        return tuple(dim(d) for d in v.values)
    from tirc.ir.graph import ShapeSInfo

    s = oc.sinfo.get(name)
    if isinstance(s, ShapeSInfo) and s.values is not None:
        return tuple(dim(d) for d in s.values)
    oc.error(f"argument '{name}' must be a shape with known values")


def _reshape(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    shape = list(target_shape(oc))
    inferred = [k for k, d in enumerate(shape) if const_dim(d) == -1]
    if len(inferred) > 1:
        oc.error("at most one dimension may be -1")
    total = product(x.shape)
    if inferred:
        rest = [d for k, d in enumerate(shape) if k != inferred[0]]
        shape[inferred[0]] = divide_product(x.shape, rest)
    if not dims_match(product(shape), total):
        oc.error(f"cannot reshape {shape_text(x.shape)} to {shape_text(target_shape(oc))}")
    return tensor(shape, x.dtype)


def _flatten(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    return tensor([product(x.shape)], x.dtype)


def _permute_dims(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    nd = len(x.shape)
    axes = oc.values["axes"]
    if axes is None:
        order = list(reversed(range(nd)))
    else:
        order = [oc.axis(a, nd, "axes entry") for a in axes]
        if sorted(order) != list(range(nd)):
            oc.error(f"axes {tuple(axes)} are not a permutation of {nd} dimensions")
    return tensor([x.shape[a] for a in order], x.dtype)


def _expand_dims(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    values = oc.values["axis"]
    out_nd = len(x.shape) + len(values)
    axes = oc.axes(values, out_nd)
    dims = iter(x.shape)
    return tensor([dim(1) if k in axes else next(dims) for k in range(out_nd)], x.dtype)


def _squeeze(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    values = oc.values["axis"]
    if values is None:
        for d in x.shape:
            if const_dim(d) is None:
                oc.error(f"axis=None with the symbolic dimension in {shape_text(x.shape)}; "
                         "give the axes to squeeze")
        axes = [k for k, d in enumerate(x.shape) if const_dim(d) == 1]
    else:
        axes = oc.axes(values, len(x.shape))
        for a in axes:
            if const_dim(x.shape[a]) != 1:
                oc.error(f"dimension {a} of {shape_text(x.shape)} is not 1")
    return tensor([d for k, d in enumerate(x.shape) if k not in axes], x.dtype)


def _concat(oc: OpCall) -> StructInfo:
    parts = oc.tensors("tensors")
    if not parts:
        oc.error("needs at least one tensor")
    nd = len(parts[0].shape or ())
    dts = {str(p.dtype) for p in parts if p.dtype is not None}
    if len(dts) > 1:
        oc.error(f"dtype mismatch: {' and '.join(sorted(dts))}")
    axis = oc.axis(oc.values["axis"], nd)
    first = parts[0].shape or ()
    total: PrimExpr = dim(0)
    for p in parts:
        shape = p.shape or ()
        if len(shape) != nd or any(not dims_match(a, b) for k, (a, b) in
                                   enumerate(zip(first, shape)) if k != axis):
            oc.error(f"cannot concatenate {shape_text(first)} with {shape_text(shape)} "
                     f"along axis {axis}")
        total = binop("add", total, shape[axis])
    out = list(first)
    out[axis] = simplify_dim(total)
    return tensor(out, parts[0].dtype)


def split_bounds(size: PrimExpr, spec: int | tuple[int, ...]) -> list[tuple[PrimExpr, PrimExpr]]:
    """(begin, extent) of each part: n sections of ceil(size / n), or cuts at indices."""
    if isinstance(spec, int):
        chunk = simplify_dim(binop("floordiv", binop("add", size, spec - 1), spec))
        cuts = [simplify_dim(binop("min", binop("mul", chunk, k), size)) for k in range(1, spec)]
    else:
        cuts = [simplify_dim(binop("min", dim(c), size)) for c in spec]
    starts = [dim(0)] + cuts
    ends = cuts + [size]
    return [(b, simplify_dim(binop("max", binop("sub", e, b), dim(0))))
            for b, e in zip(starts, ends)]


def _split(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    spec = oc.values["indices_or_sections"]
    if isinstance(spec, int) and spec < 1:
        oc.error(f"sections must be positive, got {spec}")
    if isinstance(spec, tuple) and list(spec) != sorted(spec):
        oc.error(f"split indices {spec} must be increasing")
    axis = oc.axis(oc.values["axis"], len(x.shape))
    fields = []
    for _, extent in split_bounds(x.shape[axis], spec):
        shape = list(x.shape)
        shape[axis] = extent
        fields.append(tensor(shape, x.dtype))
    return TupleSInfo(tuple(fields))


# TVM's take modes: "fast" reads an index in [-size, size) (negative from the end), "clip"
# clamps it into [0, size - 1], "wrap" takes it modulo the size.
TAKE_MODES = ("fast", "clip", "wrap")


def take_indices(oc: OpCall) -> TensorSInfo:
    """R.take's indices: a tensor, or an `R.Prim` integer, which indexes as a 0-d tensor
    does (the axis is dropped), as TVM's."""
    s = oc.sinfo.get("indices")
    if isinstance(s, PrimSInfo):
        return TensorSInfo((), s.dtype, 0)
    return oc.tensor("indices")


def _take(oc: OpCall) -> StructInfo:
    x, idx = oc.tensor("x"), take_indices(oc)
    assert x.shape is not None and idx.shape is not None
    if idx.dtype is not None and not idx.dtype.is_int:
        oc.error(f"indices must be integers, got {idx.dtype}")
    if oc.values["mode"] not in TAKE_MODES:
        oc.error(f"mode must be one of {', '.join(TAKE_MODES)}, got '{oc.values['mode']}'")
    axis = oc.values["axis"]
    if axis is None:
        return tensor(idx.shape, x.dtype)
    a = oc.axis(axis, len(x.shape))
    return tensor(x.shape[:a] + idx.shape + x.shape[a + 1:], x.dtype)


def _indices_within(oc: OpCall, data: tuple, indices: tuple) -> None:
    """Element-wise indices no larger than the data along every axis but `axis` (gather and
    scatter_elements)."""
    axis = oc.axis(oc.values["axis"], len(data))
    for a, (d, i) in enumerate(zip(data, indices)):
        cd, ci = const_dim(d), const_dim(i)
        if a != axis and cd is not None and ci is not None and ci > cd:
            oc.error(f"indices {shape_text(indices)} are larger than the data "
                     f"{shape_text(data)} along axis {a}")


def _gather_elements(oc: OpCall) -> StructInfo:
    """data and indices of one rank, indices no larger than the data off `axis`; the result
    has the indices' shape and the data's dtype (ONNX's GatherElements, PyTorch's gather)."""
    x, idx = oc.tensor("data"), oc.tensor("indices")
    assert x.shape is not None and idx.shape is not None
    if idx.dtype is not None and not idx.dtype.is_int:
        oc.error(f"indices must be integers, got {idx.dtype}")
    if len(idx.shape) != len(x.shape):
        oc.error(f"indices {shape_text(idx.shape)} must have the rank of the data "
                 f"{shape_text(x.shape)}")
    _indices_within(oc, x.shape, idx.shape)
    return tensor(idx.shape, x.dtype)


def _gather_nd(oc: OpCall) -> StructInfo:
    """TVM's gather_nd: integer indices (B..., I..., M) with M constant pick elements (or
    slices) of data (B..., D1..DM, rest...); the result is (B..., I..., rest...), where B are
    the first `batch_dims` axes of both."""
    x, idx = oc.tensor("data"), oc.tensor("indices")
    assert x.shape is not None and idx.shape is not None
    if idx.dtype is not None and not idx.dtype.is_int:
        oc.error(f"indices must be integers, got {idx.dtype}")
    b = oc.values["batch_dims"]
    if b < 0 or b > len(x.shape):
        oc.error(f"batch_dims must be in [0, {len(x.shape)}] (the data's rank), got {b}")
    if len(idx.shape) == 0 or b > len(idx.shape) - 1:
        oc.error(f"batch_dims {b} must be less than the rank of the indices "
                 f"{shape_text(idx.shape)}")
    m = const_dim(idx.shape[-1])
    if m is None:
        oc.error(f"the last axis of the indices {shape_text(idx.shape)} must have a constant "
                 "size")
    if m > len(x.shape) - b:
        oc.error(f"the last axis of the indices {shape_text(idx.shape)} must be at most the "
                 f"data's rank {len(x.shape)} minus batch_dims {b}")
    for a in range(b):
        if not dims_match(x.shape[a], idx.shape[a]):
            oc.error(f"batch axis {a} differs: data {shape_text(x.shape)}, indices "
                     f"{shape_text(idx.shape)}")
    return tensor((*idx.shape[:-1], *x.shape[b + m:]), x.dtype)


def _broadcast_to(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    shape = target_shape(oc)
    if len(x.shape) > len(shape):
        oc.error(f"cannot broadcast {shape_text(x.shape)} to {shape_text(shape)}")
    for a, b in zip(reversed(x.shape), reversed(shape)):
        if const_dim(a) != 1 and not dims_match(a, b):
            oc.error(f"cannot broadcast {shape_text(x.shape)} to {shape_text(shape)}")
    broadcast_shapes(oc, x.shape, shape)
    return tensor(shape, x.dtype)


SCATTER_REDUCTIONS = ("update", "add", "mul", "mean", "min", "max")


def _scatter_elements(oc: OpCall) -> StructInfo:
    """data, indices and updates of one rank, indices and updates of one shape, no larger than
    the data's outside `axis`; the result is the data's."""
    x, idx, upd = oc.tensor("data"), oc.tensor("indices"), oc.tensor("updates")
    assert x.shape is not None and idx.shape is not None and upd.shape is not None
    if idx.dtype is not None and not idx.dtype.is_int:
        oc.error(f"indices must be integers, got {idx.dtype}")
    oc.same_dtype("data", "updates")
    reduction = oc.values["reduction"]
    if reduction not in SCATTER_REDUCTIONS:
        oc.error(f"reduction must be one of {', '.join(SCATTER_REDUCTIONS)}, got '{reduction}'")
    if reduction == "mean" and x.dtype is not None and not x.dtype.is_float:
        oc.error(f"reduction 'mean' needs a floating-point tensor, got {x.dtype}")
    if x.dtype is not None and x.dtype.is_bool and reduction != "update":
        oc.error(f"reduction '{reduction}' needs a numeric tensor, got bool")
    if len(idx.shape) != len(x.shape):
        oc.error(f"indices {shape_text(idx.shape)} must have the rank of the data "
                 f"{shape_text(x.shape)}")
    if not shapes_match(upd.shape, idx.shape):
        oc.error(f"updates {shape_text(upd.shape)} must have the shape of the indices "
                 f"{shape_text(idx.shape)}")
    _indices_within(oc, x.shape, idx.shape)
    return x


register("reshape", [Param("x", "tensor"), Param("shape", "shape")], _reshape)
register("flatten", [Param("x", "tensor")], _flatten)
register("permute_dims", [Param("x", "tensor"), Param("axes", "ints", None)], _permute_dims)
register("expand_dims", [Param("x", "tensor"), Param("axis", "ints")], _expand_dims)
register("squeeze", [Param("x", "tensor"), Param("axis", "ints", None)], _squeeze)
register("concat", [Param("tensors", "tensors"), Param("axis", "int", 0)], _concat)
register("split", [Param("x", "tensor"), Param("indices_or_sections", "int_or_ints"),
                   Param("axis", "int", 0)], _split)
register("take", [Param("x", "tensor"), Param("indices", "tensor"),
                  Param("axis", "int", None), Param("mode", "str", "fast")], _take)
register("gather_elements", [Param("data", "tensor"), Param("indices", "tensor"),
                             Param("axis", "int", 0)], _gather_elements)
register("gather_nd", [Param("data", "tensor"), Param("indices", "tensor"),
                       Param("batch_dims", "int", 0)], _gather_nd)
register("broadcast_to", [Param("x", "tensor"), Param("shape", "shape")], _broadcast_to)
register("scatter_elements", [Param("data", "tensor"), Param("indices", "tensor"),
                              Param("updates", "tensor"), Param("axis", "int", 0),
                              Param("reduction", "str", "update")], _scatter_elements)
