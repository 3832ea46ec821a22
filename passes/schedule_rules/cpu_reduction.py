"""CPU rule for reductions by rows and by columns, with the blocks that consume their rows.

Which one is decided by the block's main input (the region of most dimensions) and the
variable of its innermost, contiguous dimension:

- by rows (that variable is a reduction one: `sum(X, axis=-1)`): the spatial loops are fused
  into one parallel loop; the reduction loops are fused, split by the vector width
  (`<block>_lanes`) and rfactored, so that each lane keeps a partial sum in a vector register
  and the block adds the lanes up at the end of its row;
- by columns (it is spatial: `sum(X, axis=0)`): the columns are cut into chunks of
  `<block>_cols`, the reduction loops go inside a chunk and the chunk's columns innermost,
  vectorized, accumulating in a local (register) buffer (`cache_write`) written back per chunk.

Either way the init becomes a block of its own before the reduction loops
(`decompose_reduction`), so an empty reduction still gives the init value. Then each later
block of the scope that consumes what the reduction wrote is moved into the parallel loop
(`reverse_compute_at`, which checks it needs only that iteration's rows) and its inner loop
vectorized: an epilogue (a cast, a division by the norm) runs on the row while it is in cache.
"""

from __future__ import annotations

from tirc.ir.dtype import DType
from tirc.passes.schedule.dependence import child_sites
from tirc.passes.schedule.state import BlockRV, LoopRV, ScheduleError
from tirc.passes.schedule_rules.block_info import Access, BlockInfo, site_info
from tirc.passes.schedule_rules.nest import (
    const_extent,
    decompose_first,
    loop_kinds,
    parallel_outer,
    place_epilogue,
    reduce_inner,
    rfactor_lanes,
    vectorize_inner,
)
from tirc.passes.schedule_rules.rule import (
    RuleContext,
    ScheduleRule,
    info_of,
    later_blocks,
    loop_of,
    prefix,
)
from tirc.passes.schedule_rules.traced import TracedSchedule


def main_input(info: BlockInfo) -> Access | None:
    """The read of most dimensions (the first of them)."""
    reads = info.regions()[0]
    return max(reads, key=lambda r: len(r.dims), default=None)


def by_rows(info: BlockInfo, main: Access) -> bool:
    """Whether the innermost dimension of `main` that varies is indexed by a reduction
    variable."""
    red = {iv.var for iv in info.reduce}
    for d in reversed(main.dims):
        if d:
            return bool(d & red)
    return True


def _out_dtype(info: BlockInfo) -> DType:
    out = info.output
    return out.buffer.dtype if out is not None else info.block.iter_vars[0].var.dtype


def _under(sch: TracedSchedule, block: BlockRV, loop: LoopRV) -> bool:
    """Whether `block` is inside `loop`."""
    _, lp = sch.state.loop(loop, "rules")
    return any(x is lp for x in info_of(sch, block).loops)


def reduce_rows(sch: TracedSchedule, blk: BlockRV, ctx: RuleContext) -> list[LoopRV]:
    """Schedule reduction `blk` by rows; its spatial (row) loops, outermost first."""
    if not reduce_inner(sch, blk):
        raise ScheduleError(f"rules: the loops of block \"{blk.name}\" do not nest spatial "
                            f"outside reduction")
    info = info_of(sch, blk)
    kinds = loop_kinds(info)
    loops = sch.loops(blk)
    rows = [lp for lp, k in zip(loops, kinds) if k == "S"]
    scope = rows[-1] if rows else None
    if scope is None and "R" in kinds:
        # a reduction to one value: a loop of one iteration keeps its stages one nest
        scope = sch.call("add_unit_loop", loops[0], out=["u"])
    if rfactor_lanes(sch, blk, ctx.lanes(_out_dtype(info))):
        if scope is not None and not _under(sch, blk, scope):
            sch.reverse_compute_at(blk, scope)
    else:
        decompose_first(sch, blk)
    return rows


