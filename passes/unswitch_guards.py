"""unswitch-guards: a loop whose iterations test the guards of a partial tile gets a guard-free
copy of its body for the iterations where every guard holds.

A schedule over a symbolic extent (`split` of `n` by 8) leaves guards such as
`if i0 * 8 + i1 < n:` inside the tile, often inside its reduction loop, where they are tested
once per row and per step and keep LLVM from vectorizing the tile. For a loop `L` whose body
holds such guards (an `if` without `else` on an ordered comparison, linear with constant
coefficients in the loops nested inside `L` with constant bounds, that mentions `L`'s
variable), this pass evaluates each guard at the extreme values of those inner loops: the
conjunction `C` of the results holds exactly when every guard holds in every inner iteration.
The body becomes `if C: <body without those guards> else: <body>`, so a full tile runs no guard
and only the tail runs the original (TVM's loop partitioning, as an unswitch per iteration so
a parallel loop stays one loop). Guards tested only once per iteration of `L` are left alone.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir.analysis.regions import conjuncts, free_vars
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import from_linear, is_index_dtype
from tirc.ir.expr import BinOp, BufferLoad, Call, IntImm, PrimExpr, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.module import IRModule
from tirc.ir.rebind import fresh_copy
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from tirc.ir.structural import same_expr
from tirc.ir.visitor import Mutator, any_node
from tirc.passes.pass_base import PassContext, PrimFuncPass

_FLIPPED = {"gt": "lt", "ge": "le"}


@dataclass
class _Guard:
    """An `if` of the body and its condition evaluated at the inner loops' extremes."""

    node: IfThenElse
    hoisted: PrimExpr


def _hoist(cond: PrimExpr, inner: dict[Var, tuple[int, int]], an: Analyzer) -> PrimExpr | None:
    """`cond` with every inner loop variable at the value that makes it hardest to satisfy, or
    None when `cond` is not a conjunction of ordered comparisons linear in those variables."""
    parts: list[PrimExpr] = []
    for c in conjuncts(cond):
        if not isinstance(c, BinOp) or c.op not in ("lt", "le", "gt", "ge"):
            return None
        if any_node(c, lambda n: isinstance(n, BufferLoad | Call)):
            return None
        if not is_index_dtype(c.a.dtype):
            return None  # a comparison of a type that wraps is not linear in the loops
        op, lhs, rhs = (_FLIPPED[c.op], c.b, c.a) if c.op in _FLIPPED else (c.op, c.a, c.b)
        lin = an.to_linear(binop("sub", lhs, rhs))
        for atom, coef in list(lin.terms.items()):
            if isinstance(atom, Var) and atom in inner:
                lo, hi = inner[atom]
                del lin.terms[atom]
                lin.const += coef * (hi if coef > 0 else lo)
            elif any(v in inner for v in free_vars(atom)):
                return None
        parts.append(binop(op, from_linear(lin), IntImm(0, lin.dtype)))
    out = parts[0]
    for p in parts[1:]:
        out = binop("and", out, p)
    return out


@dataclass
class _GuardFinder:
    """The unswitchable guards under `loop`: inside at least one inner loop, mentioning the
    loop's variable, and otherwise only variables bound outside or by inner constant loops."""

    loop: For
    an: Analyzer
    guards: list[_Guard] = field(default_factory=list)

    def walk(self, s: Stmt, inner: dict[Var, tuple[int, int]], defined: set[Var]) -> None:
        if isinstance(s, For):
            inner2 = dict(inner)
            if isinstance(s.min, IntImm) and isinstance(s.extent, IntImm) \
                    and s.extent.value > 0:
                inner2[s.loop_var] = (s.min.value, s.min.value + s.extent.value - 1)
            self.walk(s.body, inner2, defined | {s.loop_var})
            return
        if isinstance(s, IfThenElse) and s.else_case is None and inner:
            used = free_vars(s.condition)
            if self.loop.loop_var in used and not any(v in defined and v not in inner
                                                      for v in used):
                hoisted = _hoist(s.condition, inner, self.an)
                if hoisted is not None:
                    self.guards.append(_Guard(s, hoisted))
        for child, binds in _children(s):
            self.walk(child, inner, defined | binds)


def _children(s: Stmt) -> list[tuple[Stmt, set[Var]]]:
    """The statements directly inside `s`, each with the variables `s` binds for it (none for
    a statement kind not listed: its contents are not searched, so nothing in it changes)."""
    if isinstance(s, LetStmt):
        return [(s.body, {s.var})]
    if isinstance(s, Allocate):
        return [(s.body, {s.buffer.data})]
    if isinstance(s, AttrStmt | AssertStmt | While):
        return [(s.body, set())]
    if isinstance(s, IfThenElse):
        return [(c, set()) for c in (s.then_case, s.else_case) if c is not None]
    if isinstance(s, SeqStmt):
        return [(c, set()) for c in s.seq]
    return []


class _DropGuards(Mutator):
    """The body with the chosen guards replaced by what they guard."""

    def __init__(self, guards: list[_Guard]) -> None:
        self.ids = {id(g.node) for g in guards}

    def visit_IfThenElse(self, s: IfThenElse) -> Any:
        if id(s) in self.ids:
            return self.visit(s.then_case)
        return self.generic_visit(s)


class _Unswitcher(Mutator):
    """Unswitches the outermost loop of each nest that has guards to drop."""

    def __init__(self) -> None:
        self.an = Analyzer()

    def visit_For(self, s: For) -> Any:
        if s.kind == ForKind.VECTORIZED or s.thread_tag is not None or \
                contains_loop_jump(s.body):  # (kept simple: a jump is left as written)
            return self.generic_visit(s)
        finder = _GuardFinder(s, self.an)
        finder.walk(s.body, {}, set())
        if not finder.guards:
            return self.generic_visit(s)
        with self.an.scope():
            self.an.bind(s.loop_var, (s.min, binop("sub", binop("add", s.min, s.extent), 1)))
            unique: list[PrimExpr] = []
            for g in finder.guards:
                h = self.an.simplify(g.hoisted)
                if not any(same_expr(h, u) for u in unique):
                    unique.append(h)
            cond = unique[0]
            for u in unique[1:]:
                cond = binop("and", cond, u)
            cond = self.an.simplify(cond)
        if isinstance(cond, IntImm) and not cond.value:
            return self.generic_visit(s)
        fast = _DropGuards(finder.guards).visit(s.body)
        if isinstance(cond, IntImm):
            return s.replace(body=fast)
        return s.replace(body=IfThenElse(cond, fresh_copy(fast), s.body, span=s.span))


@dataclass(frozen=True)
class UnswitchGuards(PrimFuncPass):
    """A guard-free copy of a tiled loop's body for its full tiles."""

    name = "unswitch-guards"
    description = "full tiles of a partial-tile loop run a copy of the body without its guards"
    optional = True  # an optimisation (see Pass.optional)

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Unswitcher().visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
