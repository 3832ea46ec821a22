"""Convolution and pooling over 1 to 3 spatial axes (`nn.conv1d/2d/3d`, `nn.max_pool*`,
`nn.avg_pool*`, `nn.adaptive_avg_pool*`), with TVM's attributes and layouts.

A layout names each axis by a letter: `N` batch, `C` channels and the spatial axes `D H W`
for data (`NCHW`, `NHWC`, ...), `O I` and the spatial axes for a kernel (`OIHW`, `HWIO`).
Any order of the letters is accepted. Pooling also takes TVM's blocked layouts (`NCHW16c`):
a sub-axis of the batch or channels, written as a factor and a lower-case letter, that the
window passes through as it does `N` and `C`; convolutions refuse them.
`Geometry` holds the attributes, normalized per spatial axis, that inference, the interpreter
and legalization share.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.dtype import DType
from tirc.ir.expr import PrimExpr, binop
from tirc.ir.graph import StructInfo, TensorSInfo
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import (
    const_dim,
    dim,
    dim_text,
    dims_match,
    shape_text,
    simplify_dim,
)

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


@dataclass(frozen=True)
class Geometry:
    """Window attributes per spatial axis (in `D H W` order): window size, stride,
    dilation, padding before and after."""

    window: tuple[PrimExpr, ...]
    strides: tuple[int, ...]
    dilation: tuple[int, ...]
    pad_before: tuple[int, ...]
    pad_after: tuple[int, ...]

    def out_size(self, k: int, size: PrimExpr, ceil_mode: bool = False) -> PrimExpr:
        """The number of window positions along spatial axis `k` of an input of `size`. In
        ceil mode a last window that would start past the data and the padding before it (in
        the padding after) is dropped, as TVM and PyTorch do."""
        span = binop("mul", dim(self.dilation[k]), binop("sub", self.window[k], dim(1)))
        room = binop("sub", binop("add", size, dim(self.pad_before[k] + self.pad_after[k])),
                     binop("add", span, dim(1)))
        stride = dim(self.strides[k])
        if ceil_mode:
            room = binop("add", room, dim(self.strides[k] - 1))
        out = binop("add", binop("floordiv", room, stride), dim(1))
        if ceil_mode:  # window j starts at j * stride - pad_before, before size
            starts = binop("add", binop("floordiv", binop("add", size, dim(self.pad_before[k] - 1)),
                                        stride), dim(1))
            out = binop("min", out, starts)
        return simplify_dim(out)


def per_axis(oc: OpCall, name: str, rank: int) -> tuple[int, ...]:
    """An attribute given once or once per spatial axis, as one value per axis."""
    values = oc.values[name]
    values = (values,) if isinstance(values, int) else tuple(values)
    if len(values) == 1:
        values = values * rank
    if len(values) != rank:
        oc.error(f"'{name}' needs 1 or {rank} values, got {len(values)}")
    if any(v < 1 for v in values):
        oc.error(f"'{name}' must be positive, got {values}")
    return values


def padding(oc: OpCall, rank: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`padding` as (before, after) per spatial axis: 1 value for all, `rank` values for both
    sides of each axis, or `2 * rank` values (all befores, then all afters)."""
    values = oc.values["padding"]
    values = (values,) if isinstance(values, int) else tuple(values)
    if any(v < 0 for v in values):
        oc.error(f"'padding' must not be negative, got {values}")
    if len(values) == 1:
        return values * rank, values * rank
    if len(values) == rank:
        return values, values
    if len(values) == 2 * rank:
        return values[:rank], values[rank:]
    oc.error(f"'padding' needs 1, {rank} or {2 * rank} values, got {len(values)}")


def layout_axes(oc: OpCall, name: str, letters: str) -> dict[str, int]:
    """The position of each letter in the layout attribute `name` (a permutation of
    `letters`)."""
    layout = oc.values[name]
    if sorted(layout) != sorted(letters):
        oc.error(f"{name} '{layout}' is not an order of the axes {letters} (blocked layouts "
                 "are not supported)")
    return {c: layout.index(c) for c in letters}


def data_axes(oc: OpCall, name: str, rank: int) -> dict[str, int]:
    """Positions of `N`, `C` and the spatial letters in the data layout `name`."""
    return layout_axes(oc, name, "NC" + SPATIAL[rank])


def pool_axes(oc: OpCall, name: str, rank: int) -> dict[str, int]:
    """Positions of every axis letter of a pooling layout `name`: `N`, `C`, the spatial letters
    and the blocked sub-axes of `N` or `C` (`NCHW16c`: `c` at 4), which pass through."""
    layout = oc.values[name]
    letters = "".join(ch for ch in layout if ch.isalpha())
    if not any(ch.islower() for ch in layout):
        return data_axes(oc, name, rank)
    primal = "".join(ch for ch in letters if ch.isupper())
    sub = [ch for ch in letters if ch.islower()]
    if (sorted(primal) != sorted("NC" + SPATIAL[rank]) or len(set(sub)) != len(sub)
            or any(ch not in "nc" for ch in sub) or not _factors_ok(layout)):
        oc.error(f"{name} '{layout}' is not an order of the axes NC{SPATIAL[rank]}, with "
                 "blocked sub-axes of N or C only (such as NCHW16c)")
    return {ch: k for k, ch in enumerate(letters)}


