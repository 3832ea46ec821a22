"""Run a task-graph function's tasks in random valid orders on the reference interpreter.

A checker for the event tensors: `check_interleavings` simulates the counters to pick, again
and again, a random task whose waits are satisfied (as a parallel run might), then runs the
tasks in that order in the interpreter (which checks every wait again) and compares the results
with the function run as written. A missing notification shows up as a hang (no task can
start, the message names the task and the event), a missing wait as a race (different
results, or a wait the interpreter finds unsatisfied).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from tirc.ir import intrinsics as intrin
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import HANDLE, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.interpreter import ExprEvaluator, InterpreterError, run_prim_func
from tirc.ir.stmt import Evaluate, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt
from tirc.ir.visitor import post_order_visit
from tirc.passes.megakernel.task_graph import TaskGraph, read_task_graph

Event = tuple[str, int]          # (event tensor name, flat index)
Action = tuple[str, Event, int]  # ("notify" | "wait", event, count)


def _is_event_stmt(s: Stmt) -> bool:
    """True for statements that only wait and notify (the prologue and epilogue of a task)."""
    ok = True
    found = False

    def visit(n: object) -> None:
        nonlocal ok, found
        if isinstance(n, Call) and n.op in (intrin.EVENT_WAIT, intrin.EVENT_NOTIFY):
            found = True
        elif isinstance(n, Stmt) and not isinstance(n, (For, IfThenElse, SeqStmt, Evaluate,
                                                        LetStmt)):
            ok = False

    post_order_visit(s, visit)
    return ok and found


def _split(body: Stmt) -> tuple[list[Stmt], list[Stmt]]:
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    pre: list[Stmt] = []
    while items and _is_event_stmt(items[0]):
        pre.append(items.pop(0))
    post: list[Stmt] = []
    while items and _is_event_stmt(items[-1]):
        post.insert(0, items.pop())
    return pre, post


def _actions(stmts: list[Stmt], env: dict[Var, Any], ev: ExprEvaluator) -> list[Action]:
    out: list[Action] = []

    def run(s: Stmt) -> None:
        if isinstance(s, SeqStmt):
            for x in s.seq:
                run(x)
        elif isinstance(s, For):
            lo = int(ev(s.min, env))
            for i in range(lo, lo + int(ev(s.extent, env))):
                env[s.loop_var] = i
                run(s.body)
        elif isinstance(s, IfThenElse):
            if ev(s.condition, env):
                run(s.then_case)
            elif s.else_case is not None:
                run(s.else_case)
        elif isinstance(s, LetStmt):
            env[s.var] = ev(s.value, env)
            run(s.body)
        elif isinstance(s, Evaluate) and isinstance(s.value, Call):
            elem = s.value.args[0]
            assert isinstance(elem, BufferLoad)
            index = int(ev(elem.indices[0], env)) if elem.indices else 0
            count = int(ev(s.value.args[1], env)) if len(s.value.args) > 1 else 1
            kind = "wait" if s.value.op == intrin.EVENT_WAIT else "notify"
            out.append((kind, (elem.buffer.name, index), count))

    for s in stmts:
        run(s)
    return out


def _bindings(func: PrimFunc, graph: TaskGraph, args: Sequence[Any],
              ev: ExprEvaluator) -> dict[Var, Any]:
    """Shape variables from the arrays, then the hoisted lets in order."""
    env: dict[Var, Any] = {}
    for p, a in zip(func.params, args):
        buf = func.buffer_map.get(p)
        if buf is None:
            env[p] = a
            continue
        for dim, size in zip(buf.shape, np.shape(a)):
            if isinstance(dim, Var):
                env.setdefault(dim, size)
    for s in graph.scopes:
        if isinstance(s, LetStmt):
            env[s.var] = ev(s.value, env)
    return env


def random_order(func: PrimFunc, args: Sequence[Any], rng: random.Random) -> list[tuple[int, int]]:
    """A random order of the tasks (kind, tile) in which every wait is satisfied when the task
    starts, simulating the event counters (program order when the graph's `in_order` condition
    holds); raises InterpreterError naming the stuck task and event when no task can start (a
    hang)."""
    graph = read_task_graph(func)
    ev = ExprEvaluator()
    env = _bindings(func, graph, args, ev)
    counters: dict[Event, int] = {}
    for buf, init in graph.events:
        size = int(np.prod([int(ev(d, env)) for d in buf.shape]))
        start = int(ev(init, env)) if init is not None else 0
        for i in range(size):
            counters[(buf.name, i)] = start
    pending: list[tuple[int, int, list[Action], list[Action]]] = []
    for k, t in enumerate(graph.tasks):
        pre, post = _split(t.body)
        for tile in range(int(ev(t.extent, env))):
            local = dict(env)
            local[t.var] = tile
            pending.append((k, tile, _actions(pre, local, ev), _actions(post, local, ev)))
    order: list[tuple[int, int]] = []

    def ready(pre: list[Action]) -> bool:
        delta: dict[Event, int] = {}
        for kind, e, count in pre:
            if kind == "notify":
                delta[e] = delta.get(e, 0) + count
            elif counters[e] - delta.get(e, 0) > 0:
                return False
        return True

    in_order = graph.in_order is not None and bool(ev(graph.in_order, env))
    while pending:
        choices = [i for i, (_, _, pre, _) in enumerate(pending) if ready(pre)]
        if in_order:
            # These shapes allow only program order (see task_graph.py).
            choices = [0] if 0 in choices else []
        if not choices:
            k, tile, pre, _ = pending[0]
            stuck = next(e for kind, e, _ in pre if kind == "wait" and counters[e] > 0)
            raise InterpreterError(
                f"hang: task {graph.tasks[k].name}[{tile}] waits forever on "
                f"{stuck[0]}[{stuck[1]}] (counter {counters[stuck]}); "
                f"{len(pending)} tasks cannot start")
        k, tile, pre, post = pending.pop(rng.choice(choices))
        for kind, e, count in pre + post:
            if kind == "notify":
                counters[e] -= count
        order.append((k, tile))
    return order


def ordered_function(func: PrimFunc) -> PrimFunc:
    """`func` running its tasks in the order given by an extra (steps, 2) int64 argument."""
    graph = read_task_graph(func)
    steps = Var("steps", INT64)
    order = Buffer(name="order", shape=(steps, IntImm(2, INT64)), dtype=INT64,
                   data=Var("order", HANDLE))
    s = Var("s", INT64)
    kind = BufferLoad(order, (s, IntImm(0, INT64)), INT64)
    tile = BufferLoad(order, (s, IntImm(1, INT64)), INT64)
    body: Stmt | None = None
    for k in reversed(range(len(graph.tasks))):
        t = graph.tasks[k]
        run = LetStmt(t.var, cast(t.var.dtype, tile), t.body)
        body = run if body is None else IfThenElse(binop("eq", kind, IntImm(k, INT64)), run,
                                                   body)
    assert body is not None
    loop = For(s, IntImm(0, INT64), steps, ForKind.SERIAL, body)
    handle = Var("order_handle", order.data.dtype)
    return dataclasses.replace(func, params=(*func.params, handle),
                               buffer_map={**func.buffer_map, handle: order},
                               body=graph.rebuild(loop))


def check_interleavings(func: PrimFunc, args: Sequence[np.ndarray], runs: int = 5,
                        seed: int = 0) -> list[str]:
    """Problems found running `func`'s tasks in `runs` random valid orders: hangs, failed
    waits and results that differ from running `func` as written. Empty when none."""
    problems: list[str] = []
    want: list[np.ndarray] | None = [np.array(a, copy=True) for a in args]
    try:
        run_prim_func(func, want)
    except InterpreterError as err:
        problems.append(f"in order: {err}")
        want = None
    ordered = ordered_function(func)
    rng = random.Random(seed)
    for r in range(runs):
        try:
            order = random_order(func, args, rng)
            got = [np.array(a, copy=True) for a in args]
            run_prim_func(ordered, [*got, np.array(order, dtype=np.int64).reshape(-1, 2)])
        except InterpreterError as err:
            problems.append(f"run {r}: {err}")
            continue
        for i, (w, g) in enumerate(zip(want or [], got)):
            if not np.allclose(w, g, rtol=1e-4, atol=1e-4, equal_nan=True):
                problems.append(f"run {r}: race: argument {i} differs from the in-order run")
    return problems
