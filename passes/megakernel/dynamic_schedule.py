"""Dynamic scheduling: a shared queue that a task is pushed into once all its producers have
been dispatched.

    events = counters | head | tail | pending[K] | queue[num_tasks]     (one workspace)
    for w in T.parallel(nw, annotations={"parallel.team": True}):
        (counters filled, dealt over the workers)
        if w == 0: head = tail = 0; queue[:] = 1; pending[k] = tasks of k's producer kinds;
                   push every kind k with pending[k] == 0 (the seeds), in program order
        tirc.omp_barrier()
        h = atomic_add(head, 1)
        while h < num_tasks:
            wait until queue[h] <= 0 ; g = -queue[h]           (slot h published)
            for each consumer kind c of g's kind: if atomic_add(pending[c], -1) == 1: push(c)
            (run task g: wait on its events, compute, notify) ; h = atomic_add(head, 1)

push(c) reserves `extent_c` slots with one atomic add on `tail` and publishes each task id `g`
as `queue[s] = 1 - (1 + g)` with a release `event_notify`, so a popping worker waits on the slot
like on any event. Counting happens twice: on dispatch (`pending`: a kind is pushed once every
task of every producer kind has been handed to a worker) and on completion (the event counters:
a task runs once the producer tiles it needs have finished). The dispatch count is kept per kind,
not per tile: a consumer tile is pushed when all tiles of its producer kinds are dispatched, which
for the generated graphs (kinds in program order, a FIFO queue) is when the producer tiles would
have been ahead of it in the queue anyway.

When the graph's `in_order` condition holds (a kind that the dependence analysis relied on to
have a task has none), worker 0 runs every task in program order instead, popping nothing.

Deadlock-free for any number of threads: a dispatched task waits only on tasks of its producer
kinds, and those were all dispatched before it was pushed, so each of them holds (or held) a
worker of its own; by induction over the (topological) program order the earliest unfinished
dispatched task has all its producers finished and runs. A consumer never occupies a worker its
producers still need, because it cannot be popped before they are. And the queue never starves:
while a task is undispatched, the earliest such task's producer kinds are all dispatched, so it
was pushed; every popped slot below `num_tasks` is therefore eventually published.
"""

from __future__ import annotations

from tirc.ir import intrinsics as intrin
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import (
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    Var,
    binop,
    cast,
    logical_not,
    select,
)
from tirc.ir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    While,
    seq,
)
from tirc.passes.megakernel.static_schedule import (
    barrier,
    dispatch,
    task_offsets,
    team_region,
    with_table,
)
from tirc.passes.megakernel.task_graph import (
    TaskGraph,
    producer_kinds,
    task_count,
    task_function,
)
from tirc.passes.megakernel.workspace import LINE, EventWorkspace, pack_events

HEAD, TAIL, PENDING = 0, LINE, 2 * LINE


def queue_workspace(graph: TaskGraph, total: PrimExpr) -> EventWorkspace:
    """The event workspace with room for the queue after the counters."""
    kinds = len(graph.tasks)
    pending = (kinds + LINE - 1) // LINE * LINE
    return pack_events(graph.events, binop("add", IntImm(PENDING + pending, INT64), total))


def _call(op: str, *args: PrimExpr) -> PrimExpr:
    """An int32 intrinsic call."""
    return Call(op, tuple(args), INT32)


