"""Dynamic scheduling: a shared queue with an atomic head, popped by every worker.

    head = T.event_tensor((1,), init=0)
    for w in T.parallel(nw):
        cur[0] = tirc.atomic_add(head[0], 1)
        while cur[0] < total:
            (run global task cur[0]) ; cur[0] = tirc.atomic_add(head[0], 1)

The queue holds the tasks in the topological (program) order of the task graph, so a task is
handed out only once every task before it, and so all its producers, has been dispatched to a
worker: a consumer never occupies a worker its producers still need. Deadlock-free for any
number of threads: a dispatched task waits only on tasks dispatched before it, which are
running on other threads or done; the earliest unfinished dispatched task has all its producers
finished and runs. Tasks with no producers start at once; counting happens twice, on dispatch
(the head) and on completion (the event counters).
"""

from __future__ import annotations

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, Var, binop, cast
from tirc.ir.stmt import Allocate, BufferStore, For, ForKind, LetStmt, Stmt, While, seq
from tirc.passes.megakernel.static_schedule import dispatch, max_threads, task_offsets, with_table
from tirc.passes.megakernel.task_graph import TaskGraph


def dynamic_workers(graph: TaskGraph) -> Stmt:
    """The task graph run by one parallel region popping a shared queue."""
    table = task_offsets(graph)
    firsts = table[2]
    total = Var("num_tasks", INT64)
    head = Buffer(name="queue_head", shape=(IntImm(1, INT64),), dtype=INT32,
                  data=Var("queue_head", HANDLE), scope="event")
    cur = Buffer(name="current_task", shape=(IntImm(1, INT64),), dtype=INT64,
                 data=Var("current_task", HANDLE), scope="local")
    zero = IntImm(0, INT64)
    pop = BufferStore(cur, cast(INT64, Call("tirc.atomic_add",
                                            (BufferLoad(head, (zero,), INT32),
                                             IntImm(1, INT32)), INT32)), (zero,))
    g = Var("task", INT64)
    now = BufferLoad(cur, (zero,), INT64)
    loop = While(binop("lt", now, total), seq(LetStmt(g, now, dispatch(graph, g, firsts)), pop))
    nw = Var("num_workers", INT64)
    w = Var("worker", INT64)
    region = For(w, IntImm(0, INT64), nw, ForKind.PARALLEL, Allocate(cur, seq(pop, loop)))
    region = LetStmt(nw, max_threads(), region)
    return graph.rebuild(with_table(table, total, Allocate(head, region, IntImm(0, INT32))))
