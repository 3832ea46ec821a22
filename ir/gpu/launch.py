"""What a kernel's launch needs: one extent per thread axis, and its shared memory.

Within one launch region, several loops may be bound to the same axis (sibling threadIdx.x
loops separated by barriers, as TensorIR writes a shared-memory kernel). The hardware has one
extent per axis, so the region's extent of an axis is:
- the common extent, when every loop bound to it has the same (possibly symbolic) extent;
- the largest, when the extents are different constants (gpu-launch-dims then gives each
  shorter loop the launch extent and its body a guard `if v < extent:`);
- an error, when symbolic extents differ (the launch shape would be unknown).
`launch_extents(region)` reads it: tag -> extent, the grid's symbolic in general
(`(n + 255) // 256`), the block's constant after verify-gpu. `shared_bytes(region)` is the
shared memory a kernel allocates.
"""

from __future__ import annotations

from tirc.ir.analysis.storage import storage_size
from tirc.ir.arith import construct
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import IntImm, PrimExpr
from tirc.ir.gpu.threads import ALL_TAGS, const_value, thread_loops, walk_stmts
from tirc.ir.stmt import Allocate, For, Stmt
from tirc.ir.structural import same_expr


def same_extent(a: PrimExpr, b: PrimExpr) -> bool:
    """Whether two extents are the same: equal constants, or the same expression."""
    ca, cb = const_value(a), const_value(b)
    if ca is not None or cb is not None:
        return ca == cb
    return same_expr(a, b)


def unify_extent(tag: str, loops: list[For]) -> PrimExpr:
    """The launch extent of `tag` over the loops bound to it in one region."""
    first = loops[0].extent
    if all(same_extent(first, lp.extent) for lp in loops):
        return first
    consts = [const_value(lp.extent) for lp in loops]
    if all(c is not None for c in consts):
        return max((lp.extent for lp in loops), key=lambda e: const_value(e) or 0)
    odd = next(lp for lp in loops if not same_extent(first, lp.extent))
    raise CompileError(f"gpu-launch-dims: loops bound to {tag} in one kernel have different "
                       f"extents, and not all are constants (loop '{loops[0].loop_var.name}' "
                       f"and loop '{odd.loop_var.name}'); give them one extent", odd.span)


def launch_extents(region: Stmt) -> dict[str, PrimExpr]:
    """Tag -> launch extent of one region (after this pass every loop of a tag agrees)."""
    by_tag: dict[str, list[For]] = {}
    for lp in thread_loops(region):
        by_tag.setdefault(lp.thread_tag or "", []).append(lp)
    return {tag: unify_extent(tag, by_tag[tag]) for tag in ALL_TAGS if tag in by_tag}


SHARED_ALIGN = 16


def alloc_shared_bytes(s: Allocate) -> int:
    """Bytes of shared memory one allocation takes (0 for other scopes; 16-byte aligned)."""
    if s.buffer.scope not in ("shared", "shared.dyn"):
        return 0
    size = construct.fold(storage_size(s.buffer))
    n = size.value if isinstance(size, IntImm) else 0
    return -(-n * s.buffer.dtype.bytes // SHARED_ALIGN) * SHARED_ALIGN


def shared_bytes(region: Stmt) -> int:
    """Bytes of shared memory a kernel allocates (each buffer 16-byte aligned)."""
    return sum(alloc_shared_bytes(s) for s in walk_stmts(region) if isinstance(s, Allocate))
