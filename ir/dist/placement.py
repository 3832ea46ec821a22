"""Placements: how a global tensor is spread over the axes of a device mesh.

One entry per mesh axis, written as TVM's distributed dialect writes them, comma-separated in
mesh-axis order (`"S[1]"`, `"R"`, `"S[0], R"`), plus what TVM lacks:

- `S[d]`: tensor dimension d is split over the mesh axis (balanced: the first `N % p`
  coordinates hold one more row than the rest, so uneven sizes work).
- `R`: every coordinate on the axis holds the whole (per other axes) tensor.
- `P` / `P[sum]`, `P[max]`, `P[min]`, `P[prod]`: a partial result; the value is the reduction
  of the copies over the axis (what a sharded contraction leaves before its all-reduce).
- `O[k]`: only coordinate k holds the tensor (an Axe offset on the device axis with no
  replica); reaching `R` from it is a broadcast.

`S` and `R` and `O` are Axe layouts over the mesh's device axes (see `tirc.ir.dist.axe`);
`P` is the one state a layout cannot say, because it is about values, not places.
"""

from __future__ import annotations

import re
from tirc.ir.lean_dataclass import dataclass

REDUCE_OPS = ("sum", "max", "min", "prod")


class PlacementError(ValueError):
    """A placement string that does not parse, or does not fit its tensor or mesh."""


@dataclass(frozen=True)
class Shard:
    """`S[dim]`: the tensor dimension `dim` is split over the mesh axis."""

    dim: int

    def __str__(self) -> str:
        return f"S[{self.dim}]"


@dataclass(frozen=True)
class Replicate:
    """`R`: a full copy at every coordinate of the mesh axis."""

    def __str__(self) -> str:
        return "R"


@dataclass(frozen=True)
class Partial:
    """`P[op]`: the true value is the `op`-reduction of the copies along the mesh axis."""

    op: str = "sum"

    def __str__(self) -> str:
        return "P" if self.op == "sum" else f"P[{self.op}]"


@dataclass(frozen=True)
class Owned:
    """`O[coord]`: only mesh coordinate `coord` holds the tensor."""

    coord: int

    def __str__(self) -> str:
        return f"O[{self.coord}]"


Item = Shard | Replicate | Partial | Owned
REPLICATE = Replicate()

_ITEM = re.compile(r"^(?:S\[\s*(-?\d+)\s*\]|R|P(?:\[\s*(\w+)\s*\])?|O\[\s*(\d+)\s*\])$")


@dataclass(frozen=True)
class Placement:
    """The placement of one tensor: an item per mesh axis."""

    items: tuple[Item, ...]

    def __str__(self) -> str:
        return ", ".join(str(i) for i in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, axis: int) -> Item:
        return self.items[axis]

    def replace(self, axis: int, item: Item) -> Placement:
        """The placement with the entry of mesh axis `axis` replaced."""
        items = list(self.items)
        items[axis] = item
        return Placement(tuple(items))

    @staticmethod
    def replicated(ndim: int) -> Placement:
        """`R` on every one of `ndim` mesh axes."""
        return Placement((REPLICATE,) * ndim)

    def shard_axes(self, dim: int) -> list[int]:
        """The mesh axes that split tensor dimension `dim`."""
        return [a for a, it in enumerate(self.items) if isinstance(it, Shard) and it.dim == dim]

    def sharded_dims(self) -> dict[int, int]:
        """Tensor dimension -> the mesh axis splitting it."""
        return {it.dim: a for a, it in enumerate(self.items) if isinstance(it, Shard)}

    @property
    def is_replicated(self) -> bool:
        """True when every mesh axis holds a full copy."""
        return all(isinstance(i, Replicate) for i in self.items)

    @property
    def has_partial(self) -> bool:
        """True when some mesh axis holds partial values."""
        return any(isinstance(i, Partial) for i in self.items)

    def check(self, ndim: int, mesh_ndim: int) -> None:
        """PlacementError unless it fits a rank-`ndim` tensor on a `mesh_ndim`-axis mesh."""
        if len(self.items) != mesh_ndim:
            raise PlacementError(f"placement \"{self}\" has {len(self.items)} entr"
                                 f"{'ies' if len(self.items) != 1 else 'y'}, but the mesh has "
                                 f"{mesh_ndim} ax{'es' if mesh_ndim != 1 else 'is'}")
        seen: dict[int, int] = {}
        for a, it in enumerate(self.items):
            if isinstance(it, Shard):
                if not 0 <= it.dim < ndim:
                    raise PlacementError(f"placement \"{self}\" splits dimension {it.dim} of a "
                                         f"tensor of rank {ndim}")
                if it.dim in seen:
                    raise PlacementError(f"placement \"{self}\" splits dimension {it.dim} over "
                                         f"two mesh axes ({seen[it.dim]} and {a}); tirc splits "
                                         "a dimension over one mesh axis at most")
                seen[it.dim] = a


def parse_placement(text: str, ndim: int | None = None) -> Placement:
    """`"S[1]"`, `"R"`, `"S[0], P"`, ... -> Placement; negative dimensions count from the end
    when the tensor rank `ndim` is known."""
    parts = [p.strip() for p in text.split(",")]
    items: list[Item] = []
    for part in parts:
        m = _ITEM.match(part)
        if m is None:
            raise PlacementError(f"bad placement \"{text}\": each mesh axis takes S[dim], R, "
                                 "P, P[max|min|prod] or O[coord]")
        if m.group(1) is not None:
            d = int(m.group(1))
            if d < 0 and ndim is not None:
                d += ndim
            if d < 0:
                raise PlacementError(f"bad placement \"{text}\": dimension {m.group(1)}")
            items.append(Shard(d))
        elif part.startswith("P"):
            op = m.group(2) or "sum"
            if op not in REDUCE_OPS:
                raise PlacementError(f"bad placement \"{text}\": a partial value reduces by "
                                     f"{', '.join(REDUCE_OPS)}, not '{op}'")
            items.append(Partial(op))
        elif part.startswith("O"):
            items.append(Owned(int(m.group(3))))
        else:
            items.append(REPLICATE)
    return Placement(tuple(items))
