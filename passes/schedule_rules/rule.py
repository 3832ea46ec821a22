"""What a schedule rule is, and what it is told: the target's vector width and thread limits.

A rule (TVM's dlight `ScheduleRule`) looks at one block of a function, the *anchor*, and
either declines (returns None, having called no primitive) or schedules it by calling schedule
primitives on a TracedSchedule, taking along the blocks it schedules with it (an epilogue, the
other stages of a norm); it returns the names of the blocks it scheduled. A primitive that
refuses raises ScheduleError: the driver then puts the function back as it was before the rule
and tries the next one, so a rule never leaves a half-made schedule.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.dtype import DType
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.target import target_vector_bits
from tirc.passes.schedule.dependence import scope_path
from tirc.passes.schedule.state import BlockRV, LoopRV
from tirc.passes.schedule_rules.block_info import BlockInfo, scope_blocks
from tirc.passes.schedule_rules.traced import TracedSchedule

DEFAULT_VECTOR_BITS = 512  # the vectorize pass's default (16 float32 lanes)


@dataclass(frozen=True)
class RuleContext:
    """The target as the rules see it."""

    target: Any = None
    is_gpu: bool = False
    vector_bits: int = DEFAULT_VECTOR_BITS
    max_threads: int = 1024  # threads per GPU block
    # where a CPU rule keeps its accumulators (cache_write): "local", which compact-buffers
    # shrinks to the tile; "global" for tasks of a GPU megakernel (a workspace per call)
    accumulators: str = "local"

    @staticmethod
    def of(target: Any, accumulators: str = "local") -> RuleContext:
        gpu = bool(getattr(target, "is_gpu", False))
        return RuleContext(target, gpu, target_vector_bits(target) or DEFAULT_VECTOR_BITS,
                           accumulators=accumulators)

    def lanes(self, dt: DType) -> int:
        """Vector lanes of `dt` (at least 4)."""
        return max(4, self.vector_bits // max(8, dt.element().bits))

    @property
    def kind(self) -> str:
        return "cuda" if self.is_gpu else "llvm"


class ScheduleRule:
    """One kind of block and its schedule (see the module docstring)."""

    name: ClassVar[str] = ""
    gpu: ClassVar[bool] = False  # a rule for GPU targets (else for CPUs)

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        raise NotImplementedError


def info_of(sch: TracedSchedule, block: BlockRV | str) -> BlockInfo:
    """The block (a BlockRV, which follows renames, or a name) as it is now."""
    from tirc.passes.schedule.tree import loops_in_scope

    path = sch.state.lookup_block(block if isinstance(block, str) else block.name)
    return BlockInfo(path, loops_in_scope(path))


def scope_of(sch: TracedSchedule, block: BlockRV | str) -> list[BlockInfo]:
    """The blocks of the block's scope (it included), in program order."""
    name = block if isinstance(block, str) else block.name
    return scope_blocks(sch.state.body, scope_path(sch.state.lookup_block(name)))


def later_blocks(sch: TracedSchedule, block: BlockRV | str,
                 scheduled: bool = False) -> list[BlockInfo]:
    """The blocks of the block's scope after it, in program order, less those an earlier
    rule scheduled unless `scheduled` (a rule that pulled one into its nest would undo that
    rule's placement: a matmul's shared-memory copy moved into another GPU kernel)."""
    name = block if isinstance(block, str) else block.name
    blocks = scope_of(sch, name)
    k = next(i for i, b in enumerate(blocks) if b.name == name)
    return [b for b in blocks[k + 1:] if scheduled or b.name not in sch.scheduled]


def loop_of(info: BlockInfo, loops: list[LoopRV], var: Any) -> LoopRV | None:
    """The loop of a simple nest bound to iteration variable `var`."""
    for iv, lp in zip(info.block.iter_vars, loops):
        if iv.var is var:
            return lp
    return None


def prefix(name: str) -> str:
    """The prefix of a block's decision names."""
    return name.replace(".", "_")
