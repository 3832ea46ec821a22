"""`TileLayout`: shard iters, replica iters and offsets over named axes (Axe layouts).

A layout maps a logical index to physical places. The shard splits the row-major index into
digits (last iter fastest, outermost digit unreduced) and adds `digit * stride` on each iter's
axis; the offsets add a constant per axis; every combination of replica digits adds a copy.
See /work/shared/LAYOUTS.md for the semantics; this module holds the data type, the maps
(apply, image), the measures (size, span) and canonical equality. The transformations live in
`algebra`, `slicing` and `packing` and are exposed here as methods.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

from tirc.ir.layout import algebra, canonical, packing, slicing
from tirc.ir.layout.axes import MEMORY, Axis, get_axis
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.iters import Iter
from tirc.ir.layout.notation import format_tile
from tirc.ir.layout.symbolic import (
    Sym,
    Value,
    add,
    as_value,
    floordiv,
    is_value,
    mod,
    mul,
    substitute,
)
from tirc.ir.lean_dataclass import dataclass

# A physical place: (axis name, coordinate) pairs sorted by axis name.
Place = tuple[tuple[str, Any], ...]
OffsetLike = Mapping[Any, Any] | Iterable[tuple[Any, Any]] | None


@dataclass(frozen=True, eq=False, init=False)
class TileLayout:
    """`S[shard] + R[replica] + offsets`. Immutable; `==` and `hash` use the canonical form.

    `offset` holds (axis name, value) pairs, at most one per axis; `offsets` gives a dict.
    """

    shard: tuple[Iter, ...]
    replica: tuple[Iter, ...]
    offset: tuple[tuple[str, Value], ...]

    def __init__(self, shard: Iterable[Iter] = (), replica: Iterable[Iter] = (),
                 offset: OffsetLike = None) -> None:
        object.__setattr__(self, "shard", _iters(shard, "shard"))
        object.__setattr__(self, "replica", _iters(replica, "replica"))
        object.__setattr__(self, "offset", _merge_offsets(offset))

    @classmethod
    def row_major(cls, shape: Sequence[object], axis: str | Axis = MEMORY) -> TileLayout:
        """The compact row-major layout of `shape` on `axis` (`S[4, 8]` is `S[(4, 8):(8, 1)]`)."""
        iters: list[Iter] = []
        stride: Value = 1
        for extent in reversed([as_value(e, "shape dimension") for e in shape]):
            iters.append(Iter(extent, stride, axis))
            stride = mul(stride, extent)
        return cls(reversed(iters))

    def with_parts(self, shard: Iterable[Iter] | None = None,
                   replica: Iterable[Iter] | None = None,
                   offset: OffsetLike = None) -> TileLayout:
        """A layout with some of the three parts replaced."""
        return TileLayout(
            self.shard if shard is None else shard,
            self.replica if replica is None else replica,
            self.offset if offset is None else offset,
        )

    @property
    def offsets(self) -> dict[str, Value]:
        """The offsets as a dict from axis name to value."""
        return dict(self.offset)

    def axes(self) -> tuple[Axis, ...]:
        """Axes used by shard, replica and offsets, in order of first appearance."""
        seen = dict.fromkeys(it.axis for it in self.shard + self.replica)
        seen.update(dict.fromkeys(get_axis(a) for a, _ in self.offset))
        return tuple(seen)

    # ---- measures -------------------------------------------------------------------------

    def size(self, axis: str | Axis | None = None) -> Value:
        """Product of shard extents (on `axis` only, when given); replicas do not count."""
        name = None if axis is None else get_axis(axis).name
        out: Value = 1
        for it in self.shard:
            if name is None or it.axis.name == name:
                out = mul(out, it.extent)
        return out

    def span(self, axis: str | Axis | None = None) -> Value:
        """`1 + sum((e - 1) * s) + offset` on `axis` (summed over memory axes when None)."""
        name = None if axis is None else get_axis(axis).name

        def on(ax: Axis) -> bool:
            return ax.is_memory if name is None else ax.name == name

        out: Value = 1
        for it in self.shard + self.replica:
            if on(it.axis):
                out = add(out, mul(add(it.extent, -1), it.stride))
        for ax, value in self.offset:
            if on(get_axis(ax)):
                out = add(out, value)
        return out

    # ---- maps -----------------------------------------------------------------------------

    def apply(self, *coord: Any, shape: Sequence[object] | None = None) -> dict[str, Any]:
        """The base physical coordinate of a logical coordinate, as {axis name: value}.

        `apply(c)`: a linear index, split row-major over the shard extents.
        `apply(i, j, shape=(8, 16))`: a coordinate over `shape`; it is split within the
        layout's groups for `shape` when the layout groups by it, else flattened row-major.
        `apply(c0, ..., ck)` without a shape: one digit per shard iter.
        Coordinates may be ints, `Sym`s or expression nodes supporting `+ * // %`. The keys are
        the axes of the shard and the offsets; replicas are not applied (see `image`).
        """
        iters, digits = self._digits(coord, shape)
        out: dict[str, Any] = {it.axis.name: 0 for it in self.shard}
        for it, digit in zip(iters, digits):
            out[it.axis.name] = add(out.get(it.axis.name, 0), mul(digit, it.stride))
        for ax, value in self.offset:
            out[ax] = add(out.get(ax, 0), value)
        return out

    def image(self, *coord: Any, shape: Sequence[object] | None = None) -> frozenset[Place]:
        """Every physical place of an element: the base (`apply`) plus each replica copy.

        A place is a tuple of (axis name, value) pairs sorted by axis name, covering the base's
        axes and the replica axes. Replica extents must be concrete.
        """
        base = self.apply(*coord, shape=shape)
        for it in self.replica:
            base.setdefault(it.axis.name, 0)
        ranges = []
        for it in self.replica:
            if not isinstance(it.extent, int):
                raise LayoutError(f"image needs concrete replica extents, got {it}")
            ranges.append(range(it.extent))
        places = set()
        for digits in itertools.product(*ranges):
            place = dict(base)
            for it, digit in zip(self.replica, digits):
                place[it.axis.name] = add(place[it.axis.name], mul(digit, it.stride))
            places.add(tuple(sorted(place.items())))
        return frozenset(places)

    def _digits(self, coord: Sequence[Any], shape: Sequence[object] | None,
                ) -> tuple[Sequence[Iter], list[Any]]:
        extents = [it.extent for it in self.shard]
        if shape is None:
            if len(coord) == 1:
                return self.shard, split_coord(coord[0], extents)
            if len(coord) != len(self.shard):
                raise LayoutError(
                    f"apply without a shape takes one linear index or one digit per shard "
                    f"iter ({len(self.shard)}), got {len(coord)} coordinates for {self}"
                )
            return self.shard, list(coord)
        dims = [as_value(s, "shape dimension") for s in shape]
        if len(dims) != len(coord):
            raise LayoutError(f"coordinate {tuple(coord)} does not match shape {tuple(dims)}")
        try:
            grouped, seps = self.group(dims)
        except LayoutError:
            flat: Any = 0
            for c, d in zip(coord, dims):
                flat = add(mul(flat, d), c)
            return self.shard, split_coord(flat, extents)
        digits: list[Any] = []
        for d, c in enumerate(coord):
            group = grouped.shard[seps[d]:seps[d + 1]]
            digits += split_coord(c, [it.extent for it in group]) if group else []
        return grouped.shard, digits

    # ---- canonical form and equality ------------------------------------------------------

    def canonicalize(self, target: object = None) -> TileLayout:
        """The canonical form (see `canonical`); a GPU target also fuses thread axes."""
        if target is None:
            return self._canonical
        return TileLayout(*canonical.canonical_parts(self.shard, self.replica, self.offset,
                                                     target))

    @cached_property
    def _canonical(self) -> TileLayout:
        return TileLayout(*canonical.canonical_parts(self.shard, self.replica, self.offset))

    @cached_property
    def _key(self) -> tuple:
        c = self._canonical
        return (c.shard, c.replica, frozenset(c.offset))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TileLayout):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def structural_equal(self, other: object) -> bool:
        """Exact equality of the three parts, without canonicalizing."""
        return isinstance(other, TileLayout) and (
            (self.shard, self.replica, self.offset) == (other.shard, other.replica, other.offset)
        )

    def is_trivial(self) -> bool:
        """True when the canonical form is `S[n:1]` on `m` (or empty), no replica or offset."""
        c = self._canonical
        if c.replica or c.offset or len(c.shard) > 1:
            return False
        return all(it.axis == MEMORY and it.stride == 1 for it in c.shard)

    # ---- text -----------------------------------------------------------------------------

    def __str__(self) -> str:
        return format_tile(self.shard, self.replica, self.offset)

    def __repr__(self) -> str:
        return f"TileLayout({self})"

    def script(self) -> str:
        """TVMScript form: `T.TileLayout(T.S[(8, 2):(4 @ Axis.laneid, 1)] + ...)`."""
        return f"T.TileLayout({format_tile(self.shard, self.replica, self.offset, True)})"

    # ---- transformations ------------------------------------------------------------------

    def group(self, shape: Sequence[object]) -> tuple[TileLayout, list[int]]:
        """Split iters so consecutive runs multiply to `shape`'s dims; also the run bounds."""
        shard, seps = algebra.group_iters(self.shard, shape, self)
        return self.with_parts(shard=shard), seps

    def tile(self, outer: TileLayout, outer_shape: Sequence[object],
             inner_shape: Sequence[object]) -> TileLayout:
        """Tile `outer` over copies of `self`: f(x_o ‖ x_i) = f_outer(x_o) * span + f(x_i)."""
        return algebra.tile(self, _require_tile("tile", outer), outer_shape, inner_shape)

    def direct_sum(self, left: TileLayout, left_shape: Sequence[object],
                   right_shape: Sequence[object]) -> TileLayout:
        """`left(a) + self(b)` over the interleaved domain (tile without span scaling)."""
        return algebra.direct_sum(self, _require_tile("direct_sum", left), left_shape,
                                  right_shape)

    def slice(self, shape: Sequence[object], region: Sequence[Any]) -> TileLayout:
        """The layout of a rectangular region ((begin, end) per dim) of a `shape` tensor."""
        return slicing.slice_layout(self, shape, region)

    def storage(self) -> TileLayout:
        """The memory part alone (thread and device parts dropped): the per-thread storage."""
        return TileLayout(
            [it for it in self.shard if it.axis.is_memory],
            [it for it in self.replica if it.axis.is_memory],
            [(a, v) for a, v in self.offset if get_axis(a).is_memory],
        )

    def unpack(self, n: int, axis: str | Axis = MEMORY) -> TileLayout:
        """Each element becomes `n` contiguous ones (see `packing.unpack`)."""
        return packing.unpack(self, n, axis)

    def pack(self, n: int, axis: str | Axis = MEMORY) -> TileLayout:
        """`n` contiguous elements become one (the inverse of unpack; see `packing.pack`)."""
        return packing.pack(self, n, axis)

    def broadcast(self, n: int, position: int = -1, axis: str | Axis = MEMORY) -> TileLayout:
        """Insert a stride-0 shard iter of extent `n` (see `packing.broadcast`)."""
        return packing.broadcast(self, n, position, axis)

    def substitute(self, env: Mapping[str, Any]) -> TileLayout:
        """Replace symbols by ints or symbolic values from `env`."""

        def sub(v: Value) -> Value:
            out = substitute(v, env)
            if not is_value(out):
                raise LayoutError(f"substituting into {self} gave a non-integer value {out!r}")
            return out

        return TileLayout(
            [Iter(sub(it.extent), sub(it.stride), it.axis) for it in self.shard],
            [Iter(sub(it.extent), sub(it.stride), it.axis) for it in self.replica],
            [(a, sub(v)) for a, v in self.offset],
        )

    def symbols(self) -> frozenset[str]:
        """Every symbol name used by extents, strides or offsets."""
        out: set[str] = set()
        values = [v for it in self.shard + self.replica for v in (it.extent, it.stride)]
        for v in values + [v for _, v in self.offset]:
            if isinstance(v, Sym):
                out |= v.names()
        return frozenset(out)


