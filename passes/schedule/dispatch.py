"""dispatch: choose at run time between a variant of the function for one value of a size and
the general one.

`sch.dispatch("n", 1)` turns the body of the function's root block into

    if n == 1:
        with T.block("n_eq_1"):      # the body with n replaced by 1, blocks renamed *_n1
            ...
    else:
        with T.block("n_ne_1"):      # the body as it was
            ...

so that later primitives schedule each variant on its own (each is a scope of its own): a
matmul whose batch `n` is 1 at run time runs a matrix-vector schedule, any other batch the
tiled one, from one build. The meaning is unchanged by construction: the specialised copy runs
only when `n` has the value it was specialised for. `n` must be a size variable of a
parameter's shape, or an integer scalar parameter. Each variant allocates its own copy of the
root block's intermediate buffers (the special one with `n` replaced in their shapes).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.attrs import VARIANT
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, Var, binop, const
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import Block, BlockRealize, IfThenElse, Stmt
from tirc.ir.visitor import Mutator, substitute
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.schedule.tree import all_block_names, fresh_copy

PRIM = "dispatch"


def size_var(s: ScheduleState, name: Any) -> Var:
    """The integer size variable or scalar parameter of the function called `name`."""
    if not isinstance(name, str):
        raise ScheduleError(f"{PRIM}: the variable is given by its name, a string")
    found: dict[str, Var] = {}
    for p in s.func.params:
        if p not in s.func.buffer_map and p.dtype.is_int:
            found.setdefault(p.name, p)
    for buf in s.func.buffer_map.values():
        for v in used_vars(buf.shape):
            if v.dtype.is_int:
                found.setdefault(v.name, v)
    if name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise ScheduleError(f"{PRIM}: \"{name}\" is not a size variable or integer scalar "
                            f"parameter of function \"{s.name}\" (it has: {known})")
    return found[name]


class _Rename(Mutator):
    """Every block renamed with a suffix."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def visit_Block(self, b: Block) -> Any:
        b = self.generic_visit(b)
        return dataclasses.replace(b, name=f"{b.name}{self.suffix}")


def dispatch(s: ScheduleState, var: Any, value: Any) -> None:
    """Split the root block's body into a variant for `var == value` and the general one."""
    v = size_var(s, var)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(f"{PRIM}: the value must be an integer, got {value!r}")
    if value < 0 and v in {d for b in s.func.buffer_map.values() for d in b.shape}:
        raise ScheduleError(f"{PRIM}: {var} is a size; it is never {value}")
    body = s.body
    if not (isinstance(body, BlockRealize) and body.block.name == "root"):
        body = BlockRealize((), IntImm(1, BOOL), Block("root", (), (), (), body))
    root = body.block
    suffix = f"_{var}{value}" if value >= 0 else f"_{var}m{-value}"
    names = all_block_names(root.body)
    clash = sorted(n for n in names if f"{n}{suffix}" in names)
    if clash:
        raise ScheduleError(f"{PRIM}: block \"{clash[0]}{suffix}\" exists already")
    tag = f"{var}_eq_{value}" if value >= 0 else f"{var}_eq_m{-value}"
    other = tag.replace("_eq_", "_ne_")
    for name in (tag, other):
        if name in names:
            raise ScheduleError(f"{PRIM}: block \"{name}\" exists already")
    value_e = const(value, v.dtype)
    # Each variant allocates its own intermediates (the special one with `var` replaced).
    copies = {}
    for b in root.alloc_buffers:
        name = f"{b.name}{suffix}"
        copies[b] = dataclasses.replace(b, name=name, data=Var(name, b.data.dtype),
                                        shape=substitute(b.shape, {v: value_e}),
                                        strides=substitute(b.strides, {v: value_e}))
    special = _Rename(suffix).visit(substitute(fresh_copy(root.body), {v: value_e, **copies}))
    true = IntImm(1, BOOL)
    cond = binop("eq", v, const(value, v.dtype))
    branch: Stmt = IfThenElse(
        cond,
        BlockRealize((), true, Block(tag, (), (), (), special,
                                     alloc_buffers=tuple(copies.values()),
                                     annotations={VARIANT: f"{var} == {value}"})),
        BlockRealize((), true, Block(other, (), (), (), root.body,
                                     alloc_buffers=root.alloc_buffers,
                                     annotations={VARIANT: f"{var} != {value}"})))
    s.set_body(dataclasses.replace(body, block=dataclasses.replace(root, body=branch,
                                                                   alloc_buffers=())))
