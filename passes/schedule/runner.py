"""Running a schedule: each instruction's arguments resolved, its primitive called, its
results bound to names; a primitive that cannot apply becomes a diagnostic at its line."""

from __future__ import annotations

import difflib
import inspect
from typing import Any

from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.function import PrimFunc
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.schedule import SchedInstr, SchedRef, Schedule
from tirc.passes.schedule.primitives import PRIMITIVES
from tirc.passes.schedule.sparse import PRIMITIVES as SPARSE_PRIMITIVES
from tirc.passes.schedule.sparse import has_sparse_iterations
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.sparse.lower_sparse_iterations import lower_sparse

# Primitives that only look (they never change the function).
READ_ONLY = frozenset({"get_block", "get_loops", "get_child_blocks", "sample_perfect_tile",
                       "sample_categorical"})


def _resolve(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, SchedRef):
        if value.name not in env:
            raise ScheduleError(f"unknown name '{value.name}'")
        return env[value.name]
    if isinstance(value, list):
        return [_resolve(v, env) for v in value]
    if isinstance(value, tuple):
        return tuple(_resolve(v, env) for v in value)
    if isinstance(value, dict):
        return {k: _resolve(v, env) for k, v in value.items()}
    return value


def execute(state: ScheduleState, env: dict[str, Any], ins: SchedInstr) -> Any:
    """Run one instruction on `state`, binding its outputs in `env`; returns its result."""
    fn, bound = bind_call(state, env, ins)
    result = fn(*bound.args, **bound.kwargs)
    bind_outputs(ins, result, env)
    return result


def bind_call(state: ScheduleState, env: dict[str, Any],
              ins: SchedInstr) -> tuple[Any, inspect.BoundArguments]:
    """The primitive `ins` calls and its arguments, resolved in `env` and bound to its
    parameters (defaults filled in), ready to call or to inspect first."""
    fn = PRIMITIVES.get(ins.prim)
    if fn is None:
        close = difflib.get_close_matches(ins.prim, list(PRIMITIVES), n=1)
        hint = f"; did you mean \"{close[0]}\"?" if close else ""
        raise ScheduleError(f"unknown schedule primitive \"{ins.prim}\"{hint}")
    if ins.prim not in READ_ONLY and contains_loop_jump(state.body):
        raise ScheduleError(f"{ins.prim}: function \"{state.name}\" breaks or continues a "
                            "loop; schedule primitives do not transform such functions (a "
                            "jump ties its loop's iterations together)")
    if ins.prim not in SPARSE_PRIMITIVES and has_sparse_iterations(state):
        # loop primitives act on the lowered loops
        state.func = lower_sparse(state.func, state.check_sparse_arrays)
    args = [_resolve(a, env) for a in ins.args]
    kwargs = {k: _resolve(v, env) for k, v in ins.kwargs.items()}
    try:
        bound = inspect.signature(fn).bind(state, *args, **kwargs)
    except TypeError as e:
        raise ScheduleError(f"{ins.prim}: {e}") from None
    bound.apply_defaults()
    return fn, bound


def bind_outputs(ins: SchedInstr, result: Any, env: dict[str, Any]) -> None:
    """Bind the names `ins` assigns (`a = ...` or `a, b = ...`) to what its primitive returned."""
    if not ins.outputs:
        return
    if result is None:
        raise ScheduleError(f"{ins.prim} returns nothing to assign to "
                            f"{', '.join(ins.outputs)}")
    if not ins.unpack:
        env[ins.outputs[0]] = result
        return
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != len(ins.outputs):
        raise ScheduleError(f"{ins.prim} returns {len(values)} "
                            f"{'value' if len(values) == 1 else 'values'}, but "
                            f"{len(ins.outputs)} names are assigned")
    for name, value in zip(ins.outputs, values):
        env[name] = value


def run_schedule(func: PrimFunc, sched: Schedule, seed: int = 0,
                 intrinsics: dict[str, dict[str, PrimFunc]] | None = None,
                 state: ScheduleState | None = None) -> PrimFunc:
    """`func` transformed by every instruction of `sched`; CompileError at the first
    instruction that cannot apply."""
    state = state or ScheduleState(func, seed, intrinsics)
    env: dict[str, Any] = {}
    for ins in sched.instrs:
        try:
            execute(state, env, ins)
        except ScheduleError as e:
            raise CompileError(Diagnostic("error", str(e), ins.span or sched.span)) from None
    return state.func
