"""Direct calls between loop functions: `tirc.call_prim("name", args...)`, which the frontend
reads from `Module.name(A.data, n)` and the printer writes back that way.

The callee's parameters are storage handles (`A.data`; a buffer parameter takes its data
pointer) and scalars; the call's dtype is the callee's result dtype (void when it returns
nothing). make-entry gives every called function a plain form (`INTERNAL`): the LLVM backend
compiles it to an internal C function, `<ret> name(ptr..., scalars...)`, called directly.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.expr import Call, PrimExpr, StringImm
from tirc.ir.intrinsics import CALL_PRIM
from tirc.ir.visitor import Mutator, post_order_visit

# A loop function compiled as an internal C function with its own parameters (pointers and
# scalars), not exported: a private callee, or the direct-call form of a public one.
INTERNAL = "tirc.internal"


def callee_of(call: Call) -> str | None:
    """The name of the loop function `call` calls directly, or None for another call."""
    if call.op == CALL_PRIM and call.args and isinstance(call.args[0], StringImm):
        return call.args[0].value
    return None


def call_arguments(call: Call) -> tuple[PrimExpr, ...]:
    """The arguments a direct call passes to its callee (without the callee's name)."""
    return call.args[1:]


def called_functions(node: Any) -> list[str]:
    """The names of the loop functions `node` calls directly, in first-call order."""
    found: list[str] = []

    def visit(n: Any) -> None:
        if isinstance(n, Call):
            name = callee_of(n)
            if name is not None and name not in found:
                found.append(name)

    post_order_visit(node, visit)
    return found


class _Rename(Mutator):
    """Direct calls of renamed callees call their new names."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Call(self, c: Call) -> Any:
        new = self.generic_visit(c)
        name = callee_of(new)
        if name in self.names:
            return Call(new.op, (StringImm(self.names[name]), *new.args[1:]), new.dtype,
                        span=new.span)
        return new


def rename_calls(node: Any, names: dict[str, str]) -> Any:
    """`node` with its direct calls of `names`' keys calling the values instead."""
    return _Rename(names).visit(node) if names else node
