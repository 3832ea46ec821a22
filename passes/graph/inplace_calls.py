"""Which `R.call_tir_inplace` calls may write their argument's storage itself, with no copy.

legalize-ops compiles an in-place call as a wrapper that copies the argument into the output
first (value semantics: the argument keeps its value). Where nothing can see the argument
after the call, the copy is waste: a call of one output written over argument `x` is marked
`in_place=True` (printed so, and parsed back) and left to lower-graph, which runs the loop
function on `x`'s own buffer; memory-plan makes the result share `x`'s storage. `x` must be
a tensor the function computes (bound to a call, not a parameter the caller still owns, nor
an alias or a view of another value) and used by this call alone: nothing else in the
function names it, the return included.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from tirc.ir.function import PrimFunc
from tirc.ir.graph import Function, GCall, GlobalVar, GVar, TensorSInfo, Tuple, VarBinding
from tirc.ir.module import IRModule
from tirc.ir.visitor import Mutator, post_order_visit

IN_PLACE = "in_place"  # the call's attribute: it writes its argument's storage


def mark_in_place(func: Function, mod: IRModule) -> Function:
    """`func` with each call_tir_inplace that may write its argument in place marked."""
    occurrences: Counter[GVar] = Counter()
    bound: dict[GVar, object] = {}

    def visit(n: object) -> None:
        if isinstance(n, GVar):
            occurrences[n] += 1
        elif isinstance(n, VarBinding):
            bound[n.var] = n.value

    post_order_visit(func.body, visit)
    params = set(func.params)
    marked: dict[int, GCall] = {}
    for value in bound.values():
        if isinstance(value, GCall) and _eligible(value, mod, params, bound, occurrences):
            marked[id(value)] = dataclasses.replace(value, attrs={**value.attrs, IN_PLACE: True})
    if not marked:
        return func
    return dataclasses.replace(func, body=_Replace(marked).visit(func.body))


def _eligible(call: GCall, mod: IRModule, params: set[GVar], bound: dict[GVar, object],
              occurrences: Counter[GVar]) -> bool:
    """Whether `call` writes one argument that nothing sees after it (see the module doc)."""
    if call.op != "call_tir_inplace" or call.attrs.get(IN_PLACE):
        return False
    indices = tuple(call.attrs.get("inplace_indices", ()))
    callee = call.args[0]
    if len(indices) != 1 or indices[0] < 0 or not isinstance(call.args[1], Tuple) or \
            not isinstance(callee, GlobalVar) or \
            not isinstance(mod.functions.get(callee.name), PrimFunc):
        return False
    fields = call.args[1].fields
    if indices[0] >= len(fields):
        return False
    x = fields[indices[0]]
    return isinstance(x, GVar) and x not in params and \
        isinstance(x.struct_info, TensorSInfo) and isinstance(bound.get(x), GCall) and \
        occurrences[x] == 2  # its binding and this argument


class _Replace(Mutator):
    """Swaps the marked calls in (by identity)."""

    def __init__(self, marked: dict[int, GCall]) -> None:
        super().__init__()
        self.marked = marked

    def visit(self, node: object) -> object:  # type: ignore[override]
        new = self.marked.get(id(node))
        return new if new is not None else super().visit(node)
