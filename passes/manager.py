"""The one pipeline runner: every pass runs through `run_pipeline`, which calls the instruments.

Printing, timing, verification, bisection and stopping live in the instruments
(tirc.passes.instruments); this module only wraps each pass with their hooks, so no pass has to
know about them. An instrument may veto a pass (`should_run`: `--opt-bisect-limit`) or end the
pipeline after one (`should_stop`: `--stop-after`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import field

from tirc.ir.deep_call import deep, deep_call
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.passes.pass_base import Pass, PassContext


@dataclass(frozen=True)
class PassRun:
    """What the runner measured about one run of a pass."""

    seconds: float
    notes: tuple[str, ...] = ()


class Instrument:
    """Hooks around a pipeline and around each pass; every hook does nothing by default."""

    def enter_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        """Called once before the first pass."""

    def should_run(self, p: Pass, ctx: PassContext) -> bool:
        """Asked before each pass (in pipeline order); a False from any instrument skips `p`,
        and no other hook sees it."""
        return True

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        """Called before `p` runs on `mod`."""

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext,
                   run: PassRun) -> None:
        """Called after `p` turned `before` into `after`."""

    def should_stop(self, p: Pass, ctx: PassContext) -> bool:
        """Asked after each pass, run or skipped; a True from any instrument ends the pipeline
        there, with the module as it is."""
        return False

    def exit_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        """Called once at the end, also when a pass failed (then `mod` is the last good one)."""


@deep
def run_pipeline(mod: IRModule, passes: Sequence[Pass], ctx: PassContext | None = None) -> IRModule:
    """Run `passes` in order on `mod`, skipping disabled ones, with `ctx.instruments` around.

    Runs on a big-stack thread (`tirc.ir.deep_call`): deeply nested IR needs deep recursion."""
    ctx = ctx or PassContext()
    instruments: list[Instrument] = list(ctx.instruments)
    for inst in instruments:
        inst.enter_pipeline(mod, ctx)
    try:
        mod, _ = _run_passes(mod, passes, ctx)
    finally:
        for inst in instruments:
            inst.exit_pipeline(mod, ctx)
    return mod


def _run_passes(mod: IRModule, passes: Sequence[Pass], ctx: PassContext) -> tuple[IRModule, bool]:
    """Run `passes` on `mod`: the result, and whether an instrument stopped the pipeline."""
    for p in passes:
        if p.name in ctx.disabled:
            continue
        if isinstance(p, Sequential):
            mod, stopped = _run_passes(mod, p.passes, ctx)
            if stopped:
                return mod, True
            continue
        # Every instrument is asked (a list, not a generator): bisection counts each pass.
        if all([inst.should_run(p, ctx) for inst in ctx.instruments]):
            mod = _run_one(p, mod, ctx)
        if any(inst.should_stop(p, ctx) for inst in ctx.instruments):
            return mod, True
    return mod, False


def _run_one(p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
    """One pass with the instruments' hooks around it."""
    for inst in ctx.instruments:
        inst.before_pass(p, mod, ctx)
    first_note = len(ctx.notes)
    start = time.perf_counter()
    new = p.configured(ctx).run(mod, ctx)
    run = PassRun(time.perf_counter() - start, tuple(ctx.notes[first_note:]))
    if not isinstance(new, IRModule):
        raise TypeError(f"pass '{p.name}' returned {type(new).__name__}, not an IRModule")
    for inst in ctx.instruments:
        inst.after_pass(p, mod, new, ctx, run)
    return new


@dataclass(frozen=True)
class Sequential(Pass):
    """Several passes run as one (each still seen by the instruments)."""

    passes: tuple[Pass, ...] = field(default=())

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return deep_call(_run_passes, mod, self.passes, ctx)[0]
