"""`R.DTensor(shape, dtype, "mesh[0]", "S[1]")`: the struct info of a distributed tensor.

A DTensor is a tensor of its global shape (shape inference works on it as on any tensor) that
also says on which device mesh it lives and how (its placement, one entry per mesh axis).
Sharding propagation gives one to every value; lowering to the per-device program turns each
into a plain tensor of its per-device shape.
"""

from __future__ import annotations

from dataclasses import field
from tirc.ir.lean_dataclass import dataclass

from tirc.ir.dist.placement import Placement
from tirc.ir.graph import StructInfo, TensorSInfo, TupleSInfo


@dataclass(frozen=True)
class DTensorSInfo(TensorSInfo):
    """A tensor of global `shape` on the mesh `device_mesh` ("mesh[0]") with `placement`."""

    device_mesh: str = "mesh[0]"
    placement: Placement = field(default_factory=lambda: Placement(()))

    def tensor(self) -> TensorSInfo:
        """The plain tensor struct info of the global value."""
        return TensorSInfo(self.shape, self.dtype, self.ndim, span=self.span)


def with_placement(s: TensorSInfo, mesh: str, placement: Placement) -> DTensorSInfo:
    """`s` (a tensor struct info) as a DTensor on `mesh` with `placement`."""
    return DTensorSInfo(s.shape, s.dtype, s.ndim, mesh, placement, span=s.span)


def plain(s: StructInfo | None) -> StructInfo | None:
    """The struct info with every DTensor turned back into a plain tensor."""
    if isinstance(s, DTensorSInfo):
        return s.tensor()
    if isinstance(s, TupleSInfo):
        return TupleSInfo(tuple(plain(f) for f in s.fields), span=s.span)  # type: ignore[misc]
    return s


def keep_placement(declared: StructInfo, inferred: StructInfo) -> StructInfo:
    """`inferred`, carrying over the placement a declared DTensor annotation gives it."""
    if isinstance(declared, DTensorSInfo) and isinstance(inferred, TensorSInfo) and \
            not isinstance(inferred, DTensorSInfo):
        return with_placement(inferred, declared.device_mesh, declared.placement)
    if isinstance(declared, TupleSInfo) and isinstance(inferred, TupleSInfo) and \
            len(declared.fields) == len(inferred.fields):
        return TupleSInfo(tuple(keep_placement(d, i) for d, i in
                                zip(declared.fields, inferred.fields)), span=inferred.span)
    return inferred


def is_distributed(s: StructInfo | None) -> bool:
    """True when `s` is, or holds, a DTensor."""
    if isinstance(s, DTensorSInfo):
        return True
    if isinstance(s, TupleSInfo):
        return any(is_distributed(f) for f in s.fields)
    return False
