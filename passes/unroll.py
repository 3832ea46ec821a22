"""unroll: `T.unroll` loops of constant extent become copies of their body.

Each copy has the loop variable replaced by its value (`min + k`), its integer constants
folded and the `if`s whose condition became a constant reduced to the branch taken (so the
`if k == 0:` of a reduction's init stays in the first copy only); the `simplify` pass after
`unroll` in every pipeline simplifies the copies with the loops' ranges. Variables and buffers
defined inside the body are renewed in every copy, so no definition appears twice.
Inner loops are unrolled before outer ones.

Left as loops, marked for LLVM: an unroll loop whose extent is symbolic, or a constant larger
than the option `max-extent` (`unroll{max-extent=N}`, or `--pass-config unroll.max-extent=N`;
default 64), becomes a serial loop with the
annotation `"pragma_unroll": True`, which the LLVM backend turns into `llvm.loop.unroll.enable`
metadata for a constant extent (LLVM then unrolls as far as its cost model allows) and into an
unroll count of 4 for a symbolic one (runtime unrolling, which LLVM honours). So does an
unroll loop whose body breaks or continues it (tirc.ir.loop_jumps): a copy of the body has no
loop to jump in. An unroll loop of extent 0 or less disappears.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir.arith import Analyzer, construct
from tirc.ir.attrs import PRAGMA_UNROLL
from tirc.ir.expr import IntImm, cast, const
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import escaping_loop_jumps
from tirc.ir.module import IRModule
from tirc.ir.rebind import fresh_copy
from tirc.ir.stmt import Evaluate, For, ForKind, IfThenElse, SeqStmt, Stmt, seq
from tirc.ir.visitor import Mutator, any_node
from tirc.passes.pass_base import PassContext, PrimFuncPass, at_least, option


def unrolled_copies(loop: For, analyzer: Analyzer | None = None) -> Stmt:
    """The body of a constant-extent loop repeated once per iteration, with the loop variable's
    value folded into each copy. An `if` whose condition becomes a constant (`analyzer`, knowing
    no bounds, decides it) keeps only its taken branch. The rest of a copy is left for the
    `simplify` pass that follows `unroll` in every pipeline: it sees the loops' ranges, and
    simplifying each copy here as well cost more than half of this pass's time."""
    assert isinstance(loop.extent, IntImm)
    v = loop.loop_var
    lo = cast(v.dtype, loop.min)
    # Only an `if` or an evaluated expression can be pruned; a body with neither (no copy gets
    # one) is kept whole without walking each copy again.
    prune = any_node(loop.body, lambda n: isinstance(n, (IfThenElse, Evaluate)))
    pruner = _ConstantIfPruner(analyzer or Analyzer())
    copies = []
    for k in range(loop.extent.value):
        value = construct.add(lo, const(k, v.dtype))
        copy = construct.fold(fresh_copy(loop.body, {v: value}))
        copies.append(pruner.visit(copy) if prune else copy)
    if not copies:
        return Evaluate(IntImm(0), span=loop.span)
    return seq(*copies)


class _ConstantIfPruner(Mutator):
    """Keeps only the taken branch of an `if` whose condition simplifies to a constant."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer

    def visit_IfThenElse(self, s: IfThenElse) -> Any:
        s = self.generic_visit(s)
        cond = s.condition
        if not isinstance(cond, IntImm):
            cond = self.analyzer.simplify(cond)
            if not isinstance(cond, IntImm):
                return s
        if cond.value:
            return s.then_case
        return s.else_case if s.else_case is not None else Evaluate(IntImm(0), span=s.span)

    def visit_SeqStmt(self, s: SeqStmt) -> Any:
        items = [self.visit(x) for x in s.seq]
        kept = [x for x in items if not (isinstance(x, Evaluate) and isinstance(x.value, IntImm))]
        if all(a is b for a, b in zip(kept, s.seq)) and len(kept) == len(s.seq):
            return s
        return seq(*kept) if kept else Evaluate(IntImm(0), span=s.span)


@dataclass
class _Unroller(Mutator):
    """Unrolls every unroll loop of a function, innermost first."""

    max_extent: int
    analyzer: Analyzer = field(default_factory=Analyzer)

    def visit_For(self, s: For) -> Any:
        loop = self.generic_visit(s)
        if loop.kind != ForKind.UNROLLED:
            return loop
        extent = construct.fold(loop.extent)
        if isinstance(extent, IntImm) and extent.value <= self.max_extent and \
                not escaping_loop_jumps(loop.body):
            return unrolled_copies(loop.replace(extent=extent), self.analyzer)
        annotations = {**loop.annotations, PRAGMA_UNROLL: True}
        return loop.replace(kind=ForKind.SERIAL, annotations=annotations)


@dataclass(frozen=True)
class Unroll(PrimFuncPass):
    """Unroll loops of constant extent to straight-line code; hint LLVM for the others."""

    name = "unroll"
    description = "replace unroll loops of constant extent by copies of their body"
    optional = True  # an optimisation (see Pass.optional)

    max_extent: int = option(64, config="unroll.max-extent", check=at_least(0),
                             doc="largest constant extent unrolled into copies")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Unroller(self.max_extent).visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
