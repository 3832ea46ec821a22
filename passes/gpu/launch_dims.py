"""gpu-launch-dims: one extent per thread axis and kernel, so every region has a launch shape.

Within one launch region, several loops may be bound to the same axis (sibling threadIdx.x
loops separated by barriers, as TensorIR writes a shared-memory kernel). The hardware has one
extent per axis, so the region's extent of an axis is:
- the common extent, when every loop bound to it has the same (possibly symbolic) extent;
- the largest, when the extents are different constants; each shorter loop is then given the
  launch extent and its body a guard `if v < extent:` (the extra threads idle);
- an error, when symbolic extents differ (the launch shape would be unknown).
`launch_extents(region)` reads the result back: tag -> extent, the grid's symbolic in general
(`(n + 255) // 256`), the block's constant after verify-gpu.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import IntImm, PrimExpr, binop
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.stmt import For, IfThenElse, Stmt
from tirc.ir.visitor import Mutator
from tirc.passes.gpu.thread_tags import (
    ALL_TAGS,
    const_value,
    is_thread_loop,
    map_regions,
    same_expr,
    thread_loops,
)
from tirc.passes.pass_base import PassContext, PrimFuncPass


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    ca, cb = const_value(a), const_value(b)
    if ca is not None or cb is not None:
        return ca == cb
    return same_expr(a, b)


def unify_extent(tag: str, loops: list[For]) -> PrimExpr:
    """The launch extent of `tag` over the loops bound to it in one region."""
    first = loops[0].extent
    if all(_same(first, lp.extent) for lp in loops):
        return first
    consts = [const_value(lp.extent) for lp in loops]
    if all(c is not None for c in consts):
        return max((lp.extent for lp in loops), key=lambda e: const_value(e) or 0)
    odd = next(lp for lp in loops if not _same(first, lp.extent))
    raise CompileError(f"gpu-launch-dims: loops bound to {tag} in one kernel have different "
                       f"extents, and not all are constants (loop '{loops[0].loop_var.name}' "
                       f"and loop '{odd.loop_var.name}'); give them one extent", odd.span)


def launch_extents(region: Stmt) -> dict[str, PrimExpr]:
    """Tag -> launch extent of one region (after this pass every loop of a tag agrees)."""
    by_tag: dict[str, list[For]] = {}
    for lp in thread_loops(region):
        by_tag.setdefault(lp.thread_tag or "", []).append(lp)
    return {tag: unify_extent(tag, by_tag[tag]) for tag in ALL_TAGS if tag in by_tag}


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
        if _same(launch, s.extent):
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
