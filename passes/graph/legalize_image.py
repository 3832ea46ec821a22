"""Legalization of image resizing (`image.resize2d`, `image.resize3d`), after TOPI's
`_resize_2d` and `_resize_3d`: one spatial block whose value at each output position maps
the position to input coordinates in float32 (`get_inx`), then copies the nearest pixel
(`get_closest_index`) or blends the 2^d around it (bi-, trilinearly), or the 4^d around it
(bi-, tricubically), reading the data as float32 and clamping every index to the image."""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir.dtype import dtype
from tirc.ir.expr import PrimExpr, binop, call, cast, const, maximum, minimum, select
from tirc.ir.graph import StructInfo
from tirc.ir.ops.conv import layout_axes
from tirc.ir.ops.registry import OpCall
from tirc.ir.ops.sinfo_util import INT64, const_dim, dim
from tirc.passes.graph.kernel import Indices, Kernel
from tirc.passes.graph.legalize_table import legalizer, out_tensor

F32 = dtype("float32")


def _f(value: float) -> PrimExpr:
    return const(value, F32)


def source_coordinate(o: PrimExpr, in_size: PrimExpr, out_size: PrimExpr,
                      mode: str) -> PrimExpr:
    """The float32 input coordinate of output position `o` along one axis (TOPI's
    `get_inx`)."""
    x = cast(F32, o)
    scale = binop("div", cast(F32, in_size), cast(F32, out_size))
    if mode in ("half_pixel", "pytorch_half_pixel"):
        coord = binop("sub", binop("mul", binop("add", x, _f(0.5)), scale), _f(0.5))
        if mode == "half_pixel":
            return coord
        many = const_dim(out_size)
        if many is not None:
            return coord if many > 1 else _f(0.0)
        return select(binop("gt", out_size, dim(1)), coord, _f(0.0))
    if mode == "align_corners":
        ratio = binop("div", cast(F32, binop("sub", in_size, dim(1))),
                      cast(F32, binop("sub", out_size, dim(1))))
        return binop("mul", ratio, x)
    if mode == "asymmetric":
        return binop("mul", scale, x)
    assert mode == "tf_half_pixel_for_nn", mode
    return binop("mul", binop("add", x, _f(0.5)), scale)


ROUNDING: dict[str, Callable[[PrimExpr], PrimExpr]] = {
    "round": lambda c: call("round", c),
    "round_prefer_floor": lambda c: call("ceil", binop("sub", c, _f(0.5))),
    "round_prefer_ceil": lambda c: call("floor", binop("add", c, _f(0.5))),
    "floor": lambda c: call("floor", binop("add", c, _f(1e-5))),
    "ceil": lambda c: call("ceil", binop("sub", c, _f(1e-5))),
}


def _clamp(i: PrimExpr, size: PrimExpr) -> PrimExpr:
    return maximum(minimum(i, binop("sub", size, dim(1))), dim(0))


def nearest_index(o: PrimExpr, in_size: PrimExpr, out_size: PrimExpr, mode: str,
                  rounding: str) -> PrimExpr:
    """The input index output position `o` copies, clamped to the image."""
    if not rounding:
        rounding = "round" if mode == "align_corners" else "floor"
    coord = source_coordinate(o, in_size, out_size, mode)
    return _clamp(cast(INT64, ROUNDING[rounding](coord)), in_size)


@legalizer("image.resize2d")
def resize2d(oc: OpCall, out: StructInfo) -> Kernel:
    return _resize(oc, out, "HW", "resize2d")


@legalizer("image.resize3d")
def resize3d(oc: OpCall, out: StructInfo) -> Kernel:
    """TOPI's `_resize_3d`: trilinear lerps along the width, then the height, then the
    depth; tricubic sums in the same order."""
    return _resize(oc, out, "DHW", "resize3d")


def _resize(oc: OpCall, out: StructInfo, letters: str, name: str) -> Kernel:
    """The kernel resizing the spatial axes `letters` of the data (in that order: the last
    one varies fastest in the interpolation sums)."""
    k = Kernel(name)
    x = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output(f"T_{name}", out_tensor(out))
    layout = layout_axes(oc, "layout", "NC" + letters)
    axes = [layout[c] for c in letters]
    mode = oc.values["coordinate_transformation_mode"]
    rounding = oc.values["rounding_method"]
    ins = [x.shape[a] for a in axes]
    outs = [y.shape[a] for a in axes]

    def pixel(i: Indices, at: list[PrimExpr]) -> PrimExpr:
        idx = list(i)
        for a, v in zip(axes, at):
            idx[a] = v
        return cast(F32, x.vload(*idx))

    def nearest(i: Indices) -> PrimExpr:
        at = [nearest_index(i[a], n, o, mode, rounding) for a, n, o in zip(axes, ins, outs)]
        return cast(y.dtype, pixel(i, at))

    def linear(i: Indices) -> PrimExpr:
        coords = [source_coordinate(i[a], n, o, mode) for a, n, o in zip(axes, ins, outs)]
        lows = [cast(INT64, call("floor", c)) for c in coords]
        fracs = [binop("sub", c, cast(F32, lo)) for c, lo in zip(coords, lows)]

        def lerp(a: PrimExpr, b: PrimExpr, t: PrimExpr) -> PrimExpr:
            return binop("add", binop("mul", a, binop("sub", _f(1.0), t)), binop("mul", b, t))

        def blend(axis: int, corner: list[int]) -> PrimExpr:
            if axis == len(axes):
                return pixel(i, [_clamp(binop("add", lo, dim(d)), n)
                                 for lo, d, n in zip(lows, corner, ins)])
            # the innermost axis first (TOPI: width, then height, then depth)
            return lerp(blend(axis + 1, corner + [0]), blend(axis + 1, corner + [1]),
                        fracs[axis])

        return cast(y.dtype, blend(0, []))

    def cubic(i: Indices) -> PrimExpr:
        taps = [cubic_taps(i[a], n, o, mode, alpha, exclude)
                for a, n, o in zip(axes, ins, outs)]

        def total(axis: int, at: list[PrimExpr]) -> PrimExpr:
            if axis == len(axes):
                return pixel(i, at)
            acc: PrimExpr = _f(0.0)
            for tap, wt in taps[axis]:
                acc = binop("add", acc, binop("mul", total(axis + 1, at + [tap]), wt))
            return acc

        return cast(y.dtype, total(0, []))

    method = oc.values["method"]
    alpha, exclude = oc.values["cubic_alpha"], bool(oc.values["cubic_exclude"])
    k.compute(f"T_{name}", y, {"nearest_neighbor": nearest, "linear": linear,
                               "cubic": cubic}[method])
    return k


