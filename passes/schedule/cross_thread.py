"""bind of a reduction loop to GPU threads: a cross-thread reduction.

`sch.bind(k, "threadIdx.x")` on a loop that feeds reduction variables is TVM's cross-thread
reduction: the threads of a block share the reduction of each output element, each folding
the iterations of its own index (and of the serial loops inside it) into a register, and the
partial values are then combined across the threads (gpu-lower-cross-thread-reduction lowers
it to a tree over shared memory). It is allowed when:

- the loop holds exactly one block, which is a reduction `X[...] = X[...] op value` with op one
  of +, *, max, min and an init (so partial values can be combined in any order);
- the loop feeds only reduction variables of that block, and no loop outside it in the block's
  scope feeds one (the reduction of an element is finished inside one run of the loop);
- its extent is a constant (the tree over the threads is sized at compile time), and its
  axis is threadIdx.x, .y or .z.
"""

from __future__ import annotations

from tirc.ir.analysis.regions import uses_any
from tirc.ir.expr import IntImm
from tirc.ir.stmt import For, IterKind
from tirc.passes.schedule.dependence import BlockSite, child_sites
from tirc.passes.schedule.reduction import reduction_pattern
from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule.tree import Path, loops_in_scope

THREAD_AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def feeds_reduction(path: Path, lp: For) -> bool:
    """Whether the loop at `path` feeds a reduction variable of a block under it."""
    for site in child_sites(path):
        for iv, v in zip(site.block.iter_vars, site.realize.iter_values):
            if iv.kind == IterKind.REDUCE and uses_any(v, {lp.loop_var}):
                return True
    return False


def check_cross_thread(prim: str, path: Path, lp: For, axis: str) -> BlockSite:
    """The block of a loop bound to threads across a reduction, after the checks above."""
    name = lp.loop_var.name
    if axis not in THREAD_AXES:
        raise ScheduleError(f"{prim}: loop {name} feeds a reduction; it can be bound to "
                            f"threadIdx.x/y/z (a cross-thread reduction), not {axis}")
    sites = child_sites(path)
    if len(sites) != 1:
        raise ScheduleError(f"{prim}: loop {name} feeds a reduction and holds {len(sites)} "
                            f"blocks; a cross-thread reduction needs exactly one")
    site = sites[0]
    blk = site.block
    reduction_pattern(prim, blk)
    for iv, v in zip(blk.iter_vars, site.realize.iter_values):
        if iv.kind != IterKind.REDUCE and uses_any(v, {lp.loop_var}):
            raise ScheduleError(f"{prim}: loop {name} carries a dependence (it is bound to "
                                f"spatial variable {iv.var.name} and to a reduction variable "
                                f"of block \"{blk.name}\")")
    if not isinstance(lp.extent, IntImm):
        raise ScheduleError(f"{prim}: loop {name} feeds a reduction across threads; its "
                            f"extent must be a constant")
    scope_loops = loops_in_scope(site.path)
    above = scope_loops[:next(k for k, x in enumerate(scope_loops) if x is lp)]
    red_values = [v for iv, v in zip(blk.iter_vars, site.realize.iter_values)
                  if iv.kind == IterKind.REDUCE]
    for x in above:
        if uses_any(red_values, {x.loop_var}):
            raise ScheduleError(f"{prim}: reduction loop {x.loop_var.name} of block "
                                f"\"{blk.name}\" is outside loop {name}; the threads must "
                                f"finish each element's reduction together")
    return site
