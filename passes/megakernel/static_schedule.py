"""Static scheduling: the topologically ordered task list dealt round-robin to the workers.

    nw = tirc.omp_max_threads()
    for w in T.parallel(nw):                 # one OpenMP region; one iteration per thread
        for q in range(tasks of worker w):   # g = w, w + nw, w + 2 nw, ...
            (run global task g)

Task `g` is the `g - first_k`-th tile of kind `k`, where kinds are numbered in program order
and `first_k` is the number of tasks of the kinds before `k` (computed from the shapes at run
time). Deadlock-free by construction: every task waits only on tasks with a smaller `g` (its
producers are of earlier kinds), each worker runs its tasks in increasing `g`, and every worker
runs on its own thread. Then the unfinished task with the smallest `g` has all its producers
finished, and every task before it in its worker's queue has a smaller `g`, so it is finished
too: that worker is not blocked, and the schedule makes progress until all tasks are done.
The "own thread" part needs the OpenMP team to have `nw` threads, so that the parallel loop
gives each thread exactly one iteration; when the runtime gives fewer (OMP_DYNAMIC, a thread
limit, nesting), worker 0 runs the whole list in order, which is trivially deadlock-free.
"""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binop, cast, select
from tirc.ir.stmt import Allocate, BufferStore, For, ForKind, IfThenElse, LetStmt, Stmt, seq
from tirc.passes.megakernel.task_graph import TaskGraph


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


def dispatch(graph: TaskGraph, g: PrimExpr, firsts: list[PrimExpr]) -> Stmt:
    """Run global task `g`: a binary search over the kinds' first indices, then that kind's
    tile body with its tile index bound."""

    def pick(lo: int, hi: int) -> Stmt:
        if hi - lo == 1:
            t = graph.tasks[lo]
            return LetStmt(t.var, cast(t.var.dtype, binop("sub", g, firsts[lo])), t.body)
        mid = (lo + hi) // 2
        return IfThenElse(binop("lt", g, firsts[mid]), pick(lo, mid), pick(mid, hi))

    return pick(0, len(graph.tasks))


def max_threads() -> PrimExpr:
    """The OpenMP default team size, as int64."""
    return cast(INT64, Call("tirc.omp_max_threads", (), INT32))


def static_workers(graph: TaskGraph) -> Stmt:
    """The task graph run by one parallel region with a static round-robin schedule."""
    table = task_offsets(graph)
    firsts = table[2]
    total = Var("num_tasks", INT64)
    nw = Var("num_workers", INT64)
    w = Var("worker", INT64)
    team = cast(INT64, Call("tirc.omp_num_threads", (), INT32))
    full = binop("eq", team, nw)
    first = select(full, w, select(binop("eq", w, 0), IntImm(0, INT64), total))
    stride = select(full, nw, IntImm(1, INT64))
    q = Var("q", INT64)
    g = binop("add", first, binop("mul", q, stride))
    count = binop("floordiv", binop("add", binop("sub", total, first),
                                    binop("sub", stride, 1)), stride)
    queue = For(q, IntImm(0, INT64), binop("max", count, IntImm(0, INT64)), ForKind.SERIAL,
                dispatch(graph, g, firsts))
    region = For(w, IntImm(0, INT64), nw, ForKind.PARALLEL, queue)
    return graph.rebuild(with_table(table, total, LetStmt(nw, max_threads(), region)))
