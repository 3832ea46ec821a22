"""The inlining step before the rules (MetaSchedule's AutoInline): a spatial block computing
an intermediate that exactly one later block reads is computed inside that reader instead
(`compute_inline`), when the reader's access uses all of its own iteration variables, so no
value is computed twice: an elementwise chain becomes one block, a reshape feeding a transpose
one copy, a bias add becomes part of its activation. A block read through a window (a padding
before a convolution) or broadcast is left for the rules to place.
"""

from __future__ import annotations

from tirc.passes.schedule_rules.block_info import BlockInfo
from tirc.passes.schedule_rules.traced import TracedSchedule


def _inlinable(sch: TracedSchedule, p: BlockInfo, later: list[BlockInfo]) -> bool:
    if not p.is_spatial or p.block.init is not None:
        return False
    writes = p.regions()[1]
    if len(writes) != 1 or sch.state.is_param_buffer(writes[0].buffer):
        return False
    buf = writes[0].buffer
    readers = [b for b in later if any(r.buffer is buf for r in b.regions()[0])]
    if len(readers) != 1:
        return False
    c = readers[0]
    own = {iv.var for iv in c.block.iter_vars}
    return all(r.vars >= own for r in c.regions()[0] if r.buffer is buf)


def inline_blocks(sch: TracedSchedule, blocks: list[BlockInfo]) -> list[str]:
    """Inline every block of `blocks` (one scope, in order) that qualifies; their names."""
    done = []
    for k, p in enumerate(blocks):
        if _inlinable(sch, p, blocks[k + 1:]) and \
                sch.attempt("compute_inline", sch.block(p.name))[0]:
            done.append(p.name)
    return done
