"""Pass `megakernel-gpu`: a task graph -> one persistent CUDA kernel (and a counter init kernel).

    for w in T.thread_binding(tirc_sm_count, "blockIdx.x"):   # one block per SM: a worker
        (offset tables: event slices, first task of each kind)
        static:  for q in range(tasks of worker w): run task g = w + q * tirc_sm_count
        dynamic: g = atomic_add(head, 1) by thread 0, shared with the block;
                 while g < num_tasks: run task g; g = atomic_add(head, 1)

`tirc_sm_count` is a launch-plan symbol the runtime binds to the device's multiprocessor
count (cuDeviceGetAttribute) at call time, so one PTX file fits every GPU. Before the
megakernel, the launch plan runs the init kernel that sets every event counter (and the queue
head) in the event workspace (tirc.passes.megakernel.gpu_events). Each task runs on all threads
of its block (tirc.passes.megakernel.gpu_threads): thread 0 waits (acquire) and notifies
(release), with block barriers around, and the work is spread over threadIdx.x.

Tasks are numbered in the task graph's kind order, which is topological: task g waits only on
tasks with a smaller number.
- Static: worker w runs g = w, w + nw, w + 2 nw, ... in increasing order. Deadlock-free by
  construction when all nw blocks are resident at once (one block per SM, each fitting on an
  SM; nothing else occupying the GPU): the unfinished task with the smallest number has all its
  producers finished, and every earlier task of its worker is finished too, so its worker is
  running it and makes progress. (A block that never became resident would hold back its
  queue; the runtime launches no more blocks than SMs for that reason.)
- Dynamic: the global queue hands out tasks in topological order with an atomic head, so a task
  is dispatched only after all its producers were (count on dispatch: the head; count on
  completion: the event counters); a block that took a task is resident, and it waits only on
  tasks already taken by resident blocks. Deadlock-free for any grid size and residency.

When the task graph's `in_order` condition holds for the shapes of a call (see
task_graph.py), worker 0 alone runs the tasks, in order, in either schedule.

The pass runs on task-graph functions (the `megakernel` pass's output, still at block level)
in place of `megakernel-runtime`; the GPU pipeline's loop-level steps follow (the default
pipeline of `tirc --target cuda -fmegakernel=static|dynamic`, tirc.passes.pipeline). Threads
per block: the longest vectorized loop of the tasks, capped by the config key
"megakernel.gpu-threads" (default 256, so that a kernel of up to 255 registers per thread still
fits one block on an SM: the static schedule needs every block resident).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from tirc.ir import intrinsics as intrin
from tirc.ir.attrs import (
    MEGAKERNEL,
    MEGAKERNEL_MODES,
    MEGAKERNEL_RUNTIME,
    OP_PATTERN,
    SM_COUNT,
)
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import HANDLE, INT32, INT64
from tirc.ir.expr import (
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    Var,
    binop,
    cast,
    logical_and,
    select,
)
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import barrier
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    While,
    seq,
)
from tirc.passes.megakernel.gpu_events import EventLayout, event_layout
from tirc.passes.megakernel.gpu_threads import block_threads, single, spread_task
from tirc.passes.megakernel.task_graph import TaskGraph, read_task_graph
from tirc.passes.pass_base import Pass, PassContext, PrimFuncPass, option
from tirc.passes.schedule_rules.options import schedule_option

# The launch-plan symbol for the number of SMs (the runtime binds it; see runtime/cuda.py).
GPU_RUNTIME = "gpu"
DEFAULT_MAX_THREADS = 256


def _threads(text: str) -> int:
    """The cap on threads per block from the pass config (a user error when malformed)."""
    if not text.isdigit() or _threads_problem(int(text)):
        raise CompileError(f"megakernel-gpu: megakernel.gpu-threads must be a multiple of 32 "
                           f"from 32 to 1024, got '{text}'")
    return int(text)


def _threads_problem(value: int) -> str | None:
    if not 32 <= value <= 1024 or value % 32:
        return f"must be a multiple of 32 from 32 to 1024, got {value}"
    return None


def _task_table(graph: TaskGraph) -> tuple[Buffer, list[PrimExpr], Stmt]:
    """A local table first[k] (the number of the first task of kind k; first[K] the number
    of tasks), its loads, and the stores filling it."""
    k = len(graph.tasks)
    first = Buffer(name="first_task", shape=(IntImm(k + 1, INT64),), dtype=INT64,
                   data=Var("first_task", HANDLE), scope="local")
    loads = [BufferLoad(first, (IntImm(i, INT64),), INT64) for i in range(k + 1)]
    fill: list[Stmt] = [BufferStore(first, IntImm(0, INT64), (IntImm(0, INT64),))]
    for i, t in enumerate(graph.tasks):
        fill.append(BufferStore(first, binop("add", loads[i], cast(INT64, t.extent)),
                                (IntImm(i + 1, INT64),)))
    return first, loads, seq(*fill)


def _dispatch(bodies: list[tuple[Var, Stmt]], g: PrimExpr, firsts: list[PrimExpr]) -> Stmt:
    """Run task `g`: a binary search over the kinds' first numbers, then that kind's body
    with its tile index bound (the condition is the same on every thread of the block)."""
    def pick(lo: int, hi: int) -> Stmt:
        if hi - lo == 1:
            var, body = bodies[lo]
            return LetStmt(var, cast(var.dtype, binop("sub", g, firsts[lo])), body)
        mid = (lo + hi) // 2
        return IfThenElse(binop("lt", g, firsts[mid]), pick(lo, mid), pick(mid, hi))

    return pick(0, len(bodies))


def _static(bodies: list[tuple[Var, Stmt]], firsts: list[PrimExpr], total: PrimExpr,
            w: Var, nw: Var, in_order: PrimExpr | None) -> Stmt:
    """Worker `w` runs tasks w, w + nw, w + 2 nw, ... in increasing order (when `in_order`
    holds, worker 0 runs them all)."""
    q = Var("q", INT64)
    workers: PrimExpr = cast(INT64, nw)
    if in_order is not None:
        workers = select(in_order, IntImm(1, INT64), workers)
    g = binop("add", cast(INT64, w), binop("mul", q, workers))
    count = binop("floordiv", binop("add", binop("sub", total, cast(INT64, w)),
                                    binop("sub", workers, 1)), workers)
    count = select(binop("lt", cast(INT64, w), workers), count, IntImm(0, INT64))
    return For(q, IntImm(0, INT64), binop("max", count, IntImm(0, INT64)), ForKind.SERIAL,
               _dispatch(bodies, g, firsts))


def _dynamic(bodies: list[tuple[Var, Stmt]], firsts: list[PrimExpr], total: PrimExpr,
             head: PrimExpr, threads: int, w: Var, in_order: PrimExpr | None) -> Stmt:
    """Pop the global queue (thread 0, shared with the block) until it is empty (when
    `in_order` holds, worker 0 alone pops, so it runs the tasks one at a time in order)."""
    nxt = Buffer(name="next_task", shape=(IntImm(1, INT64),), dtype=INT32,
                 data=Var("next_task", HANDLE), scope="shared")
    zero = IntImm(0, INT64)
    taken: PrimExpr = Call(intrin.ATOMIC_ADD, (head, IntImm(1, INT32)), INT32)
    pop_stmt: Stmt = BufferStore(nxt, taken, (zero,))
    if in_order is not None:
        idle = logical_and(in_order, binop("ne", cast(INT64, w), zero))
        pop_stmt = IfThenElse(idle, BufferStore(nxt, cast(INT32, total), (zero,)), pop_stmt)
    pop = single(pop_stmt, threads)
    now = cast(INT64, BufferLoad(nxt, (zero,), INT32))
    g = Var("task", INT64)
    loop = While(binop("lt", now, total),
                 LetStmt(g, now, seq(barrier(), _dispatch(bodies, g, firsts), barrier(), pop,
                                     barrier())))
    return Allocate(nxt, seq(pop, barrier(), loop))


def persistent_kernel(graph: TaskGraph, layout: EventLayout, mode: str, threads: int,
                      sm_count: Var) -> Stmt:
    """The megakernel's launch region (see the module docstring)."""
    w = Var("worker", INT32)

    def body(offsets: list[PrimExpr]) -> Stmt:
        tasks = [(t.var, spread_task(layout.rewrite(t.body, offsets), threads))
                 for t in graph.tasks]
        first, firsts, fill = _task_table(graph)
        total = Var("num_tasks", INT64)
        if mode == "static":
            run = _static(tasks, firsts, total, w, sm_count, graph.in_order)
        else:
            run = _dynamic(tasks, firsts, total, layout.head(offsets), threads, w,
                           graph.in_order)
        return Allocate(first, seq(fill, LetStmt(total, firsts[-1], run)))

    return For(w, IntImm(0, INT32), sm_count, ForKind.THREAD_BINDING, layout.with_table(body),
               thread_tag="blockIdx.x")


