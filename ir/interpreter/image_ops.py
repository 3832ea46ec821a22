"""NumPy image resizing for the reference interpreter (`image.resize2d`, `image.resize3d`),
and the sampling grid of `image.affine_grid` (one matrix product over the grid's points, in
float64).

Written apart from the legalization: each axis gets the vector of source coordinates of all
its output positions at once, the nearest indices or the interpolation weights follow from
it, and the pixels are gathered with NumPy indexing. The arithmetic is TOPI's, in float32 and
in TOPI's order (the data is read as float32 and the result cast to the output dtype), so the
nearest index of a coordinate on a rounding boundary is the one TVM picks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tirc.ir.dtype import dtype
from tirc.ir.interpreter.values import np_dtype

F32 = np.float32


def source_coordinates(out_size: int, in_size: int, mode: str) -> np.ndarray:
    """The float32 input coordinate of each output position along one axis (TOPI's
    `get_inx`)."""
    x = np.arange(out_size).astype(F32)
    scale = F32(in_size) / F32(out_size)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        coords = (x + F32(0.5)) * scale - F32(0.5)
        if mode == "pytorch_half_pixel" and out_size <= 1:
            coords = np.zeros_like(x)
        return coords
    if mode == "align_corners":
        return F32(in_size - 1) / F32(out_size - 1) * x
    if mode == "asymmetric":
        return scale * x
    if mode == "tf_half_pixel_for_nn":
        return (x + F32(0.5)) * scale
    raise ValueError(f"unsupported coordinate_transformation_mode '{mode}'")


def nearest_indices(out_size: int, in_size: int, mode: str, rounding: str) -> np.ndarray:
    """The input index each output position copies along one axis, clamped to the input: the
    source coordinate rounded as asked (TVM 0.27's legalization rounds an asymmetric integer
    upscale too, `T.round(0.5 * i)`, rather than dividing)."""
    coords = source_coordinates(out_size, in_size, mode)
    if not rounding:
        rounding = "round" if mode == "align_corners" else "floor"
    eps = F32(1e-5)
    rounded = {"round": lambda c: np.rint(c),
               "round_prefer_floor": lambda c: np.ceil(c - F32(0.5)),
               "round_prefer_ceil": lambda c: np.floor(c + F32(0.5)),
               "floor": lambda c: np.floor(c + eps),
               "ceil": lambda c: np.ceil(c - eps)}[rounding](coords)
    return np.clip(rounded.astype(np.int64), 0, in_size - 1)


def resize2d(data: np.ndarray, size: Sequence[int], roi: Sequence[float] | None = None,
             layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "round",
             cubic_alpha: float = -0.75, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: Any = None) -> np.ndarray:
    """Nearest-neighbour, bilinear or bicubic resizing of the `H` and `W` axes to `size`."""
    if method not in ("nearest_neighbor", "linear", "cubic"):
        raise ValueError(f"unsupported method '{method}'")
    mode = coordinate_transformation_mode
    arr = np.asarray(data)
    dt = arr.dtype if out_dtype in (None, "void") else np_dtype(dtype(str(out_dtype)))
    x = np.transpose(arr, [layout.index(c) for c in "NCHW"]).astype(F32)
    in_h, in_w = x.shape[2:]
    out_h, out_w = (int(v) for v in size)
    if method == "cubic":
        result = _bicubic(x, out_h, out_w, mode, cubic_alpha, bool(cubic_exclude))
    elif method == "nearest_neighbor":
        ys = nearest_indices(out_h, in_h, mode, rounding_method)
        xs = nearest_indices(out_w, in_w, mode, rounding_method)
        result = x[:, :, ys[:, None], xs[None, :]]
    else:
        cy = source_coordinates(out_h, in_h, mode)
        cx = source_coordinates(out_w, in_w, mode)
        y0, x0 = np.floor(cy).astype(np.int64), np.floor(cx).astype(np.int64)
        ty = (cy - y0.astype(F32))[:, None]
        tx = (cx - x0.astype(F32))[None, :]

        def pixel(dy: int, dx: int) -> np.ndarray:
            rows = np.clip(y0 + dy, 0, in_h - 1)[:, None]
            cols = np.clip(x0 + dx, 0, in_w - 1)[None, :]
            return x[:, :, rows, cols]

        one = F32(1.0)
        top = pixel(0, 0) * (one - tx) + pixel(0, 1) * tx
        bottom = pixel(1, 0) * (one - tx) + pixel(1, 1) * tx
        result = top * (one - ty) + bottom * ty
    return np.transpose(result.astype(dt), ["NCHW".index(c) for c in layout])


def cubic_taps(out_size: int, in_size: int, mode: str, alpha: float,
               exclude: bool) -> tuple[np.ndarray, np.ndarray]:
    """The four input indices (clamped to the image) and spline weights of each output
    position along one axis (TOPI's `_cubic_spline_weights`, in float32; `exclude` zeroes
    the weights of taps outside the image and divides the rest by their sum)."""
    coords = source_coordinates(out_size, in_size, mode)
    base = np.floor(coords)
    t = (coords - base).astype(F32)
    t2, t3 = t * t, t * t * t
    a = F32(alpha)
    weights = [a * (t3 - F32(2) * t2 + t),
               F32(alpha + 2) * t3 - F32(3 + alpha) * t2 + F32(1),
               -F32(alpha + 2) * t3 + F32(3 + 2 * alpha) * t2 - a * t,
               -a * t3 + a * t2]
    start = base.astype(np.int64) - 1
    taps = np.stack([start + j for j in range(4)], axis=1)
    w = np.stack(weights, axis=1).astype(F32)
    if exclude:
        w = np.where((taps < 0) | (taps >= in_size), F32(0), w)
        w = w / w.sum(axis=1, keepdims=True)
    return np.clip(taps, 0, in_size - 1), w.astype(F32)


def _bicubic(x: np.ndarray, out_h: int, out_w: int, mode: str, alpha: float,
             exclude: bool) -> np.ndarray:
    """Bicubic resizing of the last two axes of float32 `x`: each row of four taps blended
    with the width weights, then the four rows with the height weights (TOPI's order)."""
    rows, wy = cubic_taps(out_h, x.shape[2], mode, alpha, exclude)
    cols, wx = cubic_taps(out_w, x.shape[3], mode, alpha, exclude)
    out = np.zeros((*x.shape[:2], out_h, out_w), F32)
    for j in range(4):
        line = np.zeros_like(out)
        for i in range(4):
            line = line + x[:, :, rows[:, j][:, None], cols[:, i][None, :]] * wx[None, :, i]
        out = out + line * wy[:, j][:, None]
    return out


def resize3d(data: np.ndarray, size: Sequence[int], roi: Sequence[float] | None = None,
             layout: str = "NCDHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
             cubic_alpha: float = -0.75, cubic_exclude: int = 0,
             extrapolation_value: float = 0.0, out_dtype: Any = None) -> np.ndarray:
    """Nearest-neighbour, trilinear or tricubic resizing of the `D`, `H` and `W` axes to
    `size` (TOPI's `_resize_3d`: lerps along the width, then the height, then the depth)."""
    if method not in ("nearest_neighbor", "linear", "cubic"):
        raise ValueError(f"unsupported method '{method}'")
    mode = coordinate_transformation_mode
    arr = np.asarray(data)
    dt = arr.dtype if out_dtype in (None, "void") else np_dtype(dtype(str(out_dtype)))
    x = np.transpose(arr, [layout.index(c) for c in "NCDHW"]).astype(F32)
    ins = x.shape[2:]
    outs = [int(v) for v in size]

    def gather(per_axis: Sequence[np.ndarray]) -> np.ndarray:
        """x at the index vectors of the three axes, as an outer product."""
        grids = np.ix_(*per_axis)
        return x[:, :, grids[0], grids[1], grids[2]]

    if method == "nearest_neighbor":
        result = gather([nearest_indices(o, n, mode, rounding_method)
                         for o, n in zip(outs, ins)])
    elif method == "linear":
        coords = [source_coordinates(o, n, mode) for o, n in zip(outs, ins)]
        lows = [np.floor(c).astype(np.int64) for c in coords]
        shapes = [(-1, 1, 1), (1, -1, 1), (1, 1, -1)]
        fracs = [(c - lo.astype(F32)).reshape(s) for c, lo, s in zip(coords, lows, shapes)]
        one = F32(1.0)

        def corner(dz: int, dy: int, dx: int) -> np.ndarray:
            return gather([np.clip(lo + d, 0, n - 1) for lo, d, n in zip(lows, (dz, dy, dx), ins)])

        def along_x(dz: int, dy: int) -> np.ndarray:
            return corner(dz, dy, 0) * (one - fracs[2]) + corner(dz, dy, 1) * fracs[2]

        planes = [along_x(dz, 0) * (one - fracs[1]) + along_x(dz, 1) * fracs[1]
                  for dz in (0, 1)]
        result = planes[0] * (one - fracs[0]) + planes[1] * fracs[0]
    else:
        if cubic_exclude:
            raise ValueError("resize3d: cubic_exclude=1 is not supported")
        taps = [cubic_taps(o, n, mode, cubic_alpha, False) for o, n in zip(outs, ins)]
        result = np.zeros((*x.shape[:2], *outs), F32)
        for k in range(4):
            plane = np.zeros_like(result)
            for j in range(4):
                line = np.zeros_like(result)
                for i in range(4):
                    w = taps[2][1][:, i][None, None, :]
                    line = line + gather([taps[0][0][:, k], taps[1][0][:, j],
                                          taps[2][0][:, i]]) * w
                plane = plane + line * taps[1][1][:, j][None, :, None]
            result = result + plane * taps[0][1][:, k][:, None, None]
    return np.transpose(result.astype(dt), ["NCDHW".index(c) for c in layout])


def affine_grid(data: np.ndarray, size: Any, align_corners: bool = True) -> np.ndarray:
    """The points theta[n] @ (x, y, 1) for x over the width and y over the height, evenly
    spaced in [-1, 1] (through the corners, or through the pixel centers), in theta's
    dtype: out[n, 0] the x coordinates, out[n, 1] the y ones of each pixel."""
    theta = np.asarray(data)
    height, width = (int(v) for v in size)

    def axis(n: int) -> np.ndarray:
        if align_corners:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.array([-1.0])
        return (2.0 * np.arange(n) + 1.0) / n - 1.0

    ys, xs = np.meshgrid(axis(height), axis(width), indexing="ij")
    points = np.stack([xs, ys, np.ones_like(xs)]).reshape(3, -1)
    grid = np.einsum("ndk,kp->ndp", theta.astype(np.float64), points)
    return grid.reshape(theta.shape[0], 2, height, width).astype(theta.dtype)


IMAGE_OPS: dict[str, Callable[..., Any]] = {"image.resize2d": resize2d,
                                            "image.resize3d": resize3d,
                                            "image.affine_grid": affine_grid}
