"""Static scheduling: the topologically ordered task list dealt round-robin to the workers.

    events = (all event counters in one workspace; see workspace.py)
    for w in T.parallel(nw, annotations={"parallel.team": True}):  # one OpenMP region
        nth = tirc.omp_num_threads()         # each thread runs this once, w = its number
        (counters w, w + nth, ... set to their initial values) ; tirc.omp_barrier()
        for each task kind k, in program order:
            for q in range(tiles of k for worker w):   # tile t = w, w + nth, w + 2 nth, ...
                (run tile t of kind k)

Each kind's tiles are dealt round-robin starting again at worker 0, so a chain of one-task
kinds (norms, reductions at batch 1) stays on worker 0 with no hand-over between threads, as
a kernel-per-operator build runs a one-iteration loop on the calling thread alone. Number the
tasks in program order, `g = first_k + t` (`first_k`: the tasks of the kinds before `k`); each
worker runs its tasks in increasing `g`. The counters are filled inside the region, and the
barrier makes every worker see them filled before any task waits on or notifies one.

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

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binop, cast
from tirc.ir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    seq,
)
from tirc.passes.megakernel.task_graph import TaskGraph
from tirc.passes.megakernel.workspace import ceil_div, pack_events

# A parallel loop whose body every thread of the OpenMP team runs exactly once, with the loop
# variable its thread number; the extent is the team size asked for (the LLVM backend reads it).
TEAM_KEY = "parallel.team"


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
        stores.append(BufferStore(first, binop("add", loads[i], cast(INT64, t.extent)),
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
    return cast(INT64, Call("tirc.omp_max_threads", (), INT32))


def barrier() -> Stmt:
    """Every thread of the team waits here for all the others (and sees their writes)."""
    return Evaluate(Call("tirc.omp_barrier", (), INT32))


def team_region(body: Callable[[Var, Var], Stmt]) -> Stmt:
    """One parallel region whose every thread runs `body(worker, workers)` once."""
    nw = Var("num_workers", INT64)
    w = Var("worker", INT64)
    nth = Var("team", INT64)
    team = cast(INT64, Call("tirc.omp_num_threads", (), INT32))
    region = For(w, IntImm(0, INT64), nw, ForKind.PARALLEL, LetStmt(nth, team, body(w, nth)),
                 annotations={TEAM_KEY: True})
    return LetStmt(nw, max_threads(), region)


def static_workers(graph: TaskGraph) -> Stmt:
    """The task graph run by one parallel region with a static round-robin schedule."""
    ws = pack_events(graph.events)

    def worker(w: Var, nth: Var) -> Stmt:
        queue: list[Stmt] = []
        for t in graph.tasks:
            q = Var(f"{t.var.name}_q", INT64)
            extent = cast(INT64, t.extent)
            count = ceil_div(binop("max", binop("sub", extent, w), IntImm(0, INT64)), nth)
            tile = cast(t.var.dtype, binop("add", w, binop("mul", q, nth)))
            queue.append(For(q, IntImm(0, INT64), count, ForKind.SERIAL,
                             LetStmt(t.var, tile, ws.rewrite(t.body))))
        return seq(ws.fill(w, nth), barrier(), *queue)

    return graph.rebuild(ws.allocate(team_region(worker)), with_events=False)
