"""CPU rule for gathers: blocks that index a buffer through another one (sparse kernels after
lower-sparse-iterations: `B[J_indices[p], k]`, `C[R0[i], k]`), and row blocks whose inner loops
run a data-dependent number of times (the rows of a CSR matrix).

Which rows a gather reads is known only when it runs, so tiling for reuse buys nothing; what
pays is rows in parallel and vector loads along the dense (feature) dimension. A gather's nest
becomes (spatial loops, feature chunks, reductions, feature lanes): the loop of the output's
innermost dimension is vectorized innermost; in a reduction it is first split by the vector
width (decision `<block>_lanes`) and its chunks put outside the reductions, so that the lanes
accumulate in registers across a row; a reduction of small constant extent just outside the
lanes (an ELL row) is unrolled; the outermost spatial loop runs in parallel. A row block
holding other blocks (CSR SpMM's init and update, SDDMM's nonzeros and their dot products) runs
its rows in parallel, handed out in chunks of `<block>_rows` to whichever thread asks next when
the work per row varies, and each block inside gets the vector treatment (a dot product over
the innermost dimension gets vector partial sums, `rfactor`). Every step is a checked
primitive; a step an inner block refuses leaves that block as it was.

A scatter, a block that writes through a loaded index (`out[idx[i], k] = ...`), may write one
element from two iterations (a duplicate index): the loops that pick the element stay serial, in
the interpreter's order, and only the others run in parallel (the rule takes such a block even
when it can do nothing else, so that no later rule parallelises it). The index arrays the
sparse lowering writes through are trusted (`trusted_indices`: a plan's row maps, the `indptr`
of sparse axes).
"""

from __future__ import annotations

from tirc.ir.expr import BufferLoad, Var
from tirc.ir.stmt import For
from tirc.ir.visitor import any_node
from tirc.passes.schedule.dependence import child_sites
from tirc.passes.schedule.state import BlockRV, LoopRV, ScheduleError
from tirc.passes.schedule_rules.block_info import (
    BlockInfo,
    scatter_vars,
    site_info,
    trusted_indices,
)
from tirc.passes.schedule_rules.nest import (
    const_extent,
    decompose_first,
    loop_kinds,
    own_count,
    parallel_outer,
    rfactor_lanes,
    vectorize_inner,
)
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of, prefix
from tirc.passes.schedule_rules.traced import TracedSchedule

UNROLL_MAX = 32  # a constant reduction loop up to this extent just outside the lanes unrolls
ROW_CHUNKS = [8, 32, 128]  # rows per dynamically handed-out chunk (decision <block>_rows)


def _has_load(e: object) -> bool:
    return any_node(e, lambda n: isinstance(n, BufferLoad))


def is_gather(info: BlockInfo) -> bool:
    """The block indexes a buffer by a value loaded from another (its declared regions), or
    one of its loops runs a data-dependent number of times."""
    block = info.block
    regions = (*block.reads, *block.writes)
    if any(_has_load((r.min, r.extent)) for reg in regions for r in reg.region):
        return True
    return any(_has_load((lp.min, lp.extent)) for lp in info.loops)


def data_dependent_loops(info: BlockInfo) -> bool:
    """Some loop inside the block runs a data-dependent number of times (uneven rows)."""
    return any_node(info.block.body, lambda n: isinstance(n, For) and
                    _has_load((n.min, n.extent)))


def _inner_infos(info: BlockInfo) -> list[BlockInfo]:
    """Every block nested in the block, outer ones before those they hold."""
    out: list[BlockInfo] = []
    for site in child_sites(info.path):
        inner = site_info(site)
        out.append(inner)
        out.extend(_inner_infos(inner))
    return out


def _bound_loop(info: BlockInfo, loops: list[LoopRV], var: Var) -> LoopRV | None:
    """The loop (of the block's own `loops`, aligned with `info.loops`) that alone binds
    iteration variable `var`."""
    for iv, value in zip(info.block.iter_vars, info.realize.iter_values):
        if iv.var is var and isinstance(value, Var):
            for lp, rv in zip(info.loops, loops):
                if lp.loop_var is value:
                    return rv
    return None


