"""gpu-launch-dims: one extent per thread axis and kernel, so every region has a launch shape.

Within one launch region, several loops may be bound to the same axis (sibling threadIdx.x
loops separated by barriers, as TensorIR writes a shared-memory kernel). The hardware has one
extent per axis, so the region's extent of an axis is:
- the common extent, when every loop bound to it has the same (possibly symbolic) extent;
- the largest, when the extents are different constants; each shorter loop is then given the
  launch extent and its body a guard `if v < extent:` (the extra threads idle);
- an error, when symbolic extents differ (the launch shape would be unknown).
`launch_extents(region)` (tirc.ir.gpu.launch) reads the result back.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.expr import IntImm, PrimExpr, binop
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.launch import launch_extents, same_extent
from tirc.ir.gpu.threads import (
    const_value,
    is_thread_loop,
    map_regions,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.stmt import For, IfThenElse, Stmt
from tirc.ir.visitor import Mutator
from tirc.passes.pass_base import PassContext, PrimFuncPass


class _Guard(Mutator):
    """Give every loop of a tag the launch extent, guarding the shorter ones."""

    def __init__(self, extents: dict[str, PrimExpr]) -> None:
        self.extents = extents

    def generic_visit(self, n: Node) -> Any:
        return super().generic_visit(n) if isinstance(n, Stmt) else n

    def visit_For(self, s: For) -> Any:
        new = self.generic_visit(s)
        if not is_thread_loop(s):
            return new
        launch = self.extents[s.thread_tag or ""]
        if same_extent(launch, s.extent):
            return new
        cond = binop("lt", s.loop_var, IntImm(const_value(s.extent) or 0, s.loop_var.dtype))
        body = IfThenElse(cond, new.body, span=s.span)
        return new.replace(extent=IntImm(const_value(launch) or 0, s.extent.dtype), body=body)


def unify_region(region: For) -> Stmt:
    """`region` with one extent per thread axis (see the module docstring)."""
    return _Guard(launch_extents(region)).visit(region)


@dataclass(frozen=True)
class GPULaunchDims(PrimFuncPass):
    """Give each thread axis one extent per kernel (see the module docstring)."""

    name: ClassVar[str] = "gpu-launch-dims"
    description: ClassVar[str] = ("one extent per thread axis and kernel; shorter loops get the "
                                  "launch extent and a guard")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = map_regions(func.body, unify_region)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
