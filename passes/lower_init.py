"""lower-init: a block's `init` becomes an `if` on its first reduction iteration.

As TVM's LowerInitBlock: `with T.init(): S` in a block with reduction iteration variables
`vk, vl` becomes `if vk == kmin and vl == lmin: S` at the head of the block body, and the
`init` field is cleared. A block with an `init` but no reduction variable runs `S` every time,
so it is prepended unconditionally. The meaning is unchanged (the interpreter runs `init` on
exactly that condition).
"""

from __future__ import annotations

from tirc.ir.expr import PrimExpr, binop
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import Block, IfThenElse, IterKind, seq
from tirc.ir.visitor import Mutator
from tirc.passes.pass_base import PassContext, PrimFuncPass


def first_reduction_iteration(block: Block) -> PrimExpr | None:
    """`vk == kmin and ...` over the block's reduction variables; None when it has none."""
    cond: PrimExpr | None = None
    for iv in block.iter_vars:
        if iv.kind == IterKind.REDUCE:
            test = binop("eq", iv.var, iv.dom.min)
            cond = test if cond is None else binop("and", cond, test)
    return cond


class _LowerInit(Mutator):
    def visit_Block(self, block: Block) -> Block:
        block = self.generic_visit(block)
        if block.init is None:
            return block
        cond = first_reduction_iteration(block)
        init = block.init if cond is None else IfThenElse(cond, block.init, None)
        return block.replace(body=seq(init, block.body), init=None)  # type: ignore[return-value]


@dataclass(frozen=True)
class LowerInit(PrimFuncPass):
    """Turn every block `init` into a guarded statement at the start of the block body."""

    name = "lower-init"
    description = "turn each block's init into an `if` on its first reduction iteration"

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _LowerInit().visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
