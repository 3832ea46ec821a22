"""Static scheduling: the topologically ordered task list dealt to the workers in blocks.

    events = (all event counters in one workspace; see workspace.py)
    for w in T.parallel(nw, annotations={"parallel.team": True}):  # one OpenMP region
        nth = tirc.omp_num_threads()         # each thread runs this once, w = its number
        (counters w, w + nth, ... set to their initial values) ; tirc.omp_barrier()
        for each task kind k, in program order:
            chunk = ceil(tiles of k / nth)
            for q in range(tiles of k for worker w):   # tile t = w * chunk + q
                (run tile t of kind k)

Each kind's tiles are dealt in contiguous blocks, as OpenMP's static schedule deals a parallel
loop's iterations: neighbouring tiles usually share operands (the row tiles of one column
panel of a matmul read the same weights), so a worker keeps them in its own cache instead of
both workers streaming all of them. A kind with fewer tiles than workers runs on the first
workers, so a chain of one-task kinds (norms, reductions at batch 1) stays on worker 0 with no
hand-over between threads, as a kernel-per-operator build runs a one-iteration loop on the
calling thread alone. Number the tasks in program order, `g = first_k + t` (`first_k`: the
tasks of the kinds before `k`); each worker runs its tasks in increasing `g`. The counters are
filled inside the region, and the barrier makes every worker see them filled before any task
waits on or notifies one.

When the graph's `in_order` condition holds (a kind that the dependence analysis relied on to
have a task has none), worker 0 is dealt every task and runs them in program order.

Deadlock-free by construction: every task waits only on tasks with a smaller `g` (its
producers are of earlier kinds: program order is a dependence order, see
`task_graph.producer_kinds`), each worker runs its tasks in increasing `g`, and each worker is
its own thread (a "parallel.team" loop runs its body exactly once on every thread of the team,
and the tasks are dealt over the team's real size, so a team smaller than asked for still runs
every task). Then the unfinished task with the smallest `g` has all its producers finished,
and every task before it in its worker's queue has a smaller `g`, so it is finished too: that
worker is not blocked, and the schedule makes progress until all tasks are done.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir import intrinsics as intrin
from tirc.ir.attrs import PARALLEL_TEAM
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binop, cast, select
from tirc.ir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.passes.megakernel.task_graph import TaskGraph, task_count, task_function
from tirc.passes.megakernel.workspace import ceil_div, pack_events

# A parallel loop whose body every thread of the OpenMP team runs exactly once, with the loop
# variable its thread number; the extent is the team size asked for (the LLVM backend reads it).


def task_offsets(graph: TaskGraph) -> tuple[Buffer, Stmt, list[PrimExpr]]:
    """A table `first[k]` (the global index of kind k's first task: the number of tasks of the
    kinds before it; `first[K]` is the number of tasks), the stores filling it, and its loads.

    A table rather than a chain of lets, so the simplifier does not chase K nested sums.
    """
    k = len(graph.tasks)
    first = Buffer(name="first_task", shape=(IntImm(k + 1, INT64),), dtype=INT64,
                   data=Var("first_task", HANDLE), scope="local")
    loads = [BufferLoad(first, (IntImm(i, INT64),), INT64) for i in range(k + 1)]
    stores: list[Stmt] = [BufferStore(first, IntImm(0, INT64), (IntImm(0, INT64),))]
    for i, t in enumerate(graph.tasks):
        stores.append(BufferStore(first, binop("add", loads[i], cast(INT64, task_count(t))),
                                  (IntImm(i + 1, INT64),)))
    return first, seq(*stores), loads


def with_table(table: tuple[Buffer, Stmt, list[PrimExpr]], total: Var, body: Stmt) -> Stmt:
    """`body` after the task table is filled, with `total` bound to the number of tasks."""
    first, fill, loads = table
    return Allocate(first, seq(fill, LetStmt(total, loads[-1], body)))


def dispatch(bodies: list[Stmt], graph: TaskGraph, g: PrimExpr, firsts: list[PrimExpr]) -> Stmt:
    """Run global task `g`: a binary search over the kinds' first indices, then that kind's
    body (`bodies[k]`) with its tile index bound."""

    def pick(lo: int, hi: int) -> Stmt:
        if hi - lo == 1:
            t = graph.tasks[lo]
            return LetStmt(t.var, cast(t.var.dtype, binop("sub", g, firsts[lo])), bodies[lo])
        mid = (lo + hi) // 2
        return IfThenElse(binop("lt", g, firsts[mid]), pick(lo, mid), pick(mid, hi))

    return pick(0, len(graph.tasks))


def max_threads() -> PrimExpr:
    """The OpenMP default team size, as int64."""
    return cast(INT64, Call(intrin.OMP_MAX_THREADS, (), INT32))


def barrier() -> Stmt:
    """Every thread of the team waits here for all the others (and sees their writes)."""
    return Evaluate(Call(intrin.OMP_BARRIER, (), INT32))


def team_region(body: Callable[[Var, Var], Stmt]) -> Stmt:
    """One parallel region whose every thread runs `body(worker, workers)` once."""
    nw = Var("num_workers", INT64)
    w = Var("worker", INT64)
    nth = Var("team", INT64)
    team = cast(INT64, Call(intrin.OMP_NUM_THREADS, (), INT32))
    region = For(w, IntImm(0, INT64), nw, ForKind.PARALLEL, LetStmt(nth, team, body(w, nth)),
                 annotations={PARALLEL_TEAM: True})
    return LetStmt(nw, max_threads(), region)


def batched_notifies(body: Stmt) -> tuple[Stmt, list[BufferLoad]]:
    """A task body without its notifications of one-element counters (the completion counters
    of all-to-all edges), and those counters. A worker notifies them once after its block of
    tiles of the kind, by the number of tiles it ran: one atomic instead of one per tile, and
    no consumer loses anything, since it needs every tile anyway. (Any notification could wait
    for the end of the block without deadlock, the block waiting on nothing later; the
    per-tile ones stay per tile so that consumer tiles can start early.)"""
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    keep: list[Stmt] = []
    counters: list[BufferLoad] = []
    for item in items:
        call = item.value if isinstance(item, Evaluate) else None
        elem = call.args[0] if isinstance(call, Call) and call.op == intrin.EVENT_NOTIFY and \
            len(call.args) == 1 else None
        if isinstance(elem, BufferLoad) and len(elem.buffer.shape) == 1 and \
                isinstance(elem.buffer.shape[0], IntImm) and elem.buffer.shape[0].value == 1:
            counters.append(elem)
        else:
            keep.append(item)
    return seq(*keep), counters


def static_workers(graph: TaskGraph) -> Stmt:
    """The task graph run by one parallel region with a static schedule (each kind's tiles
    in contiguous blocks)."""
    ws = pack_events(graph.events)

    def worker(w: Var, nth: Var) -> Stmt:
        # The workers the tasks are dealt to: all of them, or worker 0 alone when the graph
        # must run in program order for these shapes.
        dealers = Var("dealers", INT64)
        queue: list[Stmt] = []
        for t in graph.tasks:
            q = Var(f"{t.var.name}_q", INT64)
            mine = Var(f"{t.var.name}_count", INT64)
            extent = cast(INT64, t.extent)
            chunk = ceil_div(extent, dealers)
            start = binop("mul", w, chunk)
            count = binop("min", chunk, binop("max", binop("sub", extent, start),
                                               IntImm(0, INT64)))
            tile = cast(t.var.dtype, binop("add", start, q))
            body, counters = batched_notifies(t.body)
            tiles = For(q, IntImm(0, INT64), mine, ForKind.SERIAL,
                        LetStmt(t.var, tile, task_function(ws.rewrite(body), t.name)))
            done = [ws.rewrite(Evaluate(Call(intrin.EVENT_NOTIFY, (c, cast(INT32, mine)), INT32)))
                    for c in counters]
            if done:
                tiles = seq(tiles, IfThenElse(binop("gt", mine, IntImm(0, INT64)), seq(*done)))
            queue.append(LetStmt(mine, count, tiles))
        dealt = nth if graph.in_order is None else \
            select(graph.in_order, IntImm(1, INT64), nth)
        return seq(ws.fill(w, nth), barrier(), LetStmt(dealers, dealt, seq(*queue)))

    return graph.rebuild(ws.allocate(team_region(worker)), with_events=False)
