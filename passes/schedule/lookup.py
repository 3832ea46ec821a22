"""The query primitives: get_block, get_loops, get_child_blocks."""

from __future__ import annotations

from typing import Any

from tirc.passes.schedule.dependence import child_sites
from tirc.passes.schedule.state import BlockRV, LoopRV, ScheduleError, ScheduleState
from tirc.passes.schedule.tree import loops_in_scope


def get_block(s: ScheduleState, name: Any, func_name: Any = None) -> BlockRV:
    """The block called `name` (`func_name`, when given, must be the scheduled function)."""
    if not isinstance(name, str):
        raise ScheduleError("get_block: the block name must be a string")
    if func_name is not None and func_name != s.name:
        raise ScheduleError(f"get_block: this schedule applies to function \"{s.name}\", "
                            f"not \"{func_name}\"")
    s.lookup_block(name)
    return s.block_rv(name)


def get_loops(s: ScheduleState, block: Any) -> list[LoopRV]:
    """The loops above `block` in its scope, outermost first."""
    path = s.block_path(block, "get_loops")
    return [LoopRV(lp.loop_var) for lp in loops_in_scope(path)]


def get_child_blocks(s: ScheduleState, block_or_loop: Any) -> list[BlockRV]:
    """The blocks directly under a block or loop (not those nested in another block)."""
    if isinstance(block_or_loop, LoopRV):
        path = s.loop_path(block_or_loop, "get_child_blocks")
    else:
        path = s.block_path(block_or_loop, "get_child_blocks", "the block or loop")
    return [s.block_rv(site.name) for site in child_sites(path)]

