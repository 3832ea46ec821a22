"""The task-graph form of a megakernel, built from a host function and read back.

    T.func_attr({..., "megakernel": "static"})
    (workspace, size lets, shape asserts: hoisted above everything)
    E_a_b = T.event_tensor((extent_b,), init=extent_a)      # one per edge
    for t in T.serial(extent_a, annotations={"task": "a"}):  # one loop per task kind
        (settle and wait on incoming events) ; tile t of kernel a ; (notify consumers)
    for t in T.serial(extent_b, annotations={"task": "b"}):
        ...

The kinds are in program order, which is a topological order of the tasks, so running the
function as written (the interpreter does) is one valid schedule; any order in which every
task starts only after its waits are satisfied is another (see interleave.py). It prints and
re-parses like any loop function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.stmt import Allocate, AssertStmt, For, ForKind, LetStmt, SeqStmt, Stmt, seq
from tirc.ir.visitor import post_order_visit
from tirc.passes.megakernel.dependence import edges
from tirc.passes.megakernel.event_tensors import make_events, notifies, waits
from tirc.passes.megakernel.tiling import make_kinds, split_host

MEGAKERNEL_ATTR = "megakernel"
TASK_KEY = "task"
MODES = ("static", "dynamic")

Wrap = Callable[[Stmt], Stmt]


@dataclass
class TaskLoop:
    """One task kind of a task-graph function: tasks `var` in [0, extent) running `body`."""

    name: str
    var: Var
    extent: PrimExpr
    body: Stmt


@dataclass
class TaskGraph:
    """A task-graph function taken apart: scopes outside, event tensors, task kinds."""

    wraps: list[Wrap]
    events: list[tuple[Buffer, PrimExpr | None]]
    tasks: list[TaskLoop]
    scopes: list[Stmt]

    def rebuild(self, body: Stmt, with_events: bool = True) -> Stmt:
        """`body` inside the event tensors (optionally) and the hoisted scopes."""
        if with_events:
            for buf, init in reversed(self.events):
                body = Allocate(buf, body, init)
        for w in reversed(self.wraps):
            body = w(body)
        return body


def build_task_graph(func: PrimFunc, mode: str, tile: int = 1) -> PrimFunc:
    """The task-graph form of a host function (the output of lower-graph)."""
    wraps, stages = split_host(func.body)
    kinds = make_kinds(stages, tile)
    events = make_events(kinds, edges(kinds))
    loops: list[Stmt] = []
    for k, kind in enumerate(kinds):
        body = seq(*waits(k, kinds, events), kind.body, *notifies(k, kinds, events))
        loops.append(For(kind.var, IntImm(0, kind.var.dtype), kind.extent, ForKind.SERIAL, body,
                         annotations={TASK_KEY: kind.name}))
    out: Stmt = seq(*loops)
    for ev in reversed(events):
        out = Allocate(ev.buffer, out, ev.init)
    for w in reversed(wraps):
        out = w(out)
    return dataclasses.replace(func, body=out, attrs={**func.attrs, MEGAKERNEL_ATTR: mode})


def event_uses(body: Stmt, op: str) -> set[Var]:
    """The storage variables of the event tensors that `body` applies `op` to."""
    found: set[Var] = set()

    def visit(n: object) -> None:
        if isinstance(n, Call) and n.op == op and n.args and isinstance(n.args[0], BufferLoad):
            found.add(n.args[0].buffer.data)

    post_order_visit(body, visit)
    return found


def producer_kinds(graph: TaskGraph) -> list[list[int]]:
    """For each task kind, the other kinds that notify an event it waits on (its producers).

    Kinds are in program order and that order must be topological: a kind may only wait for
    earlier kinds (a kind's own notifications, the ones settling the counters of producer tiles
    it does not need, do not make it its own producer). Both schedules rely on this order.
    """
    waits = [event_uses(t.body, "event_wait") for t in graph.tasks]
    notifies = [event_uses(t.body, "event_notify") for t in graph.tasks]
    out: list[list[int]] = []
    for k, task in enumerate(graph.tasks):
        prods = [j for j in range(len(graph.tasks)) if j != k and notifies[j] & waits[k]]
        later = [graph.tasks[j].name for j in prods if j > k]
        if later:
            raise CompileError(f"megakernel: task '{task.name}' waits on an event that the later "
                               f"task '{later[0]}' notifies; task kinds must be in dependence "
                               "order")
        out.append(prods)
    return out


def read_task_graph(func: PrimFunc) -> TaskGraph:
    """Take a task-graph function apart (it may have been printed and parsed again)."""
    wraps: list[Wrap] = []
    events: list[tuple[Buffer, PrimExpr | None]] = []
    scopes: list[Stmt] = []
    s = func.body
    while True:
        if isinstance(s, (LetStmt, AssertStmt, Allocate)):
            scopes.append(s)
        if isinstance(s, LetStmt):
            wraps.append(lambda b, s=s: LetStmt(s.var, s.value, b))
        elif isinstance(s, AssertStmt):
            wraps.append(lambda b, s=s: AssertStmt(s.condition, s.message, b))
        elif isinstance(s, Allocate) and s.buffer.scope == "event":
            events.append((s.buffer, s.init))
        elif isinstance(s, Allocate):
            wraps.append(lambda b, s=s: Allocate(s.buffer, b, s.init))
        else:
            break
        s = s.body
    items = s.seq if isinstance(s, SeqStmt) else (s,)
    tasks = []
    for item in items:
        if not isinstance(item, For) or TASK_KEY not in item.annotations:
            raise CompileError(f"{func.name}: a megakernel's body must be task loops "
                               f"(loops annotated with \"{TASK_KEY}\")", item.span)
        tasks.append(TaskLoop(str(item.annotations[TASK_KEY]), item.loop_var, item.extent,
                              item.body))
    return TaskGraph(wraps, events, tasks, scopes)