def dynamic_workers(graph: TaskGraph) -> Stmt:
    """The task graph run by one parallel region popping a shared queue."""
    total = Var("num_tasks", INT64)
    table = task_offsets(graph)
    firsts = table[2]
    ws = queue_workspace(graph, total)
    kinds = len(graph.tasks)
    base = ws.offset(len(graph.events))
    head = ws.at(binop("add", base, HEAD))
    tail = ws.at(binop("add", base, TAIL))

    def pending(k: int) -> BufferLoad:
        return ws.at(binop("add", base, PENDING + k))

    queue_start = binop("add", base, PENDING + (kinds + LINE - 1) // LINE * LINE)

    def slot(i: PrimExpr) -> BufferLoad:
        return ws.at(binop("add", queue_start, i))

    prods = producer_kinds(graph)
    consumers = [[c for c in range(kinds) if k in prods[c]] for k in range(kinds)]

    def push(k: int) -> Stmt:
        """Reserve slots for kind k's tasks and publish their ids."""
        extent = cast(INT64, task_count(graph.tasks[k]))
        start = Var(f"slots{k}", INT64)
        i = Var(f"push{k}", INT64)
        task = binop("add", firsts[k], i)
        publish = Evaluate(_call(intrin.EVENT_NOTIFY, slot(binop("add", start, i)),
                                 cast(INT32, binop("add", task, IntImm(1, INT64)))))
        reserve = cast(INT64, _call(intrin.ATOMIC_ADD, tail, cast(INT32, extent)))
        return LetStmt(start, reserve, For(i, IntImm(0, INT64), extent, ForKind.SERIAL, publish))

    def counted(k: int, body: Stmt) -> Stmt:
        """Kind k's body after its dispatch is counted against its consumer kinds."""
        steps: list[Stmt] = []
        for c in consumers[k]:
            last = binop("eq", _call(intrin.ATOMIC_ADD, pending(c), IntImm(-1, INT32)),
                         IntImm(1, INT32))
            steps.append(IfThenElse(last, push(c)))
        return seq(*steps, body)

    bodies = [counted(k, task_function(ws.rewrite(t.body), t.name))
              for k, t in enumerate(graph.tasks)]

    def setup() -> Stmt:
        """Worker 0, before the barrier: the queue empty, the dispatch counts, the seeds."""
        i = Var("slot", INT64)
        steps: list[Stmt] = [BufferStore(ws.buffer, IntImm(0, INT32), head.indices),
                             BufferStore(ws.buffer, IntImm(0, INT32), tail.indices),
                             For(i, IntImm(0, INT64), total, ForKind.SERIAL,
                                 BufferStore(ws.buffer, IntImm(1, INT32), slot(i).indices))]
        for k in range(kinds):
            count: PrimExpr = IntImm(0, INT32)
            for j in prods[k]:
                count = binop("add", count, cast(INT32, task_count(graph.tasks[j])))
            steps.append(BufferStore(ws.buffer, count, pending(k).indices))
        for k in range(kinds):
            steps.append(IfThenElse(binop("eq", pending(k), IntImm(0, INT32)), push(k)))
        return seq(*steps)

    cur = Buffer(name="current_slot", shape=(IntImm(1, INT64),), dtype=INT64,
                 data=Var("current_slot", HANDLE), scope="local")
    zero = IntImm(0, INT64)
    now = BufferLoad(cur, (zero,), INT64)
    pop: Stmt = BufferStore(cur, cast(INT64, _call(intrin.ATOMIC_ADD, head, IntImm(1, INT32))),
                            (zero,))
    wait: Stmt = Evaluate(_call(intrin.EVENT_WAIT, slot(now)))
    g = Var("task", INT64)
    task: PrimExpr = binop("sub", zero, cast(INT64, slot(now)))
    order = graph.in_order
    if order is not None:
        # In program order: worker 0 runs tasks 0, 1, 2, ... without the queue, the others
        # none (one loop for both ways, so each task body is emitted once).
        pop = IfThenElse(order, BufferStore(cur, binop("add", now, IntImm(1, INT64)), (zero,)),
                         pop)
        wait = IfThenElse(logical_not(order), wait)
        task = select(order, now, task)
    run = seq(wait, LetStmt(g, task, dispatch(bodies, graph, g, firsts)), pop)

    def worker(w: Var, nth: Var) -> Stmt:
        first = pop if order is None else IfThenElse(
            order, BufferStore(cur, select(binop("eq", w, zero), zero, total), (zero,)), pop)
        return seq(ws.fill(w, nth), IfThenElse(binop("eq", w, zero), setup()), barrier(),
                   Allocate(cur, seq(first, While(binop("lt", now, total), run))))

    body = with_table(table, total, ws.allocate(team_region(worker)))
    return graph.rebuild(body, with_events=False)
