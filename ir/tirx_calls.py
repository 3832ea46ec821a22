"""`R.call_tir(..., tir_vars=R.shape([...]))` as TVM 0.27 reads it (the tirx printer's form).

TVM 0.27's `R.call_tir(gvar, args, out_ty=...)` has no `tir_vars`: its `args` are the tensor and
primitive arguments, matched positionally to the leading parameters of the loop function, the
outputs following. So the tirx printer writes a call with shape values as
`R.call_tir(cls.f, (x, R.prim_value(64)), out_ty=...)` and prints `f` with those size
parameters moved from the end of its parameters to just before its outputs. tirc matches the
tensors to the buffer parameters and the values to the scalar parameters, each in order, so
the printed module means the same. Only a private function all of whose uses are such calls
(a tuple of tensors, then the shape values) is moved; any other keeps `tir_vars=`.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.expr import Call, StringImm
from tirc.ir.function import PrimFunc
from tirc.ir.graph import Function, GCall, GlobalVar, PrimValue, ShapeExpr, Tuple
from tirc.ir.intrinsics import CALL_PRIM
from tirc.ir.module import IRModule
from tirc.ir.visitor import post_order_visit

TIR_CALLS = ("call_tir", "call_tir_inplace")


def movable_call(e: GCall) -> bool:
    """A call_tir whose shape values can join its argument tuple: a tuple of tensors (no
    `R.prim_value` already) and a shape of values."""
    return (e.op in TIR_CALLS and len(e.args) == 3 and isinstance(e.args[1], Tuple)
            and isinstance(e.args[2], ShapeExpr)
            and not any(isinstance(a, PrimValue) for a in e.args[1].fields))


def moved_size_params(mod: IRModule) -> dict[str, int]:
    """For each private loop function to print with its trailing size parameters moved: the
    position they move to (the number of tensor arguments of its calls)."""
    at: dict[str, int | None] = {}
    callees: set[int] = set()
    others: set[str] = set()

    def visit_call(n: Any) -> None:
        if isinstance(n, GCall) and n.op in TIR_CALLS and n.args and \
                isinstance(n.args[0], GlobalVar):
            name = n.args[0].name
            callees.add(id(n.args[0]))
            where = len(n.args[1].fields) if movable_call(n) else None  # type: ignore[union-attr]
            at[name] = where if at.get(name, where) == where else None

    def visit_ref(n: Any) -> None:
        if isinstance(n, GlobalVar) and id(n) not in callees:
            others.add(n.name)  # any other use: a direct call, a reference

    graphs = [f for f in mod.functions.values() if isinstance(f, Function)]
    for f in mod.functions.values():  # a loop function calling another one directly
        if isinstance(f, PrimFunc):
            post_order_visit(f.body, lambda n: others.add(n.args[0].value)
                             if isinstance(n, Call) and n.op == CALL_PRIM and n.args
                             and isinstance(n.args[0], StringImm) else None)
    for f in graphs:
        post_order_visit(f.body, visit_call)
    for f in graphs:
        post_order_visit(f.body, visit_ref)
    out: dict[str, int] = {}
    for name, where in at.items():
        f = mod.functions.get(name)
        if where is None or name in others or not isinstance(f, PrimFunc) or not f.private:
            continue
        kinds = [p in f.buffer_map for p in f.params]
        first_scalar = kinds.index(False) if False in kinds else len(kinds)
        if any(kinds[first_scalar:]) or first_scalar == len(kinds) or where > first_scalar:
            continue  # sizes not all after the buffers, or no sizes
        out[name] = where
    return out


def with_sizes_moved(f: PrimFunc, where: int) -> PrimFunc:
    """`f` with its trailing scalar parameters moved to position `where`."""
    buffers = [p for p in f.params if p in f.buffer_map]
    scalars = [p for p in f.params if p not in f.buffer_map]
    return f.replace(params=(*buffers[:where], *scalars, *buffers[where:]))  # type: ignore[return-value]