def lower_task_graph(func: PrimFunc, threads_cap: int) -> PrimFunc:
    """A task-graph function -> a GPU host function with an init kernel and the megakernel."""
    mode = str(func.attrs[MEGAKERNEL])
    graph = read_task_graph(func)
    layout = event_layout(graph.events, mode == "dynamic")
    threads = block_threads([t.body for t in graph.tasks], threads_cap)
    sm_count = Var(SM_COUNT, INT32)
    asserts = [s for s in graph.scopes if isinstance(s, AssertStmt)]
    init = layout.init_kernel(threads, Var("b", INT32))
    for a in reversed(asserts):
        # The shape checks run on the device (a failed one traps): host code only launches.
        init = init.replace(body=AssertStmt(a.condition, a.message, init.body))
    body: Stmt = Allocate(layout.workspace, seq(init, persistent_kernel(graph, layout, mode,
                                                                        threads, sm_count)))
    for wrap, scope in zip(reversed(graph.wraps), reversed(_wrapping(graph))):
        if not isinstance(scope, AssertStmt):
            body = wrap(body)
    return dataclasses.replace(func, body=body,
                               attrs={**func.attrs, MEGAKERNEL_RUNTIME: GPU_RUNTIME})


def _wrapping(graph: TaskGraph) -> list[Stmt]:
    """The hoisted scopes that `graph.wraps` rebuild, in the same order."""
    return [s for s in graph.scopes if not (isinstance(s, Allocate) and s.buffer.scope == "event")]