def split_coord(coord: Any, extents: Sequence[Value]) -> list[Any]:
    """Row-major digits of `coord`: last fastest, the outermost digit keeps the quotient."""
    digits: list[Any] = [0] * len(extents)
    for k in range(len(extents) - 1, 0, -1):
        digits[k] = mod(coord, extents[k])
        coord = floordiv(coord, extents[k])
    if extents:
        digits[0] = coord
    return digits


def _require_tile(op: str, other: object) -> TileLayout:
    if not isinstance(other, TileLayout):
        raise LayoutError(f"{op} takes a TileLayout, got {type(other).__name__}")
    return other


def _iters(items: Iterable[Any], what: str) -> tuple[Iter, ...]:
    out = tuple(items)
    for it in out:
        if not isinstance(it, Iter):
            raise LayoutError(f"{what} entries must be Iter, got {it!r}")
    return out


def _merge_offsets(offset: OffsetLike) -> tuple[tuple[str, Value], ...]:
    if offset is None:
        return ()
    pairs = offset.items() if isinstance(offset, Mapping) else offset
    out: dict[str, Value] = {}
    for ax, value in pairs:
        name = get_axis(ax).name
        out[name] = add(out.get(name, 0), as_value(value, f"offset on {name}"))
    return tuple(out.items())
