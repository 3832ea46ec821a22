"""The `apply-schedules` pass: run the module's `@S.schedule` functions on their targets.

A schedule applies when its target's kind (`"llvm"`, `"cuda"`) matches the compilation
target's, or when either is unspecified; applied schedules leave the module, the others stay.
Tensor intrinsics (prim_funcs with `T.func_attr({"tensor_intrin": name, "role": "desc" |
"impl"})`, see tensorize.py) are collected for `tensorize` and removed from the module, since
they are declarations, not kernels. The seed of the sampling primitives is the pass config
entry `schedule.seed` (default 0); a function with tuned decisions (the `decisions` option,
pass config `schedule.decisions`, written by `tirc --tuned`) has its schedule's sampling
instructions take them (decisions.py, tuned.py).
"""

from __future__ import annotations

from typing import Any

from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.schedule import Schedule
from tirc.passes.pass_base import Pass, PassContext, option
from tirc.passes.schedule.tensor_intrin import collect_intrinsics, is_intrinsic
from tirc.passes.schedule.tuned_option import decisions_option, tuned_decisions


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


def format_only(sched: Schedule) -> bool:
    """Whether `sched` only changes sparse formats and iterations (decompose_format and its
    kin), leaving every loop to the default schedule as if it had none."""
    from tirc.passes.schedule.sparse import PRIMITIVES as SPARSE_PRIMITIVES

    return bool(sched.instrs) and all(ins.prim in SPARSE_PRIMITIVES for ins in sched.instrs)


def schedule_seed(text: str) -> int:
    """The `schedule.seed` config text as an integer (a user error when it is not one)."""
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

    seed: int = option(0, config="schedule.seed", parse=schedule_seed,
                       doc="seed of the sample_* decisions a schedule leaves open")
    decisions: str = decisions_option()

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        intrinsics = collect_intrinsics(mod)
        has_intrinsics = any(is_intrinsic(f) for f in mod.prim_funcs().values())
        if not mod.schedules and not has_intrinsics:
            return mod
        # only when there are schedules
        from tirc.passes.schedule.decisions import workload_key
        from tirc.passes.schedule.runner import run_schedule
        from tirc.passes.schedule.state import ScheduleState
        from tirc.passes.schedule.tuned import apply_tuned
        from tirc.passes.sparse.lower_sparse_iterations import sparse_array_checks

        kind = target_kind(ctx.target)
        seed = self.seed
        checks = sparse_array_checks(ctx)
        tuned = tuned_decisions(self.decisions)

        def new_state(func: PrimFunc) -> ScheduleState:
            state = ScheduleState(func, seed, intrinsics)
            state.check_sparse_arrays = checks
            return state

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
                variants = tuned.get(workload_key(func)) if tuned else None
                if variants:
                    funcs[sched.func_name], added = apply_tuned(func, sched, variants, new_state)
                else:
                    state = new_state(func)
                    funcs[sched.func_name] = run_schedule(func, sched, seed, intrinsics, state)
                    added = state.new_functions
                funcs.update(added)
                if not format_only(sched):
                    ctx.scheduled.add(sched.func_name)
            except CompileError as e:
                problems.extend(e.diagnostics)
        if problems:
            raise CompileError(problems)
        return mod.replace(functions=funcs, schedules=tuple(kept))  # type: ignore[return-value]
