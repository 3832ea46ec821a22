"""Image resizing (`image.resize2d`, `image.resize3d`), with TVM Relax's parameters and TOPI's
formulas, and `image.affine_grid` (the sampling grid of a batch of 2x3 affine matrices,
TOPI's).

The `H` and `W` axes of the data (layout: any order of `NCHW`; `D`, `H`, `W` of `NCDHW` for
resize3d) take the sizes of `size`. resize3d's `linear` is trilinear and its `cubic`
tricubic; its `cubic_exclude=1` is refused (TOPI's 3-d exclusion weighs the depth taps with
the width's weights and bounds two axes by the height).
Methods `nearest_neighbor`, `linear` (bilinear) and `cubic` (bicubic: TOPI's spline of
`cubic_alpha`, with `cubic_exclude` dropping and renormalizing the taps outside the image)
are supported with the coordinate transformation modes `half_pixel`, `align_corners`,
`asymmetric`, `pytorch_half_pixel` and `tf_half_pixel_for_nn`, and for the nearest
neighbour the rounding methods `round` (ties to even), `floor`, `ceil`, `round_prefer_floor`,
`round_prefer_ceil` (and `""`: TOPI's default, `round` under `align_corners`, else
`floor`). `tf_crop_and_resize` (the only mode that reads `roi` and `extrapolation_value`) is
refused, and so is a non-zero `roi`.
"""

from __future__ import annotations

from tirc.ir.expr import PrimExpr
from tirc.ir.graph import ShapeExpr, ShapeSInfo, StructInfo, TensorSInfo
from tirc.ir.ops.conv import layout_axes, out_dtype_of
from tirc.ir.ops.registry import OpCall, Param, register
from tirc.ir.ops.sinfo_util import const_dim, dim, shape_text

METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                    "tf_half_pixel_for_nn")
ROUNDING_METHODS = ("round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil", "")


def resize_size(oc: OpCall, names: tuple[str, ...] = ("height", "width")
                ) -> tuple[PrimExpr, ...]:
    """The output sizes of a resize call, one per spatial axis named in `names`."""
    size = oc.values["size"]
    values = size.values if isinstance(size, ShapeExpr) else None
    s = oc.sinfo.get("size")
    if values is None and isinstance(s, ShapeSInfo):
        values = s.values
    if values is None:
        oc.error("'size' must be a shape of known values, such as (16, 16)")
    if len(values) != len(names):
        oc.error(f"'size' needs {len(names)} values ({', '.join(names)}), got {len(values)}")
    for v in values:
        n = const_dim(v)
        if n is not None and n < 1:
            oc.error(f"'size' must be positive, got {shape_text(values)}")
    return tuple(dim(v) for v in values)


SPATIAL = {2: ("H", "W"), 3: ("D", "H", "W")}
AXIS_NAMES = {"D": "depth", "H": "height", "W": "width"}


def _resize2d(oc: OpCall) -> StructInfo:
    return _resize(oc, 2)


def _resize3d(oc: OpCall) -> StructInfo:
    if oc.values["cubic_exclude"] == 1 and oc.values["method"] == "cubic":
        oc.error("cubic_exclude=1 is not supported by resize3d (TOPI's 3-d exclusion weighs "
                 "the depth taps with the width's weights)")
    return _resize(oc, 3)


