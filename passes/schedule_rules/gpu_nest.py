"""Thread-binding steps the GPU rules share: a spatial nest over a grid of blocks of threads,
a reduction shared by the threads of a block (cross-thread), and a block moved under a
block-level loop spread over the threads.

Every step is a primitive call on the TracedSchedule; the thread counts are named decisions
`<block>_threads`.
"""

from __future__ import annotations

from tirc.passes.schedule.state import BlockRV, LoopRV, ScheduleError
from tirc.passes.schedule_rules.nest import const_extent, loop_kinds, own_count
from tirc.passes.schedule_rules.rule import info_of, prefix
from tirc.passes.schedule_rules.traced import TracedSchedule

THREADS = (32, 64, 128, 256, 512, 1024)


def thread_count(sch: TracedSchedule, block: BlockRV, extent: int | None, default: int,
                 exact: bool = True) -> int:
    """The decision `<block>_threads`: a power of two up to 1024, by default `default`; for
    a constant `extent` below that, the extent itself (`exact`: no thread idles) or the
    power of two from 32 that covers it (a reduction tree's width)."""
    candidates = list(THREADS)
    want = default
    if extent is not None and extent < default:
        if exact:
            want = extent
        else:
            want = 32
            while want < extent:
                want *= 2
        if want not in candidates:
            candidates = sorted(candidates + [want])
    return sch.sample_choice(f"{prefix(block.name)}_threads", candidates, want)


def grid(sch: TracedSchedule, block: BlockRV, loops: list[LoopRV], default: int = 256
         ) -> tuple[LoopRV, LoopRV] | None:
    """The loops (a perfect nest feeding spatial variables, outermost first) over a grid of
    blocks of `<block>_threads` threads. The loops are cut into runs that each start at a
    loop of symbolic extent (so each run fuses into one index split by constant divisors,
    which the bind checks see through); the innermost run is cut into threads (threadIdx.x)
    and blocks (blockIdx.x), the runs outside it go to blockIdx.y and blockIdx.z. A guarded
    tail when the thread count does not divide. None when there is no loop."""
    if not loops:
        return None
    runs: list[list[LoopRV]] = [[]]
    for lp in loops:
        if runs[-1] and const_extent(sch, lp) is None:
            runs.append([])
        runs[-1].append(lp)
    if len(runs) > 3:
        raise ScheduleError(f"rules: the loops of block \"{block.name}\" have more than "
                            f"three symbolic extents")
    fused = sch.fuse(*runs[-1])
    threads = thread_count(sch, block, const_extent(sch, fused), default)
    bx, tx = sch.split(fused, [None, threads])
    sch.bind(tx, "threadIdx.x")
    sch.bind(bx, "blockIdx.x")
    for run, axis in zip(reversed(runs[:-1]), ("blockIdx.y", "blockIdx.z")):
        sch.bind(sch.fuse(*run), axis)
    return bx, tx


def one_thread(sch: TracedSchedule, block: BlockRV, loops: list[LoopRV]) -> None:
    """The block's nest (`loops`, outermost first, maybe none) on one thread of one block: two
    loops of one iteration (`add_unit_loop`) bound to blockIdx.x and threadIdx.x."""
    unit = sch.call("add_unit_loop", loops[0] if loops else block, out=["u"])
    bx = sch.call("add_unit_loop", unit, out=["u"])
    sch.bind(bx, "blockIdx.x")
    sch.bind(unit, "threadIdx.x")


def spread(sch: TracedSchedule, block: BlockRV, threads: int) -> None:
    """A block under a block-level loop: its own loops (spatial) fused and spread over the
    `threads` threads of the GPU block, the part that does not fit in one pass a serial loop
    outside."""
    info = info_of(sch, block)
    own = own_count(info)
    if not own:
        return
    loops = sch.loops(block)[len(info.loops) - own:]
    fused = sch.fuse(*loops)
    _, tx = sch.split(fused, [None, threads])
    sch.bind(tx, "threadIdx.x")


def cross_thread(sch: TracedSchedule, block: BlockRV, default: int = 128,
                 threads: int | None = None) -> int | None:
    """The block's reduction loops (its innermost own loops) fused and shared by
    `<block>_threads` threads of its GPU block (or `threads`, when the GPU block's thread
    count is chosen already): each thread folds a strided part, then the threads combine
    (bind of the reduction loop, lowered by gpu-lower-cross-thread-reduction). The thread
    count, or None with nothing changed when not possible."""
    info = info_of(sch, block)
    kinds = loop_kinds(info)
    own = own_count(info)
    nred = 0
    while nred < own and kinds[len(kinds) - 1 - nred] == "R":
        nred += 1
    if nred == 0 or nred != kinds.count("R") or "M" in kinds:
        return None
    snap = sch.snapshot()
    loops = sch.loops(block)
    red = sch.fuse(*loops[len(loops) - nred:])
    if threads is None:
        threads = thread_count(sch, block, const_extent(sch, red), default, exact=False)
    ko, ki = sch.split(red, [None, threads])
    sch.reorder(ki, ko)
    ok, _ = sch.attempt("bind", ki, "threadIdx.x")
    if not ok:
        sch.restore(snap)
        return None
    return threads
