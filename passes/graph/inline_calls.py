"""inline-calls: a graph function calling another graph function directly (`cls.helper(x)`,
as Relax allows) gets the callee's bindings in place of the call.

Each call `y = Module.helper(a, b)` becomes the callee's bindings with its parameters replaced
by the arguments and its variables renamed apart, then `y = <callee's result>`; inside a
dataflow block the callee's variables become dataflow variables. Struct info annotations of
the copied bindings are dropped (normalize infers them again, in the caller's shapes). Calls
to fused `Primitive` functions are left for fuse-tir; a recursive call is an error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tirc.ir.attrs import PRIMITIVE
from tirc.ir.diagnostics import CompileError
from tirc.ir.graph import Binding, BindingBlock, Function, GCall, GVar, MatchCast, VarBinding
from tirc.ir.module import IRModule
from tirc.ir.visitor import substitute
from tirc.passes.pass_base import Pass, PassContext


@dataclass(frozen=True)
class InlineCalls(Pass):
    """Direct calls between graph functions replaced by the callee's bindings."""

    name = "inline-calls"
    description = "inline direct calls of one graph function from another"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for name, func in mod.graph_funcs().items():
            new = inline_function(func, mod, (name,))
            if new is not func:
                out = out.with_function(name, new)
        return out


def _callee(value: Any, mod: IRModule) -> Function | None:
    if not isinstance(value, GCall):
        return None
    f = mod.functions.get(value.op)
    if isinstance(f, Function) and not f.attrs.get(PRIMITIVE):
        return f
    return None


def inline_function(func: Function, mod: IRModule, stack: tuple[str, ...]) -> Function:
    """`func` with every direct call of a graph function of `mod` inlined."""
    blocks: list[BindingBlock] = []
    changed = False
    for block in func.body.blocks:
        bindings: list[Binding] = []
        for b in block.bindings:
            callee = _callee(b.value, mod) if isinstance(b, VarBinding) else None
            if callee is None:
                bindings.append(b)
                continue
            if callee.name in stack:
                raise CompileError(f"inline-calls: '{callee.name}' calls itself "
                                   f"({' -> '.join(stack + (callee.name,))})", b.span)
            callee = inline_function(callee, mod, stack + (callee.name,))
            bindings.extend(_inlined(b, callee, block.is_dataflow))
            changed = True
        blocks.append(dataclasses.replace(block, bindings=tuple(bindings)))
    if not changed:
        return func
    return func.replace(body=func.body.replace(blocks=tuple(blocks)))  # type: ignore


def _inlined(b: VarBinding, callee: Function, dataflow: bool) -> list[Binding]:
    call = b.value
    assert isinstance(call, GCall)
    if len(call.args) != len(callee.params):
        raise CompileError(f"inline-calls: '{callee.name}' takes {len(callee.params)} "
                           f"arguments, got {len(call.args)}", b.span)
    mapping: dict[Any, Any] = dict(zip(callee.params, call.args))
    out: list[Binding] = []
    for block in callee.body.blocks:
        for inner in block.bindings:
            var = inner.var
            fresh = GVar(f"{callee.name}_{var.name}",
                         inner.struct_info if isinstance(inner, MatchCast) else None,
                         dataflow, span=var.span)
            value = substitute(inner.value, mapping)
            if isinstance(inner, MatchCast):
                out.append(dataclasses.replace(inner, var=fresh, value=value))
            else:
                out.append(VarBinding(fresh, value, span=inner.span))
            mapping[var] = fresh
    out.append(VarBinding(b.var, substitute(callee.body.body, mapping), span=b.span))
    return out
