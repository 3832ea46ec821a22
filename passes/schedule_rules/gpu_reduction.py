"""GPU rules for reductions, norms and matrix-vector products.

- A reduction by rows (its main input's contiguous dimension is reduced): a GPU block per
  output element, the spatial loops fused and bound to blockIdx.x; the reduction loops are
  shared by `<block>_threads` threads (a cross-thread reduction: each thread folds a strided
  slice in a register, then a tree over shared memory). The blocks that consume the row
  follow in the same GPU block (`reverse_compute_at` under the row loop), spread over the
  threads; for a norm (softmax, layer and RMS norm) these include further reductions, each
  shared by the threads too, so the whole norm is one kernel. A full reduction (to one
  value) runs in one GPU block, with the scalar blocks that follow it (the identity
  legalize-ops picks for an empty domain), not with a grid's worth of work.
- A reduction by columns (the contiguous dimension is spatial): one output per thread over a
  grid, consecutive threads on consecutive columns (coalesced loads), the reduction serial in
  the thread, accumulating in a register (`cache_write` "local"), the epilogue in the thread.
- A matrix-vector product (decoding at batch 1): by rows or by columns of its matrix.
"""

from __future__ import annotations

from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule_rules.block_info import extent_product, matmul_roles
from tirc.passes.schedule_rules.cpu_reduction import by_rows, main_input
from tirc.passes.schedule_rules.gpu_nest import cross_thread, grid, spread
from tirc.passes.schedule_rules.nest import (
    decompose_first,
    loop_kinds,
    own_count,
    place_epilogue,
    reduce_inner,
)
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of, later_blocks
from tirc.passes.schedule_rules.traced import TracedSchedule


def per_row(sch: TracedSchedule, name: str, reductions: bool) -> list[str]:
    """Reduction `name` with a GPU block per output element and its consumers in it."""
    blk = sch.block(name)
    if not reduce_inner(sch, blk):
        raise ScheduleError(f"rules: the loops of block \"{name}\" do not nest spatial "
                            f"outside reduction")
    kinds = loop_kinds(info_of(sch, blk))
    loops = sch.loops(blk)
    spatial = [lp for lp, k in zip(loops, kinds) if k == "S"]
    row = None
    if spatial:
        row = sch.fuse(*spatial)
        sch.bind(row, "blockIdx.x")
    threads = cross_thread(sch, blk)
    if threads is None:
        raise ScheduleError(f"rules: block \"{name}\" cannot share its reduction across "
                            f"threads")
    taken = [name]
    scalar_only = row is None
    if row is None:  # a full reduction still runs in a GPU block: a unit loop on blockIdx
        row = sch.call("add_unit_loop", sch.loops(blk)[0], out=["u"])
        sch.bind(row, "blockIdx.x")
    path = sch.state.loop_path(row, "rules")
    from tirc.passes.schedule.dependence import child_sites

    written = {b for site in child_sites(path) for b in site.writes()}
    for later in later_blocks(sch, blk):
        reads, writes = later.regions()
        if not any(r.buffer in written for r in reads):
            continue
        if later.is_reduction and not reductions:
            break
        if scalar_only and (later.is_reduction or own_count(later)):
            break  # a full reduction's block takes scalar epilogues only, not a grid's work
        rv = sch.block(later.name)
        ok, _ = sch.attempt("reverse_compute_at", rv, row)
        if not ok:
            break
        taken.append(later.name)
        written |= {w.buffer for w in writes}
        if info_of(sch, rv).is_reduction:
            if not reduce_inner(sch, rv) or cross_thread(sch, rv, threads=threads) is None:
                raise ScheduleError(f"rules: block \"{later.name}\" cannot share its "
                                    f"reduction across threads")
        else:
            spread(sch, rv, threads)
    return taken


def per_output(sch: TracedSchedule, name: str) -> list[str]:
    """Reduction `name` with one output per thread (reduction serial in the thread, in a
    register), its epilogue in the same thread."""
    blk = sch.block(name)
    if not reduce_inner(sch, blk):
        raise ScheduleError(f"rules: the loops of block \"{name}\" do not nest spatial "
                            f"outside reduction")
    info = info_of(sch, blk)
    if not info.is_simple_nest and loop_kinds(info).count("S") != len(info.spatial):
        raise ScheduleError(f"rules: block \"{name}\" is not in a nest of its own")
    kinds = loop_kinds(info)
    acc = sch.cache_write(blk, 0, "local")
    loops = sch.loops(blk)
    spatial = [lp for lp, k in zip(loops, kinds) if k == "S"]
    found = grid(sch, blk, spatial)
    decompose_first(sch, blk)
    if found is None:
        return [name]
    return [name] + place_epilogue(sch, acc, found[1], vectorize=False)


class GPUReduction(ScheduleRule):
    """A reduction by rows (threads share it) or by columns (a thread per output)."""

    name = "gpu-reduction"
    gpu = True

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        main = main_input(info) if info.is_reduction and info.output is not None else None
        if main is None or not info.loops:
            return None
        if by_rows(info, main):
            return per_row(sch, anchor, reductions=False)
        return per_output(sch, anchor)


class GPUNorm(ScheduleRule):
    """A reduction whose rows later reductions consume: the whole norm in one GPU block per
    row."""

    name = "gpu-norm"
    gpu = True

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        main = main_input(info) if info.is_reduction and info.output is not None else None
        if main is None or not info.spatial or not by_rows(info, main):
            return None
        written = {r.buffer for r in info.regions()[1]}
        stages = []
        for later in later_blocks(sch, anchor):
            reads, writes = later.regions()
            if any(r.buffer in written for r in reads):
                stages.append(later)
                written |= {w.buffer for w in writes}
        if not any(b.is_reduction for b in stages):
            return None
        return per_row(sch, anchor, reductions=True)


class GPUMatVec(ScheduleRule):
    """A matmul of one row or one column: threads share each output's reduction when the
    matrix is contiguous along it, else a thread per output (coalesced over columns)."""

    name = "gpu-matvec"
    gpu = True

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        roles = matmul_roles(info)
        if roles is None or not info.is_simple_nest:
            return None
        one_row = not roles.i or extent_product(list(roles.i)) == 1
        one_col = not roles.j or extent_product(list(roles.j)) == 1
        if not (one_row or one_col) or (not roles.i and not roles.j):
            return None
        matrix = roles.b if one_row else roles.a
        if by_rows(info, matrix):
            return per_row(sch, anchor, reductions=False)
        return per_output(sch, anchor)
