"""inline-calls: a graph function calling another graph function directly (`cls.helper(x)`,
as Relax allows) gets the callee's bindings in place of the call.

Each call `y = Module.helper(a, b)` becomes the callee's bindings with its parameters replaced
by the arguments and its variables renamed apart, then `y = <callee's result>`; inside a
dataflow block the callee's variables become dataflow variables. Struct info annotations of
the copied bindings are dropped (normalize infers them again, in the caller's shapes). Calls
to fused `Primitive` functions are left for fuse-tir; a recursive call is an error. A function
the frontend lifted out of another (`tirc.lifted`, a local `@R.function`) is then dropped.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.attrs import LIFTED, PRIMITIVE
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Var
from tirc.ir.graph import (
    Binding,
    BindingBlock,
    Function,
    GCall,
    GVar,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    VarBinding,
    with_branches,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.ops.infer import defined_sizes
from tirc.ir.visitor import substitute
from tirc.passes.graph.normalize import bind_returned_calls
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
        for name, func in mod.graph_funcs().items():
            if func.attrs.get(LIFTED):  # a local function, now inlined where it was called
                out = out.without_function(name)
        return out


def _callee(value: Any, mod: IRModule) -> Function | None:
    if not isinstance(value, GCall):
        return None
    f = mod.functions.get(value.op)
    if isinstance(f, Function) and not f.attrs.get(PRIMITIVE):
        return f
    return None


def inline_function(func: Function, mod: IRModule, stack: tuple[str, ...]) -> Function:
    """`func` with every direct call of a graph function of `mod` inlined (one it returns,
    `return Module.f(x)`, bound to a variable first, as normalize binds it)."""
    body = func.body
    if _returns_a_call(body.body, mod):
        bound, value = bind_returned_calls(func)
        body = body.replace(blocks=tuple(bound), body=value)  # type: ignore
    blocks, changed = _inline_blocks(body.blocks, mod, stack)
    if not changed:
        return func
    return func.replace(body=body.replace(blocks=tuple(blocks)))  # type: ignore


def _returns_a_call(value: Any, mod: IRModule) -> bool:
    """Whether a returned value (a tuple's fields, an item of one) calls a graph function."""
    if isinstance(value, Tuple):
        return any(_returns_a_call(f, mod) for f in value.fields)
    if isinstance(value, TupleGetItem):
        return _returns_a_call(value.tuple_value, mod)
    return _callee(value, mod) is not None


def _inline_blocks(old: tuple[BindingBlock, ...], mod: IRModule, stack: tuple[str, ...]
                   ) -> tuple[list[BindingBlock], bool]:
    """The blocks with their calls inlined (inside the branches of an `if` too), and whether
    anything changed."""
    blocks: list[BindingBlock] = []
    changed = False

    def branch(seq: SeqExpr) -> SeqExpr:
        nonlocal changed
        inner, moved = _inline_blocks(seq.blocks, mod, stack)
        changed |= moved
        return seq.replace(blocks=tuple(inner)) if moved else seq  # type: ignore

    for block in old:
        bindings: list[Binding] = []
        for b in block.bindings:
            b = with_branches(b, branch)
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
    return blocks, changed


def _inlined(b: VarBinding, callee: Function, dataflow: bool) -> list[Binding]:
    call = b.value
    assert isinstance(call, GCall)
    if len(call.args) != len(callee.params):
        raise CompileError(f"inline-calls: '{callee.name}' takes {len(callee.params)} "
                           f"arguments, got {len(call.args)}", b.span)
    mapping: dict[Any, Any] = dict(zip(callee.params, call.args))
    for p, a in zip(callee.params, call.args):  # the callee's sizes are the caller's
        for d, actual in defined_sizes(p.struct_info, a):
            if isinstance(d, Var) and d not in mapping:
                mapping[d] = actual
    out: list[Binding] = []
    for block in callee.body.blocks:
        for inner in block.bindings:
            out.append(_copy(inner, mapping, callee.name, dataflow))
    out.append(VarBinding(b.var, substitute(callee.body.body, mapping), span=b.span))
    return out


def _copy(inner: Binding, mapping: dict[Any, Any], prefix: str, dataflow: bool) -> Binding:
    """A callee's binding with a fresh variable, its uses replaced by `mapping` (an `if`'s
    branches copied the same way, so that two inlined copies share no variable)."""
    var = inner.var
    cast = substitute(inner.struct_info, mapping) if isinstance(inner, MatchCast) else None
    fresh = GVar(f"{prefix}_{var.name}", cast, dataflow, span=var.span)
    value = inner.value  # type: ignore[attr-defined]
    if isinstance(value, If):
        branches = [_copy_seq(s, mapping, prefix) for s in value.branches]
        value = dataclasses.replace(value, cond=substitute(value.cond, mapping),
                                    true_branch=branches[0], false_branch=branches[1])
    else:
        value = substitute(value, mapping)
    mapping[var] = fresh
    if isinstance(inner, MatchCast):
        return dataclasses.replace(inner, var=fresh, value=value, struct_info=cast)
    return VarBinding(fresh, value, span=inner.span)


def _copy_seq(seq: SeqExpr, mapping: dict[Any, Any], prefix: str) -> SeqExpr:
    """A branch of a callee's `if`, copied with fresh variables."""
    blocks = []
    for block in seq.blocks:
        bindings = tuple(_copy(b, mapping, prefix, b.var.is_dataflow) for b in block.bindings)
        outputs = tuple(mapping.get(v, v) for v in block.outputs)
        blocks.append(dataclasses.replace(block, bindings=bindings, outputs=outputs))
    return SeqExpr(tuple(blocks), substitute(seq.body, mapping), span=seq.span)
