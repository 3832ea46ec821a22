"""Tuning tasks: the functions of a module whose schedules have decisions to search.

A task is one function at one set of sizes: its workload key (of the function as a build's
scheduling finds it, so `--tuned` finds the record again), its space, and its work (floating-
point operations and bytes of its parameters, for GFLOP/s and GB/s). The spaces: every
`@S.schedule` for the target with a `sample_*` instruction in it (the user's own), and every
function the default schedule rules schedule, as the default-schedule step finds it (after the
graph functions are legalized and fused; tune/rules_space.py). A function with a symbolic size
is a task per size given with `--dim` (the function specialised to that size).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import IntImm, Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.schedule.apply import matches, target_kind
from tirc.passes.schedule.decisions import SAMPLERS, workload_key
from tirc.passes.schedule.tensor_intrin import collect_intrinsics
from tirc.tune.features import workload_cost
from tirc.tune.records import task_id
from tirc.tune.space import ScheduleSpace, Space


@dataclass
class Task:
    """One function at one set of sizes, and the space of its schedule."""

    name: str
    workload: str
    dims: dict[str, int]
    space: Space
    target: str
    flops: float
    bytes: float

    @property
    def id(self) -> str:
        return task_id(self.workload, self.target, self.dims)

    @property
    def label(self) -> str:
        if not self.dims:
            return self.name
        return f"{self.name}[{','.join(f'{k}={v}' for k, v in self.dims.items())}]"

    @property
    def compute_bound(self) -> bool:
        """Whether GFLOP/s (rather than GB/s) is its figure: 4+ operations per byte."""
        return self.flops >= 4 * self.bytes


def size_vars(func: PrimFunc) -> dict[str, Var]:
    """The symbolic sizes in the shapes of `func`'s buffers, by name."""
    found: dict[str, Var] = {}

    def visit(node: Any) -> None:
        if isinstance(node, Var):
            found.setdefault(node.name, node)

    for buf in func.buffers:
        for dim in buf.shape:
            post_order_visit(dim, visit)
    return found


def specialize(func: PrimFunc, sizes: dict[str, int]) -> PrimFunc:
    """`func` with the named symbolic sizes replaced by constants, in shapes and body."""
    names = size_vars(func)
    mapping: dict[Any, Any] = {names[k]: IntImm(v, names[k].dtype)
                               for k, v in sizes.items() if k in names}
    if not mapping:
        return func
    buffers: list[Buffer] = []
    post_order_visit(func, lambda n: buffers.append(n)
                     if isinstance(n, Buffer) and all(n is not b for b in buffers) else None)
    for b in buffers:
        mapping[b] = dataclasses.replace(
            b, shape=tuple(substitute(d, mapping) for d in b.shape),
            strides=tuple(substitute(d, mapping) for d in b.strides))
    return substitute(func, mapping)


def _size_sets(func: PrimFunc, dims: dict[str, list[int]]) -> list[dict[str, int]]:
    names = [k for k in size_vars(func) if k in dims]
    if not names:
        return [{}]
    return [dict(zip(names, combo)) for combo in itertools.product(*(dims[k] for k in names))]


def extract_tasks(mod: IRModule, target: str, dims: dict[str, list[int]],
                  opt_level: int = 2, rules: bool = True) -> list[Task]:
    """The tasks of `mod` for `target`: functions whose own schedules sample decisions, then
    (with `rules`) those the default schedule rules schedule."""
    kind = target_kind(target)
    intrinsics = collect_intrinsics(mod)
    tasks: list[Task] = []
    own: set[str] = set()
    for sched in mod.schedules:
        if not matches(sched, kind):
            continue
        own.add(sched.func_name)
        func = mod.functions.get(sched.func_name)
        if not isinstance(func, PrimFunc) or not any(i.prim in SAMPLERS for i in sched.instrs):
            continue
        tasks += _sized(func, target, dims,
                        lambda f, s=sched: ScheduleSpace(f, s, intrinsics))  # type: ignore
    if rules and kind == "llvm":
        from tirc.passes.schedule_rules.api import prepare, wants_default_schedule
        from tirc.tune.rules_space import RulesSpace

        rest = mod.replace(schedules=tuple(s for s in mod.schedules  # type: ignore[arg-type]
                                           if not matches(s, kind)))
        for func in prepare(rest, target, max(opt_level, 1)).prim_funcs().values():
            if func.name not in own and wants_default_schedule(func):
                tasks += _sized(func, target, dims, lambda f: RulesSpace(f, target))
    return tasks


def _sized(func: PrimFunc, target: str, dims: dict[str, list[int]],
           space: Callable[[PrimFunc], Space]) -> list[Task]:
    """One task per set of sizes of `func`'s symbolic extents."""
    key = workload_key(func)
    out = []
    for sizes in _size_sets(func, dims):
        concrete = specialize(func, sizes)
        missing = list(size_vars(concrete))
        if missing:
            raise CompileError(f"function \"{func.name}\" has the symbolic size "
                               f"'{missing[0]}': give the sizes to tune at with "
                               f"--dim {missing[0]}=N[,N...]")
        flops, nbytes = workload_cost(concrete)
        out.append(Task(func.name, key, sizes, space(concrete), target, flops, nbytes))
    return out
