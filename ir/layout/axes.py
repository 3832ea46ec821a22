"""Named physical axes of layouts: memory, threads and devices, in one registry.

Every iter and offset of a layout lives on an axis. An axis has a kind (memory, thread or
device); a GPU thread axis also has a scope pair (it numbers `subscope` units inside one
`scope` unit, e.g. `laneid` numbers threads in a warp), which is what fusing on a GPU target
uses: `warpid * 32 + laneid` is `tx`. Unknown names are errors, not silent new axes; a program
declares its device-mesh axes with `register_device_axis`.
"""

from __future__ import annotations

import enum

from tirc.ir.layout.errors import LayoutError
from tirc.ir.lean_dataclass import dataclass


class AxisKind(enum.Enum):
    """What an axis indexes: a memory address, a thread, or a device."""

    MEMORY = "memory"
    THREAD = "thread"
    DEVICE = "device"


# GPU execution scopes, innermost first; an axis numbers `subscope` units within a `scope`.
SCOPES = ("thread", "warp", "warpgroup", "cta", "cluster", "grid")
# Threads per unit, for the scopes below a CTA (where the count is fixed by hardware).
THREADS_PER_SCOPE = {"thread": 1, "warp": 32, "warpgroup": 128}


@dataclass(frozen=True)
class Axis:
    """A registered axis. `scope`/`subscope` are set for GPU thread axes only."""

    name: str
    kind: AxisKind
    subscope: str | None = None
    scope: str | None = None

    @property
    def is_memory(self) -> bool:
        return self.kind is AxisKind.MEMORY

    @property
    def is_thread(self) -> bool:
        return self.kind is AxisKind.THREAD

    @property
    def is_device(self) -> bool:
        return self.kind is AxisKind.DEVICE

    def __str__(self) -> str:
        return self.name


_REGISTRY: dict[str, Axis] = {}


def _register(axis: Axis) -> Axis:
    old = _REGISTRY.get(axis.name)
    if old is not None and old != axis:
        raise LayoutError(
            f"axis {axis.name!r} is already registered as a {old.kind.value} axis"
        )
    _REGISTRY[axis.name] = axis
    return axis


def register_device_axis(name: str) -> Axis:
    """Declare a device-mesh axis (idempotent); the name must not be another kind of axis."""
    _check_name(name)
    return _register(Axis(name, AxisKind.DEVICE))


def register_memory_axis(name: str) -> Axis:
    """Declare a memory axis a target adds (banks, tensor-memory lanes/columns); idempotent."""
    _check_name(name)
    return _register(Axis(name, AxisKind.MEMORY))


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise LayoutError(f"invalid axis name {name!r}")


def get_axis(name: str | Axis) -> Axis:
    """The registered axis called `name` (an `Axis` passes through)."""
    if isinstance(name, Axis):
        return name
    axis = _REGISTRY.get(name)
    if axis is None:
        raise LayoutError(
            f"unknown axis {name!r}; known axes: {', '.join(sorted(_REGISTRY))} "
            "(declare mesh axes with register_device_axis)"
        )
    return axis


def is_axis(name: str) -> bool:
    """True when `name` is a registered axis."""
    return name in _REGISTRY


def registered_axes() -> tuple[Axis, ...]:
    """Every registered axis, in registration order."""
    return tuple(_REGISTRY.values())


MEMORY = _register(Axis("m", AxisKind.MEMORY))
for _name in ("TLane", "TCol", "Bank", "P", "F"):
    register_memory_axis(_name)
for _name, _sub, _scope in (
    ("bx", "cta", "grid"), ("by", "cta", "grid"), ("bz", "cta", "grid"),
    ("cbx", "cta", "cluster"), ("cby", "cta", "cluster"), ("cbz", "cta", "cluster"),
    ("tx", "thread", "cta"), ("warpid", "warp", "cta"), ("laneid", "thread", "warp"),
    ("wgid", "warpgroup", "cta"), ("tid_in_wg", "thread", "warpgroup"),
    ("wid_in_wg", "warp", "warpgroup"),
):
    _register(Axis(_name, AxisKind.THREAD, _sub, _scope))
_register(Axis("tid", AxisKind.THREAD))
_register(Axis("gpuid", AxisKind.DEVICE))

# The intra-CTA axis that numbers `subscope` units inside `scope`, for fusing on GPU targets.
_INTRA_CTA_AXIS = {
    (a.subscope, a.scope): a
    for a in registered_axes()
    if a.is_thread and a.scope in THREADS_PER_SCOPE.keys() | {"cta"}
}


def gpu_fusion_map(axes: set[Axis]) -> dict[Axis, tuple[Axis, int]]:
    """How to rewrite the intra-CTA GPU thread axes among `axes` onto one axis.

    The axes must form one connected chain of scopes (laneid: thread->warp, warpid:
    warp->cta); then each maps to the axis spanning the whole chain, with its stride scaled by
    its unit's size (warpid -> tx with stride * 32). Returns {} when there is nothing to fuse
    or the chain is broken or conflicting (the layout is then left as it is). Block axes
    (bx, cbx, ...) never take part.
    """
    intra = {a for a in axes if a in _INTRA_CTA_AXIS.values()}
    links: dict[str, str] = {}
    for a in intra:
        assert a.subscope is not None and a.scope is not None
        if links.setdefault(a.subscope, a.scope) != a.scope:
            return {}
    if len(intra) < 2 or len(links) != len(intra):
        return {}
    inner = min(links, key=SCOPES.index)
    outer, steps = inner, 0
    while outer in links and steps <= len(links):
        outer, steps = links[outer], steps + 1
    if steps != len(links):
        return {}
    target = _INTRA_CTA_AXIS.get((inner, outer))
    if target is None:
        return {}
    unit = THREADS_PER_SCOPE[inner]
    out: dict[Axis, tuple[Axis, int]] = {}
    for a in intra:
        assert a.subscope is not None
        out[a] = (target, THREADS_PER_SCOPE[a.subscope] // unit)
    return out


def is_gpu_target(target: object) -> bool:
    """True for targets whose thread axes fuse by scope ("cuda", "nvptx", "cuda -arch=...")."""
    if target is None:
        return False
    kind = getattr(target, "kind", target)
    words = str(getattr(kind, "name", kind)).split()
    return bool(words) and words[0] in ("cuda", "nvptx")
