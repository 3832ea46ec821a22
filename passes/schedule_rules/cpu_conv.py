"""CPU rule for convolutions (and poolings): a reduction that reads a window, some input
dimension indexed by a spatial and a reduction variable together (`oh + ry`).

The output's innermost dimension (`ow` in NCHW, the channel in NHWC) is vectorized; an output
channel the weights are indexed by, when it is another dimension, is cut into a register tile
of `<block>_tile_c` channels, unrolled, so each loaded input vector serves several channels.
The tile accumulates in a local buffer (`cache_write`) over the reduction loops (the window and
the input channels), its init a block of its own; the outer spatial loops outside the channel
tiles run in parallel (the tiles too when the rows are few), and a padding block before the
convolution is computed per parallel iteration, for the rows it needs (`compute_at`), once for
all the channel tiles of those rows.
"""

from __future__ import annotations

from math import prod

from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule_rules.block_info import is_window_reduction
from tirc.passes.schedule_rules.nest import (
    PARALLEL_MIN,
    const_extent,
    loop_kinds,
    parallel_outer,
    place_epilogue,
    split_tile,
    vectorize_inner,
)
from tirc.passes.schedule_rules.rule import (
    RuleContext,
    ScheduleRule,
    info_of,
    loop_of,
    prefix,
    scope_of,
)
from tirc.passes.schedule_rules.traced import TracedSchedule


class Conv(ScheduleRule):
    """A register-tiled, vectorized convolution, parallel over its outer output loops."""

    name = "conv"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        if not is_window_reduction(info) or not info.is_simple_nest:
            return None
        out = info.output
        assert out is not None
        reads = info.regions()[0]
        data = [r for r in reads if r.is_window]
        weights = [r for r in reads if not r.is_window]
        lanes = ctx.lanes(out.buffer.dtype)
        blk = sch.block(anchor)
        loops = sch.loops(blk)
        kinds = loop_kinds(info)
        vec = loop_of(info, loops, out.inner) if out.inner is not None else None
        if vec is None:
            raise ScheduleError(f"rules: no loop of block \"{anchor}\" runs over its output's "
                                f"innermost dimension")
        window_vars = {v for r in data for d in r.dims for v in d}
        chan = [iv for iv in info.spatial if iv.var is not out.inner and
                iv.var not in window_vars and any(iv.var in w.vars for w in weights)]
        chan_loop = loop_of(info, loops, chan[-1].var) if chan else None
        red = [lp for lp, k in zip(loops, kinds) if k == "R"]
        outer = [lp for lp, k in zip(loops, kinds) if k == "S" and lp is not vec
                 and lp is not chan_loop]
        acc = sch.cache_write(blk, 0, ctx.accumulators)
        p = prefix(anchor)
        inner: list = []
        chan_tile = None
        if chan_loop is not None:
            extent = const_extent(sch, chan_loop)
            tile = 4 if extent is None or extent % 4 == 0 or extent > 4 else extent
            chan_tile, c1 = split_tile(sch, f"{p}_tile_c", chan_loop, tile, [1, 2, 4, 8])
            outer.append(chan_tile)
            inner.append(c1)
        v_extent = const_extent(sch, vec)
        if v_extent is None or v_extent > 4 * lanes:
            v0, v1 = split_tile(sch, f"{p}_tile_w", vec, 2 * lanes, [lanes, 2 * lanes,
                                                                      4 * lanes])
            outer.append(v0)
            vec = v1
        sch.reorder(*outer, *red, *inner, vec)
        taken = [anchor] + place_epilogue(sch, acc, outer[-1]) if outer else [anchor]
        init = sch.decompose_reduction(blk, red[0])
        for lp in inner:
            sch.unroll(lp)
        sch.vectorize(vec)
        vectorize_inner(sch, init)
        par = parallel_outer(sch, _parallel_part(sch, outer, chan_tile))
        if par is not None:
            bufs = {r.buffer for r in data if not sch.state.is_param_buffer(r.buffer)}
            for other in scope_of(sch, blk):
                if other.is_spatial and {w.buffer for w in other.regions()[1]} & bufs:
                    pad = sch.block(other.name)
                    if sch.attempt("compute_at", pad, par)[0]:
                        vectorize_inner(sch, pad)
                        taken.append(other.name)  # (no later rule nests a parallel loop in it)
        return taken


def _parallel_part(sch: TracedSchedule, outer: list, chan_tile: object) -> list:
    """The outer loops to run in parallel: those outside the channel tiles when they give
    enough iterations (each thread then pads its input rows once for all channel tiles),
    else all of them."""
    if chan_tile is None or chan_tile not in outer:
        return outer
    rows = outer[:outer.index(chan_tile)]
    if not rows or prod(const_extent(sch, lp) or 1 for lp in rows) < PARALLEL_MIN:
        return outer  # (a symbolic extent, a batch say, may be 1)
    return rows
