"""The `apply-schedules` pass: run the module's `@S.schedule` functions on their targets.

A schedule applies when its target's kind (`"llvm"`, `"cuda"`) matches the compilation
target's, or when either is unspecified; applied schedules leave the module, the others stay.
Tensor intrinsics (prim_funcs with `T.func_attr({"tensor_intrin": name, "role": "desc" |
"impl"})`, see tensorize.py) are collected for `tensorize` and removed from the module, since
they are declarations, not kernels. The seed of the sampling primitives is the pass config
entry `schedule.seed` (default 0); a function with tuned decisions (`schedule.decisions`, from
`tirc --tuned`) has its schedule's sampling instructions take them (decisions.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.schedule import Schedule
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.schedule.decisions import tuned_decisions
from tirc.passes.schedule.runner import run_schedule
from tirc.passes.schedule.tensor_intrin import collect_intrinsics, is_intrinsic
from tirc.passes.schedule.tuned import apply_tuned


def target_kind(target: Any) -> str | None:
    """The kind of a Target, a target string, or None."""
    if target is None:
        return None
    kind = getattr(target, "kind", None)
    if isinstance(kind, str):
        return kind
    text = str(target).strip()
    return text.split()[0] if text else None


def matches(sched: Schedule, kind: str | None) -> bool:
    return sched.target is None or kind is None or target_kind(sched.target) == kind


def schedule_seed(ctx: PassContext) -> int:
    text = ctx.config.get("schedule.seed", "0")
    try:
        return int(text)
    except ValueError:
        raise CompileError(f"pass config schedule.seed must be an integer, got '{text}'") \
            from None


@dataclass(frozen=True)
class ApplySchedules(Pass):
    """Apply every schedule of the module whose target matches."""

    name = "apply-schedules"
    description = "apply the module's schedules (@S.schedule) whose target matches"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        intrinsics = collect_intrinsics(mod)
        has_intrinsics = any(is_intrinsic(f) for f in mod.prim_funcs().values())
        if not mod.schedules and not has_intrinsics:
            return mod
        kind = target_kind(ctx.target)
        seed = schedule_seed(ctx)
        tuned = tuned_decisions(ctx.config)
        funcs = {k: f for k, f in mod.functions.items()
                 if not (isinstance(f, PrimFunc) and is_intrinsic(f))}
        kept: list[Schedule] = []
        problems: list[Diagnostic] = []
        for sched in mod.schedules:
            if not matches(sched, kind):
                kept.append(sched)
                continue
            func = funcs.get(sched.func_name)
            if not isinstance(func, PrimFunc):
                what = "unknown function" if func is None else "graph function"
                problems.append(Diagnostic("error", f"schedule for {what} "
                                                    f"\"{sched.func_name}\"", sched.span))
                continue
            try:
                funcs[sched.func_name] = apply_tuned(func, sched, tuned, seed, intrinsics) \
                    if tuned else run_schedule(func, sched, seed, intrinsics)
            except CompileError as e:
                problems.extend(e.diagnostics)
        if problems:
            raise CompileError(problems)
        return mod.replace(functions=funcs, schedules=tuple(kept))  # type: ignore[return-value]
