"""The rules from outside: which functions get a default schedule, each function's trace with
its named decisions, and the rules applied with decisions a caller chose (a tuner searching
them, a tuning record replaying them).

    traces = rule_traces(mod, target)              # {func: RuleTrace}, decisions at defaults
    traces["mm"].decisions["C_tile_i"].value       # [8, 8]
    new = apply_rules(mod, target, {"mm": {"C_tile_i": [4, 16]}})   # DecisionError: rejected

`mod` is the module as the default-schedule step sees it (`prepare` runs the pipeline up to
there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tirc.ir.attrs import SCHEDULE, SCHEDULED
from tirc.ir.function import PrimFunc
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.module import IRModule
from tirc.ir.prim_call import called_functions
from tirc.ir.stmt import For, ForKind
from tirc.ir.visitor import any_node
from tirc.passes.schedule.tree import has_unique_block_names
from tirc.passes.schedule_rules.cpu_conv import Conv
from tirc.passes.schedule_rules.cpu_fallback import Fallback
from tirc.passes.schedule_rules.cpu_gather import Gather
from tirc.passes.schedule_rules.cpu_injective import Injective
from tirc.passes.schedule_rules.cpu_matmul import Matmul
from tirc.passes.schedule_rules.cpu_matvec import MatVec
from tirc.passes.schedule_rules.cpu_norm import Norm
from tirc.passes.schedule_rules.cpu_reduction import Reduction
from tirc.passes.schedule_rules.driver import RuleTrace, trace_function
from tirc.passes.schedule_rules.options import CONFIG_KEY, MODES, schedule_option
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule

CPU_RULES: tuple[ScheduleRule, ...] = (Gather(), Matmul(), Conv(), MatVec(), Norm(),
                                       Reduction(), Injective(), Fallback())

__all__ = ["CONFIG_KEY", "MODES", "apply_rules", "opted_out", "prepare", "rule_traces",
           "schedule_function", "schedule_option", "wants_default_schedule"]

def rules_for(ctx: RuleContext) -> tuple[ScheduleRule, ...]:
    if ctx.is_gpu:
        from tirc.passes.schedule_rules.gpu_rules import GPU_RULES

        return GPU_RULES
    return CPU_RULES


def hand_scheduled(func: PrimFunc) -> bool:
    """Loops that are not plain serial ones: the author scheduled the function."""
    return any_node(func.body, lambda n: isinstance(n, For) and
                    (n.kind != ForKind.SERIAL or bool(n.annotations)))


def opted_out(func: PrimFunc, mode: str = "rules") -> bool:
    """`T.func_attr({"tirc.schedule": "none"})`, or the passes' `schedule` option `none`."""
    return mode == "none" or func.attrs.get(SCHEDULE) == "none"


def wants_default_schedule(func: PrimFunc, mode: str = "rules") -> bool:
    """Whether the default CPU rules schedule `func`: not opted out (attribute or the
    `schedule` option), not scheduled already (by its own @S.schedule or by hand), and
    calling no other loop function (the rules cannot see what the callee reads and writes:
    parallelising a loop around a call could race), and naming each block once (the
    primitives find blocks by name; TVM allows several unnamed `T.block()`), and with no
    break or continue (the primitives refuse loops that jump: tirc.ir.loop_jumps)."""
    if opted_out(func, mode) or func.attrs.get(SCHEDULED) or called_functions(func.body):
        return False
    if contains_loop_jump(func.body):
        return False
    return not hand_scheduled(func) and has_unique_block_names(func.body)


def schedule_function(func: PrimFunc, target: Any = None,
                      decisions: Mapping[str, Any] | None = None,
                      accumulators: str = "local") -> tuple[PrimFunc, RuleTrace]:
    """`func` with its default schedule (or the rules with `decisions`), and the trace;
    `accumulators` is the storage scope of the CPU rules' accumulators."""
    ctx = RuleContext.of(target, accumulators)
    new, trace = trace_function(func, rules_for(ctx), ctx, decisions)
    attrs = {**new.attrs, SCHEDULED: True}
    return new.replace(attrs=attrs), trace  # type: ignore[return-value]


def rule_traces(mod: IRModule, target: Any = None,
                mode: str = "rules") -> dict[str, RuleTrace]:
    """The trace of every function the default rules schedule (with the `schedule` option
    `mode`), at the default decisions."""
    return {name: schedule_function(f, target)[1] for name, f in mod.prim_funcs().items()
            if wants_default_schedule(f, mode)}


def apply_rules(mod: IRModule, target: Any = None,
                decisions: Mapping[str, Mapping[str, Any]] | None = None,
                mode: str = "rules") -> IRModule:
    """`mod` with every function the rules schedule scheduled, with `decisions` (by function,
    then by decision name) in place of the defaults; DecisionError when a candidate does not
    fit or a primitive refuses it."""
    decisions = decisions or {}
    funcs = dict(mod.functions)
    for name, f in mod.prim_funcs().items():
        if wants_default_schedule(f, mode):
            funcs[name] = schedule_function(f, target, decisions.get(name))[0]
    return mod.replace(functions=funcs)  # type: ignore[return-value]


def prepare(mod: IRModule, target: Any = None, opt_level: int = 2,
            config: Mapping[str, str] | None = None) -> IRModule:
    """`mod` through the default pipeline up to the default-schedule step (not included)."""
    from tirc.ir.target import parse_target
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pass_base import PassContext
    from tirc.passes.pipeline import build_pipeline, default_pipeline

    tgt = parse_target(target)
    steps = default_pipeline(tgt, max(1, opt_level))
    name = "gpu-default-schedule" if tgt.is_gpu else "default-schedule"
    steps = steps[:steps.index(name)]
    ctx = PassContext(opt_level=max(1, opt_level), target=tgt, config=dict(config or {}))
    return run_pipeline(mod, build_pipeline(steps), ctx)