def cubic_taps(o: PrimExpr, in_size: PrimExpr, out_size: PrimExpr, mode: str, alpha: float,
               exclude: bool) -> list[tuple[PrimExpr, PrimExpr]]:
    """The four (clamped input index, float32 weight) taps of output position `o` along one
    axis: TOPI's `_cubic_spline_weights` of the coordinate's fraction; `exclude` zeroes the
    weights of taps outside the image and divides the rest by their sum."""
    coord = source_coordinate(o, in_size, out_size, mode)
    base = call("floor", coord)
    t = binop("sub", coord, base)
    start = cast(INT64, base)
    t2 = binop("mul", t, t)
    t3 = binop("mul", t2, t)

    def mul(c: float, e: PrimExpr) -> PrimExpr:
        return binop("mul", _f(c), e)

    weights = [
        mul(alpha, binop("add", binop("sub", t3, mul(2.0, t2)), t)),
        binop("add", binop("sub", mul(alpha + 2, t3), mul(3 + alpha, t2)), _f(1.0)),
        binop("sub", binop("add", mul(-(alpha + 2), t3), mul(3 + 2 * alpha, t2)),
              mul(alpha, t)),
        binop("add", mul(-alpha, t3), mul(alpha, t2)),
    ]
    taps = [binop("add", start, dim(j - 1)) for j in range(4)]
    if exclude:
        weights = [select(binop("or", binop("lt", tap, dim(0)), binop("ge", tap, in_size)),
                          _f(0.0), wt) for tap, wt in zip(taps, weights)]
        total = binop("add", binop("add", binop("add", weights[0], weights[1]), weights[2]),
                      weights[3])
        weights = [binop("div", wt, total) for wt in weights]
    return [(_clamp(tap, in_size), wt) for tap, wt in zip(taps, weights)]


def _grid_axis(size: PrimExpr, align_corners: bool, dt: object) -> tuple[PrimExpr, PrimExpr]:
    """The first normalized coordinate of an axis of `size` positions and the step between
    two (TOPI's affine_grid: -1 to 1 through the corners, or through the pixel centers)."""
    n = const_dim(size)
    if n is not None:
        first, step = (-1.0, 2.0 / (n - 1)) if align_corners else (-1.0 + 1.0 / n, 2.0 / n)
        return const(first, dt), const(step, dt)  # type: ignore[arg-type]
    count = cast(dt, binop("sub", size, dim(1)) if align_corners else size)  # type: ignore[arg-type]
    step = binop("div", const(2.0, dt), count)  # type: ignore[arg-type]
    first = const(-1.0, dt) if align_corners else \
        binop("add", const(-1.0, dt), binop("div", const(1.0, dt), cast(dt, size)))  # type: ignore[arg-type]
    return first, step


@legalizer("image.affine_grid")
def affine_grid(oc: OpCall, out: StructInfo) -> Kernel:
    """grid[n, d, i, j] = theta[n, d, 0] * x_j + theta[n, d, 1] * y_i + theta[n, d, 2]."""
    k = Kernel("affine_grid")
    theta = k.input("A", oc.values["data"], oc.tensor("data"))
    y = k.output("T_affine_grid", out_tensor(out))
    dt = y.dtype
    corners = bool(oc.values["align_corners"])
    y0, dy = _grid_axis(y.shape[2], corners, dt)
    x0, dx = _grid_axis(y.shape[3], corners, dt)

    def value(i: Indices) -> PrimExpr:
        n, d = i[0], i[1]
        row = binop("add", y0, binop("mul", cast(dt, i[2]), dy))
        col = binop("add", x0, binop("mul", cast(dt, i[3]), dx))
        return binop("add", binop("add", binop("mul", theta.vload(n, d, dim(0)), col),
                                  binop("mul", theta.vload(n, d, dim(1)), row)),
                     theta.vload(n, d, dim(2)))

    k.compute("T_affine_grid", y, value)
    return k
