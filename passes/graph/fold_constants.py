"""fold-constants: evaluate at compile time what depends on constants only.

A call whose tensor arguments are all scalar constants (`R.const`) and whose result is a
scalar is run by the reference interpreter and replaced by `R.const(value)`; later uses see the
constant, so chains fold. `R.shape_of(x)` of a tensor of known shape becomes `R.shape([...])`.
The folded bindings stay for dead-code-elim to remove.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.graph import (
    BindingBlock,
    Constant,
    Function,
    GCall,
    GraphExpr,
    GVar,
    SeqExpr,
    ShapeExpr,
    TensorSInfo,
    Tuple,
    VarBinding,
    with_branches,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.ops.sinfo_util import ndim_of
from tirc.ir.visitor import substitute
from tirc.passes.pass_base import Pass, PassContext

_FOLD_FUNC = "__fold_constants"


@dataclass(frozen=True)
class FoldConstants(Pass):
    """Scalar computations on constants -> constants."""

    name = "fold-constants"
    description = "evaluate calls on scalar constants and shapes known at compile time"
    optional = True  # an optimisation (see Pass.optional)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for name, func in mod.graph_funcs().items():
            new = fold_function(func, mod)
            if new is not func:
                out = out.with_function(name, new)
        return out


def _constant_args(call: GCall) -> bool:
    """True when no argument of `call` is a variable (constants, shapes, callees only)."""
    def const(a: GraphExpr) -> bool:
        if isinstance(a, Tuple):
            return all(const(f) for f in a.fields)
        return not isinstance(a, GVar)

    return call.op != "call_dps_packed" and all(const(a) for a in call.args)


def _evaluate(call: GCall, out: GVar, mod: IRModule) -> Any:
    from tirc.ir.interpreter import Interpreter

    var = GVar(name="folded", struct_info=out.struct_info)
    func = Function(_FOLD_FUNC, (), SeqExpr((BindingBlock((VarBinding(var, call),)),), var))
    return Interpreter(mod.with_function(_FOLD_FUNC, func)).call(_FOLD_FUNC)


def fold_value(call: GCall, var: GVar, mod: IRModule) -> GraphExpr | None:
    """The constant a binding folds to, or None."""
    s = var.struct_info
    if call.op == "shape_of" and call.args and isinstance(call.args[0], GVar):
        xs = call.args[0].struct_info
        if isinstance(xs, TensorSInfo) and xs.shape is not None:
            return ShapeExpr(xs.shape)
        return None
    if not isinstance(s, TensorSInfo) or ndim_of(s) != 0 or s.dtype is None:
        return None
    if not _constant_args(call):
        return None
    import numpy as np  # only when a call has constant arguments

    value = np.asarray(_evaluate(call, var, mod))
    return Constant(value.item(), s.dtype)


def fold_function(func: Function, mod: IRModule) -> Function:
    """`func` with constant bindings folded into their uses."""
    blocks, changed = _fold_blocks(func.body.blocks, {}, mod)
    if not changed:
        return func
    body = dataclasses.replace(func.body, blocks=tuple(blocks))
    return dataclasses.replace(func, body=body)


def _fold_blocks(old: tuple[BindingBlock, ...], mapping: dict[GVar, GraphExpr],
                 mod: IRModule) -> tuple[list[BindingBlock], bool]:
    """The blocks with constant bindings folded into their uses (inside the branches of an
    `if` too), and whether anything changed."""
    blocks = []
    changed = False

    def branch(seq: SeqExpr) -> SeqExpr:
        nonlocal changed
        inner, moved = _fold_blocks(seq.blocks, mapping, mod)
        body = substitute(seq.body, mapping)
        if not moved and body is seq.body:
            return seq
        changed = True
        return dataclasses.replace(seq, blocks=tuple(inner), body=body)

    for block in old:
        bindings = []
        for b in block.bindings:
            b = with_branches(b, branch)
            value = substitute(b.value, mapping)  # type: ignore[attr-defined]
            if isinstance(b, VarBinding) and isinstance(value, GCall):
                folded = fold_value(value, b.var, mod)
                if folded is not None:
                    mapping[b.var] = folded
                    value = folded
            if value is not b.value:  # type: ignore[attr-defined]
                b = dataclasses.replace(b, value=value)
                changed = True
            bindings.append(b)
        blocks.append(dataclasses.replace(block, bindings=tuple(bindings)))
    return blocks, changed