def vector_features(sch: TracedSchedule, blk: BlockRV, ctx: RuleContext,
                    parallel: bool) -> bool:
    """The gather nest of the module docstring for `blk`'s own loops; the outermost spatial
    loop made parallel when `parallel`. False (nothing done) when the nest does not fit."""
    info = info_of(sch, blk)
    own = own_count(info)
    kinds = loop_kinds(info)
    mine = kinds[len(kinds) - own:]
    all_loops = sch.loops(blk)
    if not own or len(all_loops) != len(info.loops) or any(k not in "SR" for k in mine) \
            or not info.is_simple_nest:
        return False
    loops = all_loops[len(kinds) - own:]
    out = info.output
    scatter = scatter_vars(info, trusted_indices(sch.current))
    serial = {id(_bound_loop(info, all_loops, v)) for v in scatter}
    vec = _bound_loop(info, all_loops, out.inner) if out is not None and out.inner else None
    if vec is not None and (mine[loops.index(vec)] != "S" or id(vec) in serial):
        vec = None  # (vector lanes that may store to one element would race too)
    spatial = [lp for lp, k in zip(loops, mine) if k == "S" and lp is not vec and
               id(lp) not in serial]
    reduce = [lp for lp, k in zip(loops, mine) if k == "R" or id(lp) in serial]
    chunks: list[LoopRV] = []
    lanes_loop = None
    if vec is not None and out is not None:
        lanes = ctx.lanes(out.buffer.dtype)
        extent = const_extent(sch, vec)
        if not reduce or (extent is not None and extent <= lanes):
            lanes_loop = vec  # (the vectorize pass cuts a long one into vectors and a tail)
        else:
            width = sch.sample_choice(f"{prefix(info.name)}_lanes",
                                      [lanes // 2, lanes, lanes * 2], lanes)
            chunk, lanes_loop = sch.split(vec, [None, width])
            chunks = [chunk]
    order = spatial + chunks + reduce + ([lanes_loop] if lanes_loop is not None else [])
    if order != sch.loops(blk)[len(kinds) - own:]:
        sch.reorder(*order)
    if info.block.init is not None and reduce:
        decompose_first(sch, blk)  # the init: a block of its own before the reductions
    if lanes_loop is not None:
        if reduce:
            e = const_extent(sch, reduce[-1])
            if e is not None and 1 < e <= UNROLL_MAX:
                sch.unroll(reduce[-1])
        sch.vectorize(lanes_loop)
    elif reduce and not spatial and not serial and out is not None:
        rfactor_lanes(sch, blk, ctx.lanes(out.buffer.dtype))
    leading = spatial + chunks
    if parallel and leading:
        sch.parallel(leading[0])
    return True


def _inner_block(sch: TracedSchedule, name: str, ctx: RuleContext) -> None:
    """The vector treatment of one block inside a parallel row block; a primitive's refusal
    leaves it as it was."""
    snap = sch.snapshot()
    try:
        inner = info_of(sch, name)
        if child_sites(inner.path):
            return  # its blocks get theirs; its own loops stay (a row's nonzeros, say)
        blk = sch.block(name)
        kinds = loop_kinds(inner)
        if inner.is_reduction and kinds and all(k == "R" for k in kinds):
            rfactor_lanes(sch, blk, ctx.lanes(inner.regions()[1][0].buffer.dtype))
        elif not vector_features(sch, blk, ctx, parallel=False) and \
                not scatter_vars(inner, trusted_indices(sch.current)):
            vectorize_inner(sch, blk)
    except ScheduleError:
        sch.restore(snap)


class Gather(ScheduleRule):
    """Parallel rows and vector features for gathers (sparse kernels)."""

    name = "gather"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        if not info.loops:
            return None
        if not info.is_simple_nest:
            # a scatter's loops stay as they are (a later rule would run them in parallel)
            return [anchor] if scatter_vars(info, trusted_indices(sch.current)) else None
        inner = _inner_infos(info)
        if inner:
            if not info.is_spatial or not (data_dependent_loops(info) or
                                           any(is_gather(b) for b in inner)):
                return None
            return self._rows(sch, anchor, info, inner, ctx)
        if not is_gather(info):
            return None
        if scatter_vars(info, trusted_indices(sch.current)):
            # a scatter: whatever this rule cannot do, no later rule may run it in parallel
            snap = sch.snapshot()
            try:
                if not vector_features(sch, sch.block(anchor), ctx, parallel=True):
                    sch.restore(snap)
            except ScheduleError:
                sch.restore(snap)
            return [anchor]
        if not vector_features(sch, sch.block(anchor), ctx, parallel=True):
            return None
        return [anchor]

    def _rows(self, sch: TracedSchedule, anchor: str, info: BlockInfo,
              inner: list[BlockInfo], ctx: RuleContext) -> list[str]:
        blk = sch.block(anchor)
        trusted = trusted_indices(sch.current)
        own = {iv.var for iv in info.block.iter_vars}
        if any(scatter_vars(b, trusted, own) for b in [info, *inner]):
            for b in inner:  # rows that may write the same element stay serial
                _inner_block(sch, b.name, ctx)
            return [anchor] + [b.name for b in inner]
        rows = parallel_outer(sch, sch.loops(blk))
        if rows is not None and data_dependent_loops(info):
            chunk = sch.sample_choice(f"{prefix(anchor)}_rows", ROW_CHUNKS, 32)
            sch.call("annotate", rows, "parallel.chunk", chunk)
        for b in inner:
            _inner_block(sch, b.name, ctx)
        return [anchor] + [b.name for b in inner]