def _factors_ok(layout: str) -> bool:
    """Each lower-case sub-axis letter after its factor (`16c`), and digits nowhere else."""
    digits = False
    for ch in layout:
        if ch.isdigit():
            digits = True
            continue
        if ch.islower() != digits:
            return False
        digits = False
    return not digits


def pool_out_axes(oc: OpCall, rank: int) -> dict[str, int]:
    """Positions in a pooling result: `out_layout` (which must equal `layout` when either is
    blocked), else `layout`."""
    given = oc.values.get("out_layout")
    axes = pool_axes(oc, "layout", rank)
    if not given or given == oc.values["layout"]:
        return axes
    out = pool_axes(oc, "out_layout", rank)
    if len(axes) != rank + 2 or len(out) != rank + 2:
        oc.error(f"out_layout '{given}' must equal the blocked layout "
                 f"'{oc.values['layout']}'")
    return out


def output_layout(oc: OpCall, name: str, rank: int) -> dict[str, int]:
    """Positions in the result: `out_layout`, else the data layout `name`."""
    which = "out_layout" if oc.values.get("out_layout") else name
    return data_axes(oc, which, rank)


def arrange(axes: dict[str, int], sizes: dict[str, PrimExpr]) -> tuple[PrimExpr, ...]:
    """The shape whose axis `axes[c]` has size `sizes[c]`."""
    out: list[PrimExpr] = [dim(0)] * len(axes)
    for c, pos in axes.items():
        out[pos] = sizes[c]
    return tuple(out)


def conv_geometry(oc: OpCall, rank: int,
                  weight_shape: Sequence[PrimExpr] | None = None) -> Geometry:
    """The window geometry of a convolution call, the window sizes read from the weight's
    shape (`weight_shape`: the same shape over a kernel's own size variables)."""
    if weight_shape is None:
        weight_shape = oc.tensor("weight").shape
    assert weight_shape is not None
    kaxes = layout_axes(oc, "kernel_layout", "OI" + SPATIAL[rank])
    before, after = padding(oc, rank)
    return Geometry(tuple(weight_shape[kaxes[c]] for c in SPATIAL[rank]),
                    per_axis(oc, "strides", rank), per_axis(oc, "dilation", rank),
                    before, after)


def conv_operands(oc: OpCall, rank: int) -> DType | None:
    """Check a (transposed) convolution's data and weight (rank, one numeric dtype) and
    `groups`; the result dtype (`out_dtype`, else the operands')."""
    for name in ("data", "weight"):
        s = oc.tensor(name)
        assert s.shape is not None
        if len(s.shape) != rank + 2:
            oc.error(f"'{name}' must have {rank + 2} dimensions, got {shape_text(s.shape)}")
    dt = oc.same_dtype("data", "weight")
    if dt is not None and dt.is_bool:
        oc.error("needs numeric tensors, got bool")
    if oc.values["groups"] < 1:
        oc.error(f"'groups' must be positive, got {oc.values['groups']}")
    return out_dtype_of(oc) or dt


def _conv(oc: OpCall, rank: int) -> StructInfo:
    data, weight = oc.tensor("data"), oc.tensor("weight")
    assert data.shape is not None and weight.shape is not None
    dt = conv_operands(oc, rank)
    groups = oc.values["groups"]
    daxes = data_axes(oc, "data_layout", rank)
    kaxes = layout_axes(oc, "kernel_layout", "OI" + SPATIAL[rank])
    geo = conv_geometry(oc, rank)
    channels = data.shape[daxes["C"]]
    per_group = weight.shape[kaxes["I"]]
    if not dims_match(channels, simplify_dim(binop("mul", per_group, dim(groups)))):
        each = f" per group, times {groups} groups" if groups != 1 else ""
        oc.error(f"the data has {dim_text(channels)} channels; the weight takes "
                 f"{dim_text(per_group)}{each}")
    out_channels = weight.shape[kaxes["O"]]
    oc_const = const_dim(out_channels)
    if oc_const is not None and oc_const % groups:
        oc.error(f"{oc_const} output channels do not divide into {groups} groups")
    sizes = {"N": data.shape[daxes["N"]], "C": out_channels}
    for k, c in enumerate(SPATIAL[rank]):
        sizes[c] = _positive(oc, geo.out_size(k, data.shape[daxes[c]]), c)
    shape = arrange(output_layout(oc, "data_layout", rank), sizes)
    return TensorSInfo(shape, dt, len(shape))


def _positive(oc: OpCall, size: PrimExpr, axis: str) -> PrimExpr:
    value = const_dim(size)
    if value is not None and value < 1:
        oc.error(f"the window does not fit along axis {axis}: {value} positions")
    return size


