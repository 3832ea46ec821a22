"""Loop-nest steps the CPU rules share: which loops feed which iteration kinds, the parallel
loop of a nest, the schedule of a spatial nest (parallel outside, vector inside) and a
reduction's vector lanes (rfactor into partial sums).

Every step is a primitive call on the TracedSchedule; its numeric choices are named decisions
`<block>_<what>`. Blocks are held as BlockRVs, which follow the renames of
decompose_reduction.
"""

from __future__ import annotations

from tirc.ir.analysis.regions import uses_any
from tirc.ir.expr import IntImm
from tirc.ir.stmt import IterKind
from tirc.passes.schedule.dependence import child_sites
from tirc.passes.schedule.state import BlockRV, LoopRV
from tirc.passes.schedule_rules.block_info import BlockInfo
from tirc.passes.schedule_rules.rule import info_of, later_blocks, prefix
from tirc.passes.schedule_rules.traced import TracedSchedule

PARALLEL_MIN = 8  # fewer parallel iterations than this: split the inner loop for threads


def loop_kinds(info: BlockInfo) -> list[str]:
    """Per loop above the block in its scope: "S" when it feeds only spatial iteration
    variables, "R" only reduction ones, "M" both, "-" none."""
    out = []
    for lp in info.loops:
        kinds = {iv.kind for iv, v in zip(info.block.iter_vars, info.realize.iter_values)
                 if uses_any(v, {lp.loop_var})}
        if not kinds:
            out.append("-")
        elif kinds == {IterKind.SPATIAL}:
            out.append("S")
        elif kinds == {IterKind.REDUCE}:
            out.append("R")
        else:
            out.append("M")
    return out


def const_extent(sch: TracedSchedule, loop: LoopRV) -> int | None:
    """The loop's extent when it is a constant."""
    _, lp = sch.state.loop(loop, "rules")
    return lp.extent.value if isinstance(lp.extent, IntImm) else None


def own_count(info: BlockInfo) -> int:
    """How many of the innermost loops above the block hold no other block."""
    n = 0
    for lp in reversed(info.loops):
        if len(child_sites(info.path[:info.path.index(lp) + 1])) != 1:
            break
        n += 1
    return n


def parallel_outer(sch: TracedSchedule, loops: list[LoopRV]) -> LoopRV | None:
    """Fuse the leading loops of a perfect nest into one and make it parallel. A loop joins
    only while its extent is a constant (the fused index is split back by constant divisors,
    which the dependence checks see through); the first may be symbolic."""
    if not loops:
        return None
    take = [loops[0]]
    for lp in loops[1:]:
        if const_extent(sch, lp) is None:
            break
        take.append(lp)
    fused = sch.fuse(*take)
    sch.parallel(fused)
    return fused


def vectorize_inner(sch: TracedSchedule, block: BlockRV) -> None:
    """Vectorize the block's innermost loop when it feeds only spatial variables (the
    vectorize pass cuts it into whole vectors and a tail); nothing when not allowed."""
    info = info_of(sch, block)
    if not info.loops or loop_kinds(info)[-1] != "S":
        return
    loops = sch.loops(block)
    sch.attempt("vectorize", loops[-1])


def spatial_nest(sch: TracedSchedule, block: BlockRV, loops: list[LoopRV], lanes: int) -> None:
    """Loops of a spatial nest (outermost first, all feeding spatial variables): the outer
    ones fused into one parallel loop, the innermost vectorized. When the outer loops give
    fewer than PARALLEL_MIN iterations, the innermost is first cut into chunks (decision
    `<block>_chunk`, elements per parallel task) that join the parallel loop."""
    if not loops:
        return
    inner, outer = loops[-1], loops[:-1]
    outer_extent: int | None = 1
    for lp in outer:
        e = const_extent(sch, lp)
        outer_extent = None if e is None or outer_extent is None else outer_extent * e
    inner_extent = const_extent(sch, inner)
    if outer_extent is not None and outer_extent < PARALLEL_MIN:
        candidates = [lanes * c for c in (16, 64, 256, 1024, 4096)]
        if inner_extent is None or inner_extent > candidates[2]:
            chunk = sch.sample_choice(f"{prefix(block.name)}_chunk", candidates, candidates[3])
            inner0, inner = sch.split(inner, [None, chunk])
            outer = outer + [inner0]
    sch.vectorize(inner)
    parallel_outer(sch, outer)


def reduce_inner(sch: TracedSchedule, block: BlockRV) -> bool:
    """Put the block's reduction loops inside its spatial ones (a checked reorder of its own
    loops); False when that is not possible."""
    info = info_of(sch, block)
    kinds = loop_kinds(info)
    own = own_count(info)
    mine = kinds[len(kinds) - own:]
    if "M" in kinds or "-" in mine or "R" in kinds[:len(kinds) - own]:
        return False
    if mine == sorted(mine, key=lambda k: k == "R"):
        return True
    loops = sch.loops(block)[len(kinds) - own:]
    order = [lp for lp, k in zip(loops, mine) if k == "S"] + \
        [lp for lp, k in zip(loops, mine) if k == "R"]
    return sch.attempt("reorder", *order)[0]


