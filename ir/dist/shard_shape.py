"""Per-device shapes: which rows of a split dimension each mesh coordinate holds.

A dimension of `n` rows split over `p` coordinates is balanced (numpy's `array_split`):
coordinate `c` holds `(n + p - 1 - c) // p` rows starting at `c * (n // p) + min(c, n % p)`,
so sizes differ by at most one and only when `n % p != 0` (an uneven split). The coordinate
is an integer (the numpy-simulated mesh, the runtime) or the per-device program's coordinate
variable (a `T.int64()` size the program receives), which keeps one compiled program for
every device even when shard sizes differ.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.dist.mesh import DeviceMesh
from tirc.ir.dist.placement import Placement, Shard
from tirc.ir.dtype import dtype
from tirc.ir.expr import IntImm, PrimExpr, Var, binop

INT64 = dtype("int64")
Coord = int | PrimExpr


def shard_extent(n: int, p: int, c: int) -> int:
    """Rows of an `n`-row dimension held by coordinate `c` of `p`."""
    return (n + p - 1 - c) // p


def shard_offset(n: int, p: int, c: int) -> int:
    """The first row of an `n`-row dimension that coordinate `c` of `p` holds."""
    return c * (n // p) + min(c, n % p)


def shard_sizes(n: int, p: int) -> list[int]:
    """The rows held by each of `p` coordinates."""
    return [shard_extent(n, p, c) for c in range(p)]


def is_even(n: PrimExpr, p: int) -> bool:
    """True when a dimension `n` splits into `p` equal parts whatever its symbols are."""
    if p == 1:
        return True
    return isinstance(n, IntImm) and n.value % p == 0


def extent_expr(n: PrimExpr, p: int, c: Coord) -> PrimExpr:
    """The local extent as an expression: `n // p` when even, else the balanced formula in
    the coordinate `c` (an int gives a constant)."""
    if p == 1:
        return n
    if isinstance(n, IntImm):
        if n.value % p == 0:
            return IntImm(n.value // p, n.dtype)
        if isinstance(c, int):
            return IntImm(shard_extent(n.value, p, c), n.dtype)
    cc = IntImm(c, INT64) if isinstance(c, int) else c
    base = IntImm(n.value + p - 1, INT64) if isinstance(n, IntImm) else \
        binop("add", n, IntImm(p - 1, INT64))
    return binop("floordiv", binop("sub", base, cc), IntImm(p, INT64))


def local_shape(shape: Sequence[PrimExpr], placement: Placement, mesh: DeviceMesh,
                coords: Sequence[Coord]) -> tuple[PrimExpr, ...]:
    """The shape a device at `coords` (one per mesh axis) holds of a global `shape`."""
    out = list(shape)
    for axis, item in enumerate(placement.items):
        if isinstance(item, Shard):
            out[item.dim] = extent_expr(out[item.dim], mesh.shape[axis], coords[axis])
    return tuple(out)


def local_slices(shape: Sequence[int], placement: Placement, mesh: DeviceMesh,
                 coords: Sequence[int]) -> tuple[slice, ...]:
    """The index of the global array that the device at `coords` holds (static shapes)."""
    out = [slice(0, n) for n in shape]
    for axis, item in enumerate(placement.items):
        if isinstance(item, Shard):
            n, p, c = shape[item.dim], mesh.shape[axis], coords[axis]
            start = shard_offset(n, p, c)
            out[item.dim] = slice(start, start + shard_extent(n, p, c))
    return tuple(out)


def coord_var(axis_name: str) -> Var:
    """A fresh coordinate variable for a per-device program (`coord_d0`)."""
    return Var(f"coord_{axis_name}", INT64)
