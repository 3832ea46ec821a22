"""Device meshes: an n-d grid of devices whose axes are Axe device axes.

`R.device_mesh((2, 2), I.Range(0, 4))` (TVM's spelling, in `I.module_global_infos`) declares
four devices numbered 0..3 laid out row-major on a 2x2 grid; the optional `axes=("dp", "tp")`
names the grid's axes (default `d0`, `d1`, ...), which are registered as device axes of the
layout algebra so that placements can be written and checked as Axe layouts. A value's
placement refers to a mesh as `"mesh[0]"`: the key of the global infos and an index.
"""

from __future__ import annotations

import math
import re
from tirc.ir.lean_dataclass import dataclass

from tirc.ir.layout.axes import register_device_axis
from tirc.ir.layout.errors import LayoutError
from tirc.ir.node import Node

MESH_KEY = "mesh"
_REF = re.compile(r"^\s*([A-Za-z_]\w*)\s*\[\s*(\d+)\s*\]\s*$")


class MeshError(ValueError):
    """A mesh declaration or reference that does not make sense."""


@dataclass(frozen=True)
class DeviceMesh(Node):
    """A grid of `shape` devices, numbered `first`, `first + 1`, ... row-major over the grid."""

    shape: tuple[int, ...]
    first: int = 0
    axis_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.shape or any(not isinstance(e, int) or e < 1 for e in self.shape):
            raise MeshError(f"a mesh shape is a tuple of positive integers, got {self.shape}")
        if self.first < 0:
            raise MeshError(f"a mesh's first device must be >= 0, got {self.first}")
        names = self.axis_names or tuple(f"d{k}" for k in range(len(self.shape)))
        if len(names) != len(self.shape):
            raise MeshError(f"the mesh has {len(self.shape)} axes but {len(names)} axis names")
        if len(set(names)) != len(names):
            raise MeshError(f"mesh axis names repeat: {', '.join(names)}")
        for name in names:
            try:
                register_device_axis(name)
            except LayoutError as exc:
                raise MeshError(str(exc)) from None
        object.__setattr__(self, "axis_names", tuple(names))

    @property
    def ndim(self) -> int:
        """The number of mesh axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of devices."""
        return math.prod(self.shape)

    def axis_index(self, axis: int | str) -> int:
        """The position of a mesh axis given by index or name; MeshError when there is none."""
        if isinstance(axis, str):
            if axis not in self.axis_names:
                raise MeshError(f"the mesh has no axis '{axis}' (axes: "
                                f"{', '.join(self.axis_names)})")
            return self.axis_names.index(axis)
        if not -self.ndim <= axis < self.ndim:
            raise MeshError(f"the mesh has no axis {axis} (it has {self.ndim})")
        return axis % self.ndim

    def coords(self, rank: int) -> tuple[int, ...]:
        """The grid coordinates of device `first + rank` (row-major, last axis fastest)."""
        out = []
        for extent in reversed(self.shape):
            out.append(rank % extent)
            rank //= extent
        return tuple(reversed(out))

    def rank(self, coords: tuple[int, ...]) -> int:
        """The position in the mesh (0-based) of the device at `coords`."""
        r = 0
        for c, extent in zip(coords, self.shape):
            r = r * extent + c
        return r

    def with_shape(self, shape: tuple[int, ...]) -> DeviceMesh:
        """The same mesh resized (axis names kept when the rank agrees)."""
        names = self.axis_names if len(shape) == self.ndim else ()
        return DeviceMesh(tuple(shape), self.first, names)

    def text(self) -> str:
        """TVMScript: `R.device_mesh((2,), I.Range(0, 2))` (axes named only when not default)."""
        shape = f"({self.shape[0]},)" if self.ndim == 1 else f"({', '.join(map(str, self.shape))})"
        default = tuple(f"d{k}" for k in range(self.ndim))
        names = ""
        if self.axis_names != default:
            quoted = ", ".join(f'"{n}"' for n in self.axis_names)
            names = f", axes=({quoted},)" if self.ndim == 1 else f", axes=({quoted})"
        return f"R.device_mesh({shape}, I.Range({self.first}, {self.first + self.size}){names})"


def parse_mesh_ref(text: str) -> tuple[str, int]:
    """`"mesh[0]"` -> ("mesh", 0); MeshError for anything else."""
    m = _REF.match(text)
    if m is None:
        raise MeshError(f"a device mesh is named as \"mesh[0]\", got \"{text}\"")
    return m.group(1), int(m.group(2))


def lookup_mesh(global_infos: dict[str, tuple[object, ...]], ref: str) -> DeviceMesh:
    """The mesh `ref` ("mesh[0]") names among a module's global infos."""
    key, index = parse_mesh_ref(ref)
    items = global_infos.get(key)
    if not items:
        raise MeshError(f"the module declares no device mesh '{key}' (declare it with "
                        f"I.module_global_infos({{\"{key}\": [R.device_mesh((2,), "
                        "I.Range(0, 2))]}))")
    if index >= len(items) or not isinstance(items[index], DeviceMesh):
        raise MeshError(f"'{ref}': the module declares {len(items)} device mesh"
                        f"{'es' if len(items) != 1 else ''} under '{key}'")
    mesh = items[index]
    assert isinstance(mesh, DeviceMesh)
    return mesh


def parse_mesh_shape(text: str) -> tuple[int, ...]:
    """`"4"`, `"2x2"` or `"(2, 2)"` -> a mesh shape; MeshError otherwise."""
    parts = [p for p in re.split(r"[x,()\s]+", text.strip()) if p]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise MeshError(f"a mesh shape is written 4 or 2x2, got '{text}'")
    return tuple(int(p) for p in parts)