@dataclass(frozen=True)
class MegakernelGPU(Pass):
    """Task-graph functions -> a persistent CUDA kernel (see the module docstring)."""

    name: ClassVar[str] = "megakernel-gpu"
    description: ClassVar[str] = ("run a task graph's tasks on a persistent grid of one block "
                                  "per SM, with event counters in global memory")

    threads: int = option(DEFAULT_MAX_THREADS, config="megakernel.gpu-threads", parse=_threads,
                          check=_threads_problem,
                          doc="most threads per block (a multiple of 32 up to 1024)")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        cap = self.threads
        out = mod
        for name, func in mod.prim_funcs().items():
            marked = func.attrs.get(MEGAKERNEL) in MEGAKERNEL_MODES
            if not marked or func.attrs.get(MEGAKERNEL_RUNTIME):
                continue
            out = out.with_function(name, lower_task_graph(func, cap))
        return out


@dataclass(frozen=True)
class MegakernelGPUTiles(PrimFuncPass):
    """default-schedule's tiling for the kernels of a GPU megakernel (its tasks)."""

    name: ClassVar[str] = "megakernel-gpu-tiles"
    description: ClassVar[str] = ("cut generated kernels into parallel tiles with vectorized "
                                  "inner loops (the tasks of a GPU megakernel), on any target")

    schedule: str = schedule_option()

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        from tirc.passes.schedule_rules.api import schedule_function, wants_default_schedule

        if OP_PATTERN not in func.attrs or not wants_default_schedule(func, self.schedule):
            return func
        # accumulators in global workspaces: a task of a GPU megakernel cannot allocate
        return schedule_function(func, None, accumulators="global")[0]


__all__ = ["MegakernelGPU", "MegakernelGPUTiles", "lower_task_graph", "persistent_kernel"]
