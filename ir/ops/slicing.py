"""Slicing, flipping, repeating, padding and scans: `strided_slice`, `slice_scatter`, `flip`,
`tile`, `repeat`, `nn.pad` and `cumsum`/`cumprod`, with NumPy's semantics (a slice's begin and
end wrap when negative and are clamped to the axis, symbolic ones too, as TVM's shape rule;
`edge` and `reflect` padding as `np.pad`'s)."""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop, maximum, minimum
from tirc.ir.graph import StructInfo
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import (
    const_dim,
    dim,
    dim_text,
    shape_text,
    shapes_match,
    simplify_dim,
    tensor,
)


def slice_ranges(oc: OpCall) -> dict[int, tuple[PrimExpr, PrimExpr, int]]:
    """Per sliced axis: the first index read, how many are read, and the step. Constant
    bounds on an axis of constant size are NumPy's slice; a symbolic bound or size gives
    TVM's expressions (topi's GetLength: a negative bound counts from the end, then is
    clamped to the axis; `assume_inbound` takes the bounds as they are)."""
    x = oc.tensor("x")
    assert x.shape is not None
    axes, begin, end = oc.values["axes"], oc.values["begin"], oc.values["end"]
    strides = oc.values["strides"]
    strides = (1,) * len(axes) if strides is None else strides
    if not len(axes) == len(begin) == len(end) == len(strides):
        oc.error(f"axes, begin, end and strides need one value each per axis, got "
                 f"{len(axes)}, {len(begin)}, {len(end)} and {len(strides)}")
    out: dict[int, tuple[PrimExpr, PrimExpr, int]] = {}
    for a, b, e, s in zip(axes, begin, end, strides):
        axis = oc.axis(a, len(x.shape))
        if axis in out:
            oc.error(f"axis {a} is sliced twice")
        if s == 0:
            oc.error("a stride must not be 0")
        size = const_dim(x.shape[axis])
        if size is not None and isinstance(b, int) and isinstance(e, int):
            start, stop, step = slice(b, e, s).indices(size)
            out[axis] = (dim(start), dim(len(range(start, stop, step))), step)
            continue
        out[axis] = _symbolic_range(dim(b), dim(e), s, x.shape[axis],
                                    bool(oc.values["assume_inbound"]))
    return out


def _symbolic_range(b: PrimExpr, e: PrimExpr, s: int, size: PrimExpr, inbound: bool
                    ) -> tuple[PrimExpr, PrimExpr, int]:
    """(first index, count, step) of `b:e:s` on an axis of `size`, as TVM infers it; a
    count below 0 (bounds the wrong way round) is 0."""
    if not inbound:
        b, e = _canonical_index(b, size, s), _canonical_index(e, size, s)
    gap = binop("sub", e, b) if s > 0 else binop("sub", b, e)
    count = binop("floordiv", binop("add", gap, dim(abs(s) - 1)), dim(abs(s)))
    return simplify_dim(b), simplify_dim(maximum(count, dim(0))), s


def _canonical_index(i: PrimExpr, size: PrimExpr, s: int) -> PrimExpr:
    """A slice bound counted from the end when negative, clamped to [0, size] (a negative
    step: [-1, size - 1]), as TVM's CanonicalizeIndex. Written with min and max only (what
    the runtime's shape expressions hold): `p` is 1 when `i >= 0`, else 0."""
    lo, hi = (dim(0), size) if s > 0 else (dim(-1), binop("sub", size, dim(1)))

    def clamp(e: PrimExpr) -> PrimExpr:
        return minimum(maximum(e, lo), hi)

    if const_dim(i) is not None:
        return clamp(binop("add", i, size) if const_dim(i) < 0 else i)  # type: ignore[operator]
    p = minimum(maximum(binop("add", i, dim(1)), dim(0)), dim(1))
    return binop("add", binop("mul", p, clamp(i)),
                 binop("mul", binop("sub", dim(1), p), clamp(binop("add", i, size))))