def _resize(oc: OpCall, rank: int) -> StructInfo:
    """resize2d / resize3d: the data's spatial axes take the sizes of `size`."""
    data = oc.tensor("data")
    assert data.shape is not None
    if len(data.shape) != rank + 2:
        oc.error(f"'data' must have {rank + 2} dimensions, got {shape_text(data.shape)}")
    if data.dtype is not None and data.dtype.is_bool:
        oc.error("needs a numeric tensor, got bool")
    letters = SPATIAL[rank]
    axes = layout_axes(oc, "layout", "NC" + "".join(letters))
    method = oc.values["method"]
    if method not in METHODS:
        oc.error(f"unknown method '{method}' (expected 'nearest_neighbor', 'linear' or "
                 "'cubic')")
    if oc.values["cubic_exclude"] not in (0, 1):
        oc.error(f"cubic_exclude must be 0 or 1, got {oc.values['cubic_exclude']}")
    mode = oc.values["coordinate_transformation_mode"]
    if mode == "tf_crop_and_resize":
        oc.error("coordinate_transformation_mode 'tf_crop_and_resize' is not supported")
    if mode not in COORDINATE_MODES:
        oc.error(f"unknown coordinate_transformation_mode '{mode}' (expected one of "
                 f"{', '.join(COORDINATE_MODES)})")
    rounding = oc.values["rounding_method"]
    if rounding not in ROUNDING_METHODS:
        oc.error(f"unknown rounding_method '{rounding}' (expected one of "
                 f"{', '.join(r for r in ROUNDING_METHODS if r)})")
    roi = oc.values["roi"]
    if roi is not None and len(roi) != 2 * rank:
        corners = ", ".join([f"start_{c.lower()}" for c in letters] +
                            [f"end_{c.lower()}" for c in letters])
        oc.error(f"'roi' needs {2 * rank} values ({corners}), got {len(roi)}")
    if roi is not None and any(roi):
        oc.error("a non-zero 'roi' is only read by coordinate_transformation_mode "
                 "'tf_crop_and_resize', which is not supported")
    sizes = resize_size(oc, tuple(AXIS_NAMES[c] for c in letters))
    if mode == "align_corners":
        for c, v in zip(letters, sizes):
            if const_dim(v) == 1:
                oc.error(f"'align_corners' needs an output {AXIS_NAMES[c]} of at least 2, "
                         "got 1")
    shape = list(data.shape)
    for c, v in zip(letters, sizes):
        shape[axes[c]] = v
    return TensorSInfo(tuple(shape), out_dtype_of(oc) or data.dtype, rank + 2)


def _resize_params(layout: str, rounding_method: str) -> list[Param]:
    """TVM's parameters of `image.resize2d`/`resize3d`, which differ only in the defaults of
    the layout and the rounding method."""
    return [
        Param("data", "tensor"), Param("size", "shape"), Param("roi", "floats", None),
        Param("layout", "str", layout), Param("method", "str", "linear"),
        Param("coordinate_transformation_mode", "str", "half_pixel"),
        Param("rounding_method", "str", rounding_method), Param("cubic_alpha", "float", -0.75),
        Param("cubic_exclude", "int", 0), Param("extrapolation_value", "float", 0.0),
        Param("out_dtype", "dtype", None)]


register("image.resize2d", _resize_params("NCHW", "round"), _resize2d)
register("image.resize3d", _resize_params("NCDHW", ""), _resize3d)


def _affine_grid(oc: OpCall) -> StructInfo:
    """theta (N, 2, 3) of floats -> the grid (N, 2, H, W) of its points `theta[n] @ (x, y,
    1)` over the normalized coordinates of an H x W image."""
    theta = oc.tensor("data")
    assert theta.shape is not None
    if len(theta.shape) != 3 or const_dim(theta.shape[1]) != 2 or \
            const_dim(theta.shape[2]) != 3:
        oc.error(f"'data' must be a batch of 2x3 matrices (N, 2, 3), got "
                 f"{shape_text(theta.shape)}")
    oc.float_dtype("data")
    height, width = resize_size(oc)
    if oc.values["align_corners"]:
        for name, v in (("height", height), ("width", width)):
            if const_dim(v) == 1:
                oc.error(f"'align_corners' needs a {name} of at least 2, got 1")
    return TensorSInfo((theta.shape[0], dim(2), height, width), theta.dtype, 4)


register("image.affine_grid", [Param("data", "tensor"), Param("size", "shape"),
                               Param("align_corners", "bool", True)], _affine_grid)