def reduce_cols(sch: TracedSchedule, blk: BlockRV, ctx: RuleContext, main: Access
                ) -> list[LoopRV]:
    """Schedule reduction `blk` by columns (see the module docstring); the loops outside its
    column chunk, outermost first."""
    info = info_of(sch, blk)
    kinds = loop_kinds(info)
    if not info.is_simple_nest or "M" in kinds:
        raise ScheduleError(f"rules: block \"{blk.name}\" is not in a nest of its own")
    loops = sch.loops(blk)
    col = loop_of(info, loops, main.inner)
    if col is None:
        raise ScheduleError(f"rules: no loop of block \"{blk.name}\" runs over its columns")
    lanes = ctx.lanes(_out_dtype(info))
    outer = [lp for lp, k in zip(loops, kinds) if k == "S" and lp is not col]
    red = [lp for lp, k in zip(loops, kinds) if k == "R"]
    extent = const_extent(sch, col)
    if extent is not None and extent <= 4 * lanes:
        inner = col
    else:
        # Four vectors of accumulators hide the FMA latency that one or two expose (a
        # 512-column matvec runs 1.7x faster); a narrower width when it divides and 4 does not.
        widths = [lanes, 2 * lanes, 4 * lanes]
        dividing = [w for w in widths if extent is not None and extent % w == 0]
        width = sch.sample_choice(f"{prefix(blk.name)}_cols", widths,
                                  dividing[-1] if dividing else 4 * lanes)
        chunk, inner = sch.split(col, [None, width])
        outer.append(chunk)
    sch.reorder(*outer, *red, inner)
    acc = sch.cache_write(blk, 0, ctx.accumulators)
    init = sch.decompose_reduction(blk, red[0])
    sch.vectorize(inner)
    vectorize_inner(sch, init)
    if outer:
        place_epilogue(sch, acc, outer[-1])
    else:
        vectorize_inner(sch, acc)
    return outer


def take_consumers(sch: TracedSchedule, blk: BlockRV, loop: LoopRV, ctx: RuleContext,
                   reductions: bool) -> list[str]:
    """Move the later blocks of `blk`'s scope that consume what it wrote under `loop` (in
    order, up to the first that cannot move, or is a reduction when `reductions` is False),
    and schedule each there: spatial ones vectorized, reductions in vector lanes. Blocks that
    read nothing the group wrote are left alone."""
    taken: list[str] = []
    path = sch.state.loop_path(loop, "rules")
    lp = path[-1]
    written = {b for site in child_sites(path) for b in site.writes()}
    for later in later_blocks(sch, blk):
        reads, writes = later.regions()
        if not any(r.buffer in written for r in reads):
            continue
        if later.is_reduction and not reductions:
            break
        if any(x is lp for x in later.loops):
            continue  # already inside (a write-back the rule placed)
        rv = sch.block(later.name)
        ok, _ = sch.attempt("reverse_compute_at", rv, loop)
        if not ok:
            break
        taken.append(later.name)
        written |= {w.buffer for w in writes}
        moved = info_of(sch, rv)
        if moved.is_reduction:
            if not reduce_inner(sch, rv) or \
                    not rfactor_lanes(sch, rv, ctx.lanes(_out_dtype(moved))):
                decompose_first(sch, rv)
        else:
            vectorize_inner(sch, rv)
    return taken


def scope_blocks_under(sch: TracedSchedule, loop: LoopRV) -> list[BlockInfo]:
    """The blocks inside `loop` (not nested in another block)."""
    return [site_info(s) for s in child_sites(sch.state.loop_path(loop, "rules"))]


def schedule_reduction(sch: TracedSchedule, name: str, ctx: RuleContext, main: Access,
                       reductions: bool) -> list[str]:
    """A reduction by rows or columns of `main`, with its consumers (see take_consumers)."""
    blk = sch.block(name)
    if by_rows(info_of(sch, blk), main):
        outer = reduce_rows(sch, blk, ctx)
    else:
        outer = reduce_cols(sch, blk, ctx, main)
    taken = [name]
    if outer:
        taken += [b.name for b in scope_blocks_under(sch, outer[-1]) if b.name != blk.name]
        taken += take_consumers(sch, blk, outer[-1], ctx, reductions)
        parallel_outer(sch, outer)
    return taken


class Reduction(ScheduleRule):
    """A reduction by rows or by columns, with its elementwise epilogue."""

    name = "reduction"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        if not info.is_reduction or info.output is None or not info.loops:
            return None
        main = main_input(info)
        if main is None:
            return None
        return schedule_reduction(sch, anchor, ctx, main, reductions=False)