def rfactor_lanes(sch: TracedSchedule, block: BlockRV, lanes: int) -> bool:
    """Vector lanes for a reduction whose reduction loops are innermost: they are fused,
    split by `<block>_lanes` (decision), and the lane loop rfactored into a partial-sum
    buffer whose update and init are vector loops; the block itself then adds up the lanes.
    False (and nothing done) when the block does not allow it."""
    info = info_of(sch, block)
    kinds = loop_kinds(info)
    nred = _suffix_len(kinds, "R")
    if nred == 0 or nred != kinds.count("R") or "M" in kinds or nred > own_count(info):
        return False
    snap = sch.snapshot()
    loops = sch.loops(block)
    red = loops[len(loops) - nred:]
    k = sch.fuse(*red) if len(red) > 1 else red[0]
    extent = const_extent(sch, k)
    if extent is not None and extent < lanes:
        sch.restore(snap)
        return False
    vec = sch.sample_choice(f"{prefix(block.name)}_lanes", [lanes // 2, lanes, lanes * 2],
                            lanes)
    k0, k1 = sch.split(k, [None, vec])
    out_dims = info.regions()[1][0].buffer.ndim
    ok, rf = sch.attempt("rfactor", k1, out_dims)
    if not ok:
        sch.restore(snap)
        return False
    rf_loops = sch.loops(rf)
    init = sch.decompose_reduction(rf, rf_loops[-2])
    sch.vectorize(rf_loops[-1])
    vectorize_inner(sch, init)
    return True


def decompose_first(sch: TracedSchedule, block: BlockRV) -> bool:
    """The block's init as a block of its own before its first reduction loop."""
    info = info_of(sch, block)
    kinds = loop_kinds(info)
    if info.block.init is None or "R" not in kinds:
        return False
    loops = sch.loops(block)
    return sch.attempt("decompose_reduction", block, loops[kinds.index("R")])[0]


def _suffix_len(kinds: list[str], kind: str) -> int:
    n = 0
    for k in reversed(kinds):
        if k != kind:
            break
        n += 1
    return n


def split_tile(sch: TracedSchedule, decision: str, loop: LoopRV, default: int,
               candidates: list[int]) -> list[LoopRV]:
    """The loop split into [outer, inner]: a perfect tile (sample_perfect_tile) when the
    extent is a constant multiple of `default`, else an inner factor from `candidates`
    (sample_categorical) with a guarded tail."""
    e = const_extent(sch, loop)
    if e is not None and e % default == 0:
        tile = sch.sample_tile(decision, loop, 2, max(candidates + [default]),
                               [e // default, default])
        return sch.split(loop, tile)
    if default not in candidates:
        candidates = sorted(candidates + [default])
    factor = sch.sample_choice(decision, candidates, default)
    return sch.split(loop, [None, factor])


def place_epilogue(sch: TracedSchedule, acc: BlockRV, loop: LoopRV,
                   vectorize: bool = True, reductions: bool = True) -> list[str]:
    """Place the write-back `acc` of a cache_write (accumulators) and the blocks consuming
    what it writes under `loop`, each vectorized inside (when `vectorize`); the names of the
    consumers moved. Without `reductions`, the consumers stop at the first reduction (a GPU
    tile spreads its epilogue over threads, which a reduction's loops cannot be).
    When the result is an intermediate that one spatial block consumes, it is never stored:
    the write-back is inlined into that block, which reads the accumulators (only when no
    block an earlier rule scheduled reads it too: inlining rewrites every reader)."""
    out = info_of(sch, acc).regions()[1][0].buffer
    readers = [b for b in later_blocks(sch, acc, scheduled=True)
               if any(r.buffer is out for r in b.regions()[0])]
    consumers = [b for b in readers if b.name not in sch.scheduled]
    taken: list[str] = []
    if len(readers) == 1 and consumers and consumers[0].is_spatial and \
            sch.attempt("compute_inline", acc)[0]:
        epi = sch.block(consumers[0].name)
        sch.reverse_compute_at(epi, loop)
        if vectorize:
            vectorize_inner(sch, epi)
        return [consumers[0].name]
    sch.reverse_compute_at(acc, loop)
    if vectorize:
        vectorize_inner(sch, acc)
    for c in consumers:
        if c.is_reduction and not reductions:
            break
        rv = sch.block(c.name)
        ok, _ = sch.attempt("reverse_compute_at", rv, loop)
        if not ok:
            break
        if vectorize:
            vectorize_inner(sch, rv)
        taken.append(c.name)
    return taken
