"""Passes `megakernel` (graph function -> task-graph loop function) and `megakernel-runtime`
(task graph -> one OpenMP region of workers that run the tasks with atomic event counters).

`megakernel` runs after fusion and scheduling, in place of lower-graph for the graph functions
it takes: those with `R.func_attr({"megakernel": "static"|"dynamic"})`, or every graph function
when the pass config has `megakernel=static|dynamic` (`-fmegakernel=static` on the command
line, or `--pass-config megakernel=static`). Placed after lower-graph instead, it takes the host
functions when the config asks for it. The config key "megakernel.tile" groups that many tiles
of default-schedule's parallel loops into a task; "megakernel.watchdog" (seconds,
`-fmegakernel-watchdog=SECONDS`; for megakernel-runtime) makes a wait that lasts longer fail the
call with a message naming the waiting task and event instead of hanging.
"""

from __future__ import annotations

from tirc.ir import intrinsics as intrin
from tirc.ir.attrs import (
    GLOBAL_SYMBOL,
    GRAPH_FUNC,
    MEGAKERNEL,
    MEGAKERNEL_MODES,
    MEGAKERNEL_RUNTIME,
    PRIMITIVE,
)
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import INT32, INT64
from tirc.ir.expr import BufferLoad, Call, IntImm, StringImm, cast
from tirc.ir.function import PrimFunc
from tirc.ir.graph import Function, GCall, GlobalVar
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import Evaluate
from tirc.ir.visitor import Mutator, post_order_visit
from tirc.passes.pass_base import Pass, PassContext, at_least, option


def _mode(value: object, where: str) -> str | None:
    if value in (None, "", "none", "off"):
        return None
    if value not in MEGAKERNEL_MODES:
        raise CompileError(f"megakernel: {where} must be 'static' or 'dynamic', got '{value}'")
    return str(value)


def _config_mode(text: str) -> str:
    return _mode(text, "the megakernel pass config") or ""


def _tile(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise CompileError(f"megakernel: megakernel.tile must be a positive integer, got "
                           f"'{text}'")
    return int(text)


def _watchdog(text: str) -> int:
    if not text.isdigit():
        raise CompileError(f"megakernel: megakernel.watchdog must be a whole number of "
                           f"seconds, got '{text}'")
    return int(text)


def _positive(value: int) -> str | None:
    return None if value >= 1 else f"must be a positive integer, got {value}"


@dataclass(frozen=True)
class Megakernel(Pass):
    """Graph functions marked for it -> task-graph loop functions with event tensors."""

    name = "megakernel"
    description = "turn a graph function's kernels into one task graph with event tensors"

    mode: str = option("", config="megakernel", parse=_config_mode,
                       check=lambda m: None if m in ("", *MEGAKERNEL_MODES) else
                       f"must be 'static' or 'dynamic', got '{m}'",
                       doc="static or dynamic: every graph function becomes a megakernel "
                           "(-fmegakernel); by default only those marked")
    tile: int = option(1, config="megakernel.tile", parse=_tile, check=_positive,
                       doc="rows of a kernel's outer loop per task")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        default = self.mode or None
        if default is None and not any(f.attrs.get(MEGAKERNEL) for f in mod.graph_funcs().values()):
            return mod  # nothing marked: no task graph machinery to load
        from tirc.passes.graph.legalize_print import drop_prints
        from tirc.passes.graph.lower_graph import lower_function
        from tirc.passes.megakernel.task_graph import build_task_graph

        tile = self.tile
        out = mod
        used: set[str] = set()
        taken = False
        for name, func in mod.functions.items():
            if isinstance(func, Function) and not func.attrs.get(PRIMITIVE):
                mode = _mode(func.attrs.get(MEGAKERNEL), f"{name}'s megakernel attribute") \
                    or default
                if mode is None:
                    continue
                func = drop_prints(func, ctx.warn)  # type: ignore[arg-type]
                host, callees = lower_function(func, mod, asserts=True)  # checks before tasks
                used |= callees
                taken = True
                out = out.with_function(name, build_task_graph(host, mode, tile))
            elif isinstance(func, PrimFunc) and func.attrs.get(GRAPH_FUNC) and default and \
                    MEGAKERNEL not in func.attrs:
                out = out.with_function(name, build_task_graph(func, default, tile))
        if not taken:
            return out
        rest = [f for f in out.graph_funcs().values() if not f.attrs.get(PRIMITIVE)]
        for name, f in mod.functions.items():
            if isinstance(f, Function) and f.attrs.get(PRIMITIVE) and not rest:
                out = out.without_function(name)
            elif name in used and GLOBAL_SYMBOL not in f.attrs and \
                    not any(name in called_kernels(g) for g in rest):
                out = out.without_function(name)
        return out


def called_kernels(func: Function) -> set[str]:
    """Names of the loop functions a graph function calls through R.call_tir."""
    names: set[str] = set()

    def visit(n: object) -> None:
        if isinstance(n, GCall) and n.op == "call_tir" and isinstance(n.args[0], GlobalVar):
            names.add(n.args[0].name)

    post_order_visit(func.body, visit)
    return names


@dataclass(frozen=True)
class MegakernelRuntime(Pass):
    """Task-graph functions -> one parallel region of workers (static or dynamic schedule)."""

    name = "megakernel-runtime"
    description = "run a task graph's tasks on the workers of one OpenMP parallel region"

    watchdog: int = option(0, config="megakernel.watchdog", parse=_watchdog, check=at_least(0),
                           doc="seconds a task may wait on an event before the call fails "
                               "(0: wait forever; -fmegakernel-watchdog)")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        watchdog = self.watchdog
        for name, func in mod.prim_funcs().items():
            mode = func.attrs.get(MEGAKERNEL)
            if mode not in MEGAKERNEL_MODES or func.attrs.get(MEGAKERNEL_RUNTIME):
                continue
            from tirc.passes.megakernel.dynamic_schedule import dynamic_workers
            from tirc.passes.megakernel.static_schedule import static_workers
            from tirc.passes.megakernel.task_graph import read_task_graph, scope_compute

            graph = read_task_graph(func)
            for t in graph.tasks:
                t.body = scope_compute(t.body, t.name)
                if watchdog:
                    t.body = _Watchdog(watchdog, t.name).visit(t.body)
            body = static_workers(graph) if mode == "static" else dynamic_workers(graph)
            out = out.with_function(name, func.replace(
                body=body, attrs={**func.attrs, MEGAKERNEL_RUNTIME: True}))
        return out


class _Watchdog(Mutator):
    """Waits of task `task` that fail after `seconds` instead of hanging."""

    def __init__(self, seconds: int, task: str) -> None:
        self.seconds = seconds
        self.task = task

    def visit_Evaluate(self, s: Evaluate) -> Evaluate:
        call = s.value
        if not isinstance(call, Call) or call.op != intrin.EVENT_WAIT:
            return s
        elem = call.args[0]
        name = elem.buffer.name if isinstance(elem, BufferLoad) else "?"
        index = elem.indices[0] if isinstance(elem, BufferLoad) and len(elem.indices) == 1 \
            else IntImm(0, INT64)
        # The event's name and index travel along: the runtime packs the counters into one
        # workspace, and the message names the event tensor, not the workspace.
        args = (elem, IntImm(self.seconds, INT64), StringImm(self.task), StringImm(name),
                cast(INT64, index))
        return Evaluate(Call(intrin.EVENT_WAIT_WATCHDOG, args, INT32))