def _strided_slice(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    shape = list(x.shape)
    for axis, (_, count, _) in slice_ranges(oc).items():
        shape[axis] = count
    return tensor(shape, x.dtype)


def scatter_range(oc: OpCall) -> tuple[int, tuple[int, int, int]]:
    """slice_scatter's axis and NumPy's (start, stop, step) along it (a positive step)."""
    x = oc.tensor("input_tensor")
    assert x.shape is not None
    axis = oc.axis(oc.values["axis"], len(x.shape))
    if oc.values["step"] < 1:
        oc.error(f"step must be positive, got {oc.values['step']}")
    size = const_dim(x.shape[axis])
    if size is None:
        oc.error(f"axis {oc.values['axis']} has the symbolic size {dim_text(x.shape[axis])}; "
                 "only an axis of constant size can be sliced")
    return axis, slice(oc.values["start"], oc.values["end"], oc.values["step"]).indices(size)


def _slice_scatter(oc: OpCall) -> StructInfo:
    """The input's struct info; src must have the shape of the slice it replaces."""
    x, src = oc.tensor("input_tensor"), oc.tensor("src")
    assert x.shape is not None and src.shape is not None
    oc.same_dtype("input_tensor", "src")
    axis, bounds = scatter_range(oc)
    want = list(x.shape)
    want[axis] = dim(len(range(*bounds)))
    if not shapes_match(src.shape, want):
        oc.error(f"src {shape_text(src.shape)} must have the shape of the slice it replaces, "
                 f"{shape_text(want)}")
    return x


def _flip(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    oc.axis(oc.values["axis"], len(x.shape))
    return x


def tile_repeats(oc: OpCall) -> tuple[int, ...]:
    """The repeats per result axis (ones prepended up to the data's rank, as NumPy's)."""
    x = oc.tensor("x")
    assert x.shape is not None
    reps = oc.values["repeats"]
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    if any(r < 0 for r in reps):
        oc.error(f"repeats must not be negative, got {reps}")
    return (1,) * (len(x.shape) - len(reps)) + reps


def _tile(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    reps = tile_repeats(oc)
    shape = (dim(1),) * (len(reps) - len(x.shape)) + tuple(x.shape)
    return tensor([simplify_dim(binop("mul", d, dim(r))) for d, r in zip(shape, reps)],
                  x.dtype)


def _repeat(oc: OpCall) -> StructInfo:
    x = oc.tensor("x")
    assert x.shape is not None
    reps = oc.values["repeats"]
    if reps < 0:
        oc.error(f"repeats must not be negative, got {reps}")
    axis = oc.values["axis"]
    if axis is None:
        total: PrimExpr = dim(1)
        for d in x.shape:
            total = binop("mul", total, d)
        return tensor([simplify_dim(binop("mul", total, dim(reps)))], x.dtype)
    a = oc.axis(axis, len(x.shape))
    shape = list(x.shape)
    shape[a] = simplify_dim(binop("mul", shape[a], dim(reps)))
    return tensor(shape, x.dtype)


register("strided_slice", [Param("x", "tensor"), Param("axes", "ints"),
                           Param("begin", "int_exprs"), Param("end", "int_exprs"),
                           Param("strides", "ints", None),
                           Param("assume_inbound", "bool", False)], _strided_slice)
register("slice_scatter", [Param("input_tensor", "tensor"), Param("src", "tensor"),
                           Param("start", "int"), Param("end", "int"), Param("step", "int", 1),
                           Param("axis", "int", 0)], _slice_scatter)
register("flip", [Param("x", "tensor"), Param("axis", "int")], _flip)
register("tile", [Param("x", "tensor"), Param("repeats", "int_or_ints")], _tile)
register("repeat", [Param("x", "tensor"), Param("repeats", "int"), Param("axis", "int", None)],
         _repeat)


PAD_MODES = ("constant", "edge", "reflect")


def pad_widths(oc: OpCall) -> list[tuple[int, int]]:
    """`pad_width` (before and after, axis by axis, flattened as TVM stores it) per axis."""
    x = oc.tensor("data")
    assert x.shape is not None
    flat = oc.values["pad_width"]
    if len(flat) != 2 * len(x.shape):
        oc.error(f"pad_width needs 2 values per axis ({2 * len(x.shape)} for rank "
                 f"{len(x.shape)}), got {len(flat)}")
    if any(v < 0 for v in flat):
        oc.error(f"pad_width must not be negative, got {flat}")
    return [(flat[2 * a], flat[2 * a + 1]) for a in range(len(x.shape))]


def _pad(oc: OpCall) -> StructInfo:
    x = oc.tensor("data")
    assert x.shape is not None
    widths = pad_widths(oc)
    mode = oc.values["pad_mode"]
    if mode not in PAD_MODES:
        oc.error(f"pad_mode must be one of {', '.join(PAD_MODES)}, got '{mode}'")
    for a, (before, after) in enumerate(widths):
        size = const_dim(x.shape[a])
        if mode == "reflect" and (before or after) and (size is None or max(before, after)
                                                        >= size):
            oc.error(f"reflect padding of {max(before, after)} along axis {a} needs more "
                     f"elements than that, got {dim_text(x.shape[a])}")
        if mode == "edge" and (before or after) and (size is None or size == 0):
            oc.error(f"edge padding along axis {a} needs a constant size of at least 1, got "
                     f"{dim_text(x.shape[a])}")
    return tensor([simplify_dim(binop("add", d, dim(b + e))) for d, (b, e) in
                   zip(x.shape, widths)], x.dtype)


def _scan(oc: OpCall) -> StructInfo:
    x = oc.tensor("data")
    assert x.shape is not None
    if x.dtype is not None and x.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    dt = oc.values["dtype"] if oc.values["dtype"] is not None else x.dtype
    if oc.values["axis"] is None:
        total: PrimExpr = dim(1)
        for d in x.shape:
            total = binop("mul", total, d)
        return tensor([simplify_dim(total)], dt)
    oc.axis(oc.values["axis"], len(x.shape))
    return tensor(x.shape, dt)


register("nn.pad", [Param("data", "tensor"), Param("pad_width", "ints"),
                    Param("pad_mode", "str", "constant"), Param("pad_value", "float", 0.0)],
         _pad)
for _name in ("cumsum", "cumprod"):
    register(_name, [Param("data", "tensor"), Param("axis", "int", None),
                     Param("dtype", "dtype", None), Param("exclusive", "bool", False)], _scan)
