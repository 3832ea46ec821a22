"""The tensor operands of a graph call, found and replaced by position.

For an operator, its `tensor` and `tensors` parameters in order (a tuple argument gives each
of its fields); for `R.call_tir`/`R.call_dps_packed`, the tensors of the argument tuple.
Replacing by position (not by variable) keeps `R.matmul(x, x)` with two different needs
right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tirc.ir.graph import GCall, GraphExpr, PrimSInfo, StructInfo, TensorSInfo, Tuple
from tirc.ir.ops.registry import bound_call

OPAQUE = ("call_tir", "call_tir_inplace", "call_dps_packed")
Slot = tuple[int, int | None]


def _slots(call: GCall, sinfo_of: Callable[[GraphExpr], StructInfo], module: Any) -> list[Slot]:
    """(argument index, tuple field index or None) of each tensor operand."""
    if call.op in OPAQUE:
        if len(call.args) < 2:
            return []
        packed = call.args[1]
        if isinstance(packed, Tuple):
            return [(1, j) for j, f in enumerate(packed.fields)
                    if isinstance(sinfo_of(f), TensorSInfo)]
        return [(1, None)] if isinstance(sinfo_of(packed), TensorSInfo) else []
    oc = bound_call(call, sinfo_of, module)
    graph = [p for p in oc.op.params if p.is_graph and p.name in oc.given]
    out: list[Slot] = []
    for k, p in enumerate(graph):
        if k >= len(call.args):
            break
        arg = call.args[k]
        if p.kind == "tensor" and not isinstance(sinfo_of(arg), PrimSInfo):  # R.Prim: no placement
            out.append((k, None))
        elif p.kind == "tensors" and isinstance(arg, Tuple):
            out.extend((k, j) for j in range(len(arg.fields)))
    return out


def operand_exprs(call: GCall, sinfo_of: Callable[[GraphExpr], StructInfo],
                  module: Any = None) -> list[GraphExpr]:
    """The tensor operands of `call`, in order."""
    out = []
    for k, j in _slots(call, sinfo_of, module):
        arg = call.args[k]
        out.append(arg.fields[j] if j is not None and isinstance(arg, Tuple) else arg)
    return out


def with_operands(call: GCall, values: Sequence[GraphExpr],
                  sinfo_of: Callable[[GraphExpr], StructInfo], module: Any = None) -> GCall:
    """`call` with its tensor operands replaced, in order, by `values`."""
    args = list(call.args)
    for (k, j), v in zip(_slots(call, sinfo_of, module), values):
        if j is None:
            args[k] = v
        else:
            tup = args[k]
            assert isinstance(tup, Tuple)
            fields = list(tup.fields)
            fields[j] = v
            args[k] = Tuple(tuple(fields), span=tup.span)
    if all(a is b for a, b in zip(args, call.args)):
        return call
    return GCall(call.op, tuple(args), call.attrs, call.sinfo_args, span=call.span)
