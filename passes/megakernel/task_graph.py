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
task starts only after its waits are satisfied is another (see interleave.py), except when the
task loops sit in `with T.attr(None, "megakernel.in_order", cond):` and `cond` holds for the
shapes of the call: then program order is the only valid one (the dependence analysis left out
edges implied through kinds that have a task unless `cond`; see dependence.edges). It prints
and re-parses like any loop function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.ir import intrinsics as intrin
from tirc.ir.attrs import (
    MEGAKERNEL,
    MEGAKERNEL_IN_ORDER,
    TASK,
    TASK_COMPUTE,
    TASK_FUNCTION,
)
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    For,
    ForKind,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import any_node, post_order_visit
from tirc.passes.megakernel.dependence import edges
from tirc.passes.megakernel.event_tensors import make_events, notifies, waits
from tirc.passes.megakernel.tiling import make_kinds, split_host

# What the LLVM backend outlines into a function of its own per task kind (never inlined, so
# LLVM optimises one kernel at a time): a whole task (waits, compute, notifications), and, within
# it, the compute, whose buffer pointers may be `noalias` (no other thread touches its data
# while it runs, which is not so across the waits and notifications).
EVENT_OPS = (intrin.EVENT_WAIT, intrin.EVENT_NOTIFY)

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
    # When this holds, the tasks must run one at a time in program order (None: never).
    in_order: PrimExpr | None = None

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
    found, in_order = edges(kinds)
    events = make_events(kinds, found)
    loops: list[Stmt] = []
    for k, kind in enumerate(kinds):
        body = seq(*waits(k, kinds, events), kind.body, *notifies(k, kinds, events))
        loops.append(For(kind.var, IntImm(0, kind.var.dtype), kind.extent, ForKind.SERIAL, body,
                         annotations={TASK: kind.name}))
    out: Stmt = seq(*loops)
    if in_order is not None:
        out = AttrStmt(None, MEGAKERNEL_IN_ORDER, in_order, out)
    for ev in reversed(events):
        out = Allocate(ev.buffer, out, ev.init)
    for w in reversed(wraps):
        out = w(out)
    return dataclasses.replace(func, body=out, attrs={**func.attrs, MEGAKERNEL: mode})


def event_uses(body: Stmt, op: str) -> set[Var]:
    """The storage variables of the event tensors that `body` applies `op` to."""
    found: set[Var] = set()

    def visit(n: object) -> None:
        if isinstance(n, Call) and n.op == op and n.args and isinstance(n.args[0], BufferLoad):
            found.add(n.args[0].buffer.data)

    post_order_visit(body, visit)
    return found


def uses_events(s: Stmt) -> bool:
    """Whether `s` waits on or notifies an event."""
    return any_node(s, lambda n: isinstance(n, Call) and n.op in EVENT_OPS)


def task_function(body: Stmt, kind: str) -> Stmt:
    """A whole task of `kind`, to be outlined into its own function."""
    return AttrStmt(None, TASK_FUNCTION, StringImm(kind), body)


def scope_compute(body: Stmt, kind: str) -> Stmt:
    """A task body with each run of statements free of event operations (the kernel's tile,
    between the waits and the notifications) wrapped in a `tirc.task_compute` for `kind`."""
    items = body.seq if isinstance(body, SeqStmt) else (body,)
    out: list[Stmt] = []
    run: list[Stmt] = []
    for item in (*items, None):
        if item is not None and not uses_events(item):
            run.append(item)
            continue
        if run:
            out.append(AttrStmt(None, TASK_COMPUTE, StringImm(kind), seq(*run)))
            run = []
        if item is not None:
            out.append(item)
    return seq(*out)


def producer_kinds(graph: TaskGraph) -> list[list[int]]:
    """For each task kind, the other kinds that notify an event it waits on (its producers).

    Kinds are in program order and that order must be topological: a kind may only wait for
    earlier kinds (a kind's own notifications, the ones settling the counters of producer tiles
    it does not need, do not make it its own producer). Both schedules rely on this order.
    """
    waits = [event_uses(t.body, intrin.EVENT_WAIT) for t in graph.tasks]
    notifies = [event_uses(t.body, intrin.EVENT_NOTIFY) for t in graph.tasks]
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
    in_order = None
    if isinstance(s, AttrStmt) and s.key == MEGAKERNEL_IN_ORDER:
        in_order, s = s.value, s.body
    items = s.seq if isinstance(s, SeqStmt) else (s,)
    tasks = []
    for item in items:
        if not isinstance(item, For) or TASK not in item.annotations:
            raise CompileError(f"{func.name}: a megakernel's body must be task loops "
                               f"(loops annotated with \"{TASK}\")", item.span)
        tasks.append(TaskLoop(str(item.annotations[TASK]), item.loop_var, item.extent,
                              item.body))
    return TaskGraph(wraps, events, tasks, scopes, in_order)


def task_count(task: TaskLoop) -> PrimExpr:
    """How many tasks a kind runs: its loop's extent, none for a negative one (a loop of
    `range(-64)` runs no iteration), as the schedules number, reserve and count them."""
    from tirc.ir.arith import Analyzer

    extent = task.extent
    zero = IntImm(0, extent.dtype)
    if isinstance(extent, IntImm):
        return extent if extent.value >= 0 else zero
    if Analyzer().can_prove(binop("ge", extent, zero)):
        return extent
    return binop("max", extent, zero)