def pool_geometry(oc: OpCall, rank: int) -> Geometry:
    """The window geometry of a pooling call."""
    before, after = padding(oc, rank)
    window = tuple(dim(v) for v in per_axis(oc, "pool_size", rank))
    return Geometry(window, per_axis(oc, "strides", rank), per_axis(oc, "dilation", rank),
                    before, after)


def _pool(oc: OpCall, rank: int) -> StructInfo:
    data = oc.tensor("data")
    assert data.shape is not None
    axes = pool_axes(oc, "layout", rank)
    if len(data.shape) != len(axes):
        oc.error(f"'data' must have {len(axes)} dimensions, got {shape_text(data.shape)}")
    if oc.op.name.startswith("nn.avg"):
        oc.float_dtype("data")
    elif data.dtype is not None and data.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    geo = pool_geometry(oc, rank)
    for k, c in enumerate(SPATIAL[rank]):
        if max(geo.pad_before[k], geo.pad_after[k]) >= const_dim(geo.window[k]):  # type: ignore[operator]
            oc.error(f"padding {geo.pad_before[k]}, {geo.pad_after[k]} along axis {c} must be "
                     f"smaller than the window {const_dim(geo.window[k])}")
    sizes = passed_through(data.shape, axes, rank)
    for k, c in enumerate(SPATIAL[rank]):
        sizes[c] = _positive(oc, geo.out_size(k, data.shape[axes[c]], oc.values["ceil_mode"]), c)
    shape = arrange(pool_out_axes(oc, rank), sizes)
    return TensorSInfo(shape, data.dtype, len(shape))


def passed_through(shape: Sequence[PrimExpr], axes: dict[str, int],
                   rank: int) -> dict[str, PrimExpr]:
    """The sizes of the axes a window passes through (all but the spatial ones), by letter."""
    return {c: shape[pos] for c, pos in axes.items() if c not in SPATIAL[rank]}


def adaptive_sizes(oc: OpCall, rank: int) -> tuple[PrimExpr, ...]:
    """The output size per spatial axis (`output_size`, else the input's own)."""
    data = oc.tensor("data")
    assert data.shape is not None
    axes = pool_axes(oc, "layout", rank)
    given = oc.values["output_size"]
    if given is None:
        return tuple(data.shape[axes[c]] for c in SPATIAL[rank])
    values = (given,) if isinstance(given, int) else tuple(given)
    if len(values) == 1:
        values = values * rank
    if len(values) != rank or any(v < 1 for v in values):
        oc.error(f"'output_size' needs 1 or {rank} positive values, got {values}")
    return tuple(dim(v) for v in values)


def _adaptive(oc: OpCall, rank: int) -> StructInfo:
    data = oc.tensor("data")
    assert data.shape is not None
    axes = pool_axes(oc, "layout", rank)
    if len(data.shape) != len(axes):
        oc.error(f"'data' must have {len(axes)} dimensions, got {shape_text(data.shape)}")
    oc.float_dtype("data")
    out = adaptive_sizes(oc, rank)
    sizes = passed_through(data.shape, axes, rank)
    for k, c in enumerate(SPATIAL[rank]):
        if const_dim(data.shape[axes[c]]) is None and oc.values["output_size"] is not None:
            oc.error(f"needs a constant input size along axis {c}, got "
                     f"{dim_text(data.shape[axes[c]])}")
        sizes[c] = out[k]
    shape = arrange(pool_out_axes(oc, rank), sizes)
    return TensorSInfo(shape, data.dtype, len(shape))


def out_dtype_of(oc: OpCall) -> DType | None:
    """The result dtype a convolution call asks for (None: the operands')."""
    v = oc.values.get("out_dtype")
    return None if v is None or str(v) == "void" else v


for _rank in (1, 2, 3):
    _sp = SPATIAL[_rank]
    register(f"nn.conv{_rank}d", [
        Param("data", "tensor"), Param("weight", "tensor"), Param("strides", "ints", (1,)),
        Param("padding", "ints", (0,)), Param("dilation", "ints", (1,)),
        Param("groups", "int", 1), Param("data_layout", "str", "NC" + _sp),
        Param("kernel_layout", "str", "OI" + _sp), Param("out_layout", "str", None),
        Param("out_dtype", "dtype", None)], lambda oc, r=_rank: _conv(oc, r))
    for _kind in ("max", "avg"):
        register(f"nn.{_kind}_pool{_rank}d", [
            Param("data", "tensor"), Param("pool_size", "ints", (1,)),
            Param("strides", "ints", (1,)), Param("padding", "ints", (0,)),
            Param("dilation", "ints", (1,)), Param("ceil_mode", "bool", False),
            Param("count_include_pad", "bool", _kind == "avg" and _rank != 2),
            Param("layout", "str", "NC" + _sp), Param("out_layout", "str", None)],
            lambda oc, r=_rank: _pool(oc, r))
    register(f"nn.adaptive_avg_pool{_rank}d", [
        Param("data", "tensor"), Param("output_size", "ints", None),
        Param("layout", "str", "NC" + _sp), Param("out_layout", "str", None)],
        lambda oc, r=_rank: _adaptive(oc, r))
