"""Tuned schedules at build time: a function's schedule run with the decisions `tirc tune`
recorded for it (`tirc --tuned FILE` passes them as the pass config `schedule.decisions`, the
`decisions` option of apply-schedules and default-schedule).

Records are keyed by the workload key of the function as scheduling finds it. A function tuned
at several sizes of a symbolic extent (`tirc tune --dim n=1,16,256`) gets one variant per size,
each the schedule run on the symbolic function with that size's decisions (a tile of a symbolic
loop keeps its inner factors; the outer one becomes the guarded remainder), and a run-time
dispatch between them: size `s_k` serves the bucket between the geometric means of its
neighbours (`n <= 4`: the schedule tuned at 1, `n <= 64`: at 16, else at 256).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from tirc.ir.expr import IntImm, PrimExpr, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.schedule import Schedule
from tirc.ir.stmt import IfThenElse, Stmt
from tirc.ir.visitor import post_order_visit
from tirc.passes.schedule.decisions import run_with_decisions
from tirc.passes.schedule.state import ScheduleState


def apply_tuned(func: PrimFunc, sched: Schedule, variants: list[dict[str, Any]],
                new_state: Callable[[PrimFunc], ScheduleState]
                ) -> tuple[PrimFunc, dict[str, PrimFunc]]:
    """`func` scheduled by `sched` with its tuned `variants` (one, or one per tuned size and a
    dispatch between them), each run on a state from `new_state`; also the functions the
    schedule's primitives added."""
    added: dict[str, PrimFunc] = {}

    def run(variant: dict[str, Any]) -> PrimFunc:
        state = new_state(func)
        new = run_with_decisions(func, sched, variant.get("decisions", {}), state=state)[0]
        added.update(state.new_functions)
        return new

    static = [v for v in variants if not v.get("dims")]
    if static or len(variants) == 1:
        return run((static or variants)[0]), added
    return dispatch(func, [(v["dims"], run(v)) for v in variants]), added


def size_var(func: PrimFunc, name: str) -> Var | None:
    """The symbolic size variable called `name` in `func`'s buffer shapes."""
    found: list[Var] = []

    def visit(node: Any) -> None:
        if isinstance(node, Var) and node.name == name and not found:
            found.append(node)

    for buf in func.buffers:
        for dim in buf.shape:
            post_order_visit(dim, visit)
    return found[0] if found else None


def bucket_bounds(sizes: list[int]) -> list[int]:
    """Upper bounds (inclusive) of the buckets of sorted `sizes`, but the last, which is open:
    the floor of the geometric mean of each pair of neighbours."""
    return [max(a, math.isqrt(a * b)) for a, b in zip(sizes, sizes[1:])]


def dispatch(func: PrimFunc, variants: list[tuple[dict[str, int], PrimFunc]]) -> PrimFunc:
    """One function running the variant whose tuned size bucket holds the run-time size.

    Variants are told apart by the first size variable whose tuned sizes differ."""
    names = [k for k in variants[0][0] if len({v[0].get(k) for v in variants}) > 1]
    var = size_var(func, names[0]) if names else None
    if var is None:
        return variants[0][1]
    ordered = sorted(variants, key=lambda v: v[0][var.name])
    bounds = bucket_bounds([v[0][var.name] for v in ordered])
    body: Stmt = ordered[-1][1].body
    for bound, (_, variant) in reversed(list(zip(bounds, ordered))):
        cond: PrimExpr = binop("le", var, IntImm(bound, var.dtype))
        body = IfThenElse(cond, variant.body, body)
    return dataclasses.replace(func, body=body, attrs={**ordered[0][1].attrs, **func.attrs})
