"""Applying the rules to a function: the default schedule, as a trace of primitive calls.

For a loop function: when a matmul's rows are a symbolic size `n` (a batch), the body first
gets a run-time dispatch (`sch.dispatch("n", 1)`, decision `dispatch_<n>`) so that batch 1 runs
a matrix-vector schedule. Then, in each scope (the root block, or each variant), the inlining
step (inline.py) runs, then each rule in turn (most specific first, the fallback last) takes
the blocks it recognises, in program order, with the blocks it schedules along (a padding
before a convolution, an epilogue). A rule that a primitive
refuses half-way is undone and the next one tried; with decisions a caller chose (a tuner's
candidate) that is a `DecisionError` instead, so the candidate is rejected cleanly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from tirc.ir.attrs import VARIANT
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import THREAD_TAGS, is_thread_loop
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.schedule import Schedule
from tirc.ir.stmt import BlockRealize
from tirc.passes.schedule.dependence import child_sites
from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule.tree import Path, block_paths
from tirc.passes.schedule_rules.block_info import BlockInfo, matmul_roles, scope_blocks
from tirc.passes.schedule_rules.inline import inline_blocks
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule
from tirc.passes.schedule_rules.traced import Decision, DecisionError, TracedSchedule


@dataclass
class RuleTrace:
    """The default schedule of one function: what each rule took, the schedule as applied
    (printable as `@S.schedule`), and its named decisions."""

    func: str
    target: str
    schedule: Schedule
    decisions: dict[str, Decision] = field(default_factory=dict)
    applied: list[tuple[str, str]] = field(default_factory=list)  # (rule, anchor block)

    def summary(self) -> str:
        """`rule on block, ...`: which rule scheduled which block."""
        return ", ".join(f"{rule} on {block}" for rule, block in self.applied) or "none"


def scope_paths(sch: TracedSchedule) -> list[Path]:
    """The scopes the rules work in: the root block, or each variant block of a dispatch."""
    body = sch.state.body
    if not isinstance(body, BlockRealize):
        return [()]
    root: Path = (body,)
    sites = child_sites(root)
    variants = [s.path for s in sites if VARIANT in s.block.annotations]
    return variants or [root]


def _blocks(sch: TracedSchedule, scope: Path) -> list[BlockInfo]:
    """The blocks of a scope as they are now (the scope found again by its block's name; a
    primitive may have given a function without one a root block)."""
    body = sch.state.body
    name = scope[-1].block.name if scope else "root"  # type: ignore[attr-defined]
    paths = block_paths(body, name)
    scope = paths[0] if paths else ()
    return scope_blocks(body, scope)


def batch_var(sch: TracedSchedule) -> Var | None:
    """A size variable that is, alone, the row count of a matmul of the function."""
    for info in _blocks(sch, scope_paths(sch)[0]):
        roles = matmul_roles(info)
        if roles is None or len(roles.i) != 1 or not roles.j:
            continue
        rows = roles.i[0].dom.extent
        if isinstance(rows, Var):
            return rows
    return None


def maybe_dispatch(sch: TracedSchedule) -> None:
    """`dispatch(n, 1)` for a matmul of `n` rows (decision `dispatch_<n>`)."""
    n = batch_var(sch)
    if n is None:
        return
    if sch.sample_choice(f"dispatch_{n.name}", [0, 1], 1):
        sch.dispatch(n.name, 1)


def _in_threads(info: BlockInfo) -> bool:
    """Whether a block already runs in the threads of a kernel: a rule that bound a loop it
    shares with other blocks (one thread for a nest of several) scheduled them too."""
    return any(is_thread_loop(s) and s.thread_tag in THREAD_TAGS for s in info.path)


def _overridden(sch: TracedSchedule, since: int) -> bool:
    names = list(sch.decisions)[since:]
    return any(name in sch.overrides for name in names)


def apply_rules(sch: TracedSchedule, rules: Sequence[ScheduleRule], ctx: RuleContext,
                dispatch: bool = True) -> list[tuple[str, str]]:
    """Schedule every block of the function with `rules`: each rule in turn, most specific
    first, takes the blocks it recognises (and those it schedules with them), in program
    order; (rule, block) pairs applied."""
    applied: list[tuple[str, str]] = []
    if dispatch:
        maybe_dispatch(sch)
    for scope in scope_paths(sch):
        inline_blocks(sch, _blocks(sch, scope))
        done = sch.scheduled
        for rule in rules:
            k = 0
            while True:
                pending = [b.name for b in _blocks(sch, scope) if b.name not in done
                           and not (ctx.is_gpu and _in_threads(b))]
                if k >= len(pending):
                    break
                anchor = pending[k]
                before = {b.name for b in _blocks(sch, scope)}
                taken = _try(sch, rule, anchor, ctx)
                if taken is None:
                    k += 1
                    continue
                applied.append((rule.name, anchor))
                now = {b.name for b in _blocks(sch, scope)}
                done |= set(taken) | {anchor} | (now - before)
    return applied


def _try(sch: TracedSchedule, rule: ScheduleRule, anchor: str, ctx: RuleContext
         ) -> list[str] | None:
    """The blocks `rule` scheduled taking `anchor`, or None (nothing changed) when it declines
    or a primitive refuses it half-way."""
    snap = sch.snapshot()
    n_decisions = len(sch.decisions)
    try:
        taken = rule.apply(sch, anchor, ctx)
    except DecisionError:
        raise
    except ScheduleError as e:
        if _overridden(sch, n_decisions):
            raise DecisionError(f"candidate rejected: rule {rule.name} on block \"{anchor}\": "
                                f"{e}") from None
        sch.restore(snap)
        return None
    if taken is None:
        sch.restore(snap)
    return taken


def trace_function(func: PrimFunc, rules: Sequence[ScheduleRule], ctx: RuleContext,
                   overrides: Mapping[str, Any] | None = None) -> tuple[PrimFunc, RuleTrace]:
    """`func` scheduled by `rules`, and its trace; DecisionError when `overrides` name a
    decision the rules do not make, or make a primitive refuse."""
    sch = TracedSchedule(func, dict(overrides or {}))
    applied = apply_rules(sch, rules, ctx, dispatch=not ctx.is_gpu)
    unused = sorted(set(sch.overrides) - set(sch.decisions))
    if unused:
        raise DecisionError(f"function \"{func.name}\" has no decision {unused[0]!r} "
                            f"(its decisions: {', '.join(sch.decisions) or 'none'})")
    trace = RuleTrace(func.name, ctx.kind, sch.schedule(f"{func.name}_default", ctx.kind),
                      dict(sch.decisions), applied)
    return sch.current, trace
