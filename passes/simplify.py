"""simplify: fold and canonicalise every expression of a loop function, using loop ranges.

Walking down the body, an Analyzer learns each loop variable's range, each block iteration
variable's domain, each let's value, and each branch's condition; every expression is
simplified with that knowledge (`tirc.ir.arith`). Symbolic buffer dimensions of the parameters
are known to be nonnegative. Statements then fold:
- `if` with a provable condition keeps one branch; an `assert` that provably holds goes;
- a block whose predicate is provably false, a `while` whose condition is false, and a loop
  with no iterations (or an empty body) go;
- with `remove-unit-loops` (the default), a serial, unrolled, vectorized or parallel loop of
  extent 1 without annotations is replaced by its body with the loop variable set to the
  loop's minimum (thread bindings always stay).
"""

from __future__ import annotations

from tirc.ir.arith.stmt import StmtSimplifier, analyzer_for
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.passes.pass_base import PassContext, PrimFuncPass, option


@dataclass(frozen=True)
class Simplify(PrimFuncPass):
    """Simplify every expression with loop-range knowledge and fold dead statements."""

    name = "simplify"
    description = "fold constants, canonicalise index arithmetic with loop ranges, drop dead code"
    optional = True  # an optimisation (see Pass.optional)

    remove_unit_loops: bool = option(True, doc="replace loops of extent 1 by their body")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        simplifier = StmtSimplifier(analyzer_for(func), self.remove_unit_loops)
        body = simplifier.visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
