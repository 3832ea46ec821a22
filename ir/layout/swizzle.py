"""`ComposeLayout`: a tile layout followed by an XOR swizzle of its memory address.

`ComposeLayout(M, B, S, tile)` maps an element to the tile's places, then rewrites the `m`
value: `addr(m) = (f(m >> M) << M) + (m mod 2^M)` with
`f(x) = x ^ ((x & (((1 << B) - 1) << S)) >> S)`: the B bits above bit S of the unit index are
XORed into its low B bits (`swizzle_inner=False` XORs the other way). `M` is log2 of the
elements per unit (the "per element" bits), `B` the swizzle length, `S` the atom length.
The swizzle permutes addresses inside aligned blocks of `2^(M+S+B)` elements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tirc.ir.layout.axes import MEMORY, Axis
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.symbolic import Value, add, floordiv, mul
from tirc.ir.layout.tile_layout import Place, TileLayout
from tirc.ir.lean_dataclass import dataclass


@dataclass(frozen=True, eq=False)
class ComposeLayout:
    """A swizzle (per_element M, swizzle_len B, atom_len S) applied after `tile`'s `m`."""

    per_element: int
    swizzle_len: int
    atom_len: int
    tile_layout: TileLayout
    swizzle_inner: bool = True

    def __post_init__(self) -> None:
        for name in ("per_element", "swizzle_len", "atom_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise LayoutError(f"swizzle {name} must be a non-negative int, got {value!r}")
        if self.atom_len < self.swizzle_len:
            raise LayoutError(
                f"swizzle atom_len ({self.atom_len}) must be at least swizzle_len "
                f"({self.swizzle_len})"
            )
        if not isinstance(self.tile_layout, TileLayout):
            raise LayoutError(f"ComposeLayout needs a TileLayout, got {self.tile_layout!r}")

    def _with_tile(self, tile: TileLayout) -> ComposeLayout:
        return ComposeLayout(self.per_element, self.swizzle_len, self.atom_len, tile,
                             self.swizzle_inner)

    @property
    def block(self) -> int:
        """Elements per aligned block that the swizzle permutes within."""
        return 1 << (self.per_element + self.swizzle_len + self.atom_len)

    def swizzle(self, m: Any) -> Any:
        """The swizzled address of `m` (an int, or an expression supporting `^ & >> <<`)."""
        mask = (1 << self.swizzle_len) - 1
        unit = 1 << self.per_element
        if isinstance(m, int) and not isinstance(m, bool):
            x = m >> self.per_element
            if self.swizzle_inner:
                x ^= (x & (mask << self.atom_len)) >> self.atom_len
            else:
                x ^= (x & mask) << self.atom_len
            return (x << self.per_element) + (m & (unit - 1))
        try:
            x = floordiv(m, unit)
            if self.swizzle_inner:
                y = x ^ ((x & (mask << self.atom_len)) >> self.atom_len)
            else:
                y = x ^ ((x & mask) << self.atom_len)
            return add(mul(y, unit), m - mul(x, unit))
        except TypeError:
            raise LayoutError(
                f"swizzling the symbolic address {m} needs bitwise operators (^ & >> <<), "
                f"which {type(m).__name__} does not support"
            ) from None

    # ---- maps and measures ----------------------------------------------------------------

    def apply(self, *coord: Any, shape: Sequence[object] | None = None) -> dict[str, Any]:
        """The tile's `apply` with the `m` value swizzled."""
        out = self.tile_layout.apply(*coord, shape=shape)
        if MEMORY.name in out:
            out[MEMORY.name] = self.swizzle(out[MEMORY.name])
        return out

    def image(self, *coord: Any, shape: Sequence[object] | None = None) -> frozenset[Place]:
        """The tile's `image` with every `m` value swizzled."""
        return frozenset(
            tuple((a, self.swizzle(v) if a == MEMORY.name else v) for a, v in place)
            for place in self.tile_layout.image(*coord, shape=shape)
        )

    def size(self, axis: str | Axis | None = None) -> Value:
        """The tile's size (the swizzle is a permutation)."""
        return self.tile_layout.size(axis)

    def span(self, axis: str | Axis | None = None) -> Value:
        """The tile's span; on memory, rounded up to whole swizzle blocks when concrete."""
        span = self.tile_layout.span(axis)
        on_m = axis is None or str(axis) == MEMORY.name
        if on_m and isinstance(span, int):
            return -(-span // self.block) * self.block
        return span

    # ---- canonical form, equality, text ---------------------------------------------------

    def canonicalize(self, target: object = None) -> ComposeLayout:
        """The same swizzle over the canonical tile."""
        return self._with_tile(self.tile_layout.canonicalize(target))

    def _key(self) -> tuple:
        return (self.per_element, self.swizzle_len, self.atom_len, self.swizzle_inner,
                self.tile_layout)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposeLayout):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def structural_equal(self, other: object) -> bool:
        """Equal parameters and structurally equal tiles."""
        return isinstance(other, ComposeLayout) and self._key()[:4] == other._key()[:4] and (
            self.tile_layout.structural_equal(other.tile_layout)
        )

    def _params(self) -> str:
        return f"{self.per_element}, {self.swizzle_len}, {self.atom_len}"

    def __str__(self) -> str:
        extra = "" if self.swizzle_inner else ", swizzle_inner=False"
        return f"ComposeLayout({self._params()}, {self.tile_layout}{extra})"

    def __repr__(self) -> str:
        return str(self)

    def script(self) -> str:
        """TVMScript form: `T.ComposeLayout(3, 3, 3, T.TileLayout(T.S[...]))`."""
        if self.swizzle_inner:
            return f"T.ComposeLayout({self._params()}, {self.tile_layout.script()})"
        swizzle = f"T.SwizzleLayout({self._params()}, swizzle_inner=False)"
        return f"T.ComposeLayout({swizzle}, {self.tile_layout.script()})"

    # ---- transformations: on the tile, keeping the swizzle ----------------------------------

    def group(self, shape: Sequence[object]) -> tuple[ComposeLayout, list[int]]:
        """Group the tile."""
        tile, seps = self.tile_layout.group(shape)
        return self._with_tile(tile), seps

    def tile(self, outer: TileLayout, outer_shape: Sequence[object],
             inner_shape: Sequence[object]) -> ComposeLayout:
        """Tile the tile layout by `outer`, then swizzle the whole address."""
        return self._with_tile(self.tile_layout.tile(outer, outer_shape, inner_shape))

    def direct_sum(self, left: TileLayout, left_shape: Sequence[object],
                   right_shape: Sequence[object]) -> ComposeLayout:
        """Direct sum on the tile layout, then swizzle the whole address."""
        return self._with_tile(self.tile_layout.direct_sum(left, left_shape, right_shape))

    def slice(self, shape: Sequence[object], region: Sequence[Any]) -> ComposeLayout:
        """Slice the tile; the region start joins the offsets, which the swizzle sees."""
        return self._with_tile(self.tile_layout.slice(shape, region))

    def storage(self) -> ComposeLayout:
        """The same swizzle over the tile's memory part."""
        return self._with_tile(self.tile_layout.storage())

    def unpack(self, n: int, axis: str | Axis = MEMORY) -> ComposeLayout:
        """Unpack the tile; `n` (a power of two) more elements per swizzle unit."""
        bits = _log2(n, "unpack")
        tile = self.tile_layout.unpack(n, axis)
        return ComposeLayout(self.per_element + bits, self.swizzle_len, self.atom_len, tile,
                             self.swizzle_inner)

    def pack(self, n: int, axis: str | Axis = MEMORY) -> ComposeLayout:
        """Pack the tile; `n` (a power of two) fewer elements per swizzle unit."""
        bits = _log2(n, "pack")
        if bits > self.per_element:
            raise LayoutError(f"cannot pack {self} by {n}: per_element is {self.per_element}")
        tile = self.tile_layout.pack(n, axis)
        return ComposeLayout(self.per_element - bits, self.swizzle_len, self.atom_len, tile,
                             self.swizzle_inner)

    def broadcast(self, n: int, position: int = -1, axis: str | Axis = MEMORY) -> ComposeLayout:
        """Broadcast the tile."""
        return self._with_tile(self.tile_layout.broadcast(n, position, axis))

    def substitute(self, env: Mapping[str, Any]) -> ComposeLayout:
        """Substitute symbols in the tile."""
        return self._with_tile(self.tile_layout.substitute(env))


def _log2(n: object, what: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n & (n - 1):
        raise LayoutError(f"{what} of a swizzled layout needs a power of two, got {n!r}")
    return n.bit_length() - 1
