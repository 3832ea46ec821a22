"""hoist-invariant-lets: a `let` at the top of a loop body whose value does not change from one
iteration to the next is computed once, before the loop.

Sparse lowering binds a searched position before each access of a sparse output
(`C_pos = tirc.lower_bound(indices, col, begin, end)`), and the reduction loop over features
sits around that access, so a bucketed SDDMM searched once per feature, twice (for the store and
for the load in its value). For a loop whose body starts with a chain of such lets, each under
any number of `if`s without `else`, this pass moves the chain in front of the loop when every
value and condition in it is loop-invariant: it uses neither the loop variable nor any variable
bound inside the loop, calls only pure intrinsics, and reads no storage that the body writes
(nor does the body call anything that could write storage; in a function that binds a handle
with a let, where one storage may have two names, a body that stores anything counts as
writing all of it). Other lets in the body that compute the same value take the hoisted
variable. The moved chain runs under `if extent > 0` unless the loop provably runs, so nothing
is evaluated that the loop would not evaluate, and in the same order. Thread-bound loops and
loops with a `break` or `continue` are left alone.
"""

from __future__ import annotations

from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.arith import Analyzer
from tirc.ir.expr import BufferLoad, Call, IntImm, Let, PrimExpr, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.module import IRModule
from tirc.ir.stmt import BufferStore, For, IfThenElse, LetStmt, Stmt
from tirc.ir.structural import same_expr
from tirc.ir.visitor import Mutator, any_node, post_order_visit, substitute
from tirc.passes.pass_base import PassContext, PrimFuncPass

# Calls that only compute a value from their operands (and, for the searches, read storage
# named by a handle operand).
_PURE = frozenset(intrin.MATH_INTRINSICS) | {
    intrin.IF_THEN_ELSE, intrin.LIKELY, intrin.REINTERPRET,
    intrin.SHIFT_LEFT, intrin.SHIFT_RIGHT, intrin.BITWISE_AND,
    intrin.BITWISE_OR, intrin.BITWISE_XOR, intrin.BITWISE_NOT,
    intrin.LOWER_BOUND, intrin.UPPER_BOUND}


def _impure(node: Any) -> bool:
    """Whether `node` calls anything that may have a side effect."""
    return any_node(node, lambda n: isinstance(n, Call) and n.op not in _PURE)


def _starts_with_let(body: Stmt) -> bool:
    """Whether `body` opens with a let, under `if`s without `else` (before walking it whole)."""
    while isinstance(body, IfThenElse) and body.else_case is None:
        body = body.then_case
    return isinstance(body, LetStmt)


def _written(body: Stmt) -> set[Var]:
    """The storage (data variables) that stores under `body` write."""
    out: set[Var] = set()

    def visit(n: object) -> None:
        if isinstance(n, BufferStore):
            out.add(n.buffer.data)

    post_order_visit(body, visit)
    return out


def _reads(e: PrimExpr) -> tuple[set[Var], set[Var]]:
    """The variables `e` uses and the storage it reads (loads' data and handle operands)."""
    used: set[Var] = set()
    storage: set[Var] = set()

    def visit(n: object) -> None:
        if isinstance(n, Var):
            used.add(n)
            if n.dtype.is_handle:
                storage.add(n)
        elif isinstance(n, BufferLoad):
            storage.add(n.buffer.data)

    post_order_visit(e, visit)
    return used, storage


@dataclass
class _Link:
    """One step of the chain in front of the loop's body: an `if` or a `let`."""

    node: IfThenElse | LetStmt

    def wrap(self, inner: Stmt) -> Stmt:
        """This `if` or `let` around `inner`."""
        if isinstance(self.node, IfThenElse):
            return IfThenElse(self.node.condition, inner, None, span=self.node.span)
        return LetStmt(self.node.var, self.node.value, inner, span=self.node.span)


class _Reuse(Mutator):
    """Lets whose value is one of the hoisted values take the hoisted variable instead."""

    def __init__(self, hoisted: list[tuple[Var, PrimExpr]]) -> None:
        self.hoisted = hoisted

    def _same(self, value: PrimExpr) -> Var | None:
        return next((v for v, e in self.hoisted if same_expr(value, e)), None)

    def visit_Let(self, e: Let) -> Any:
        var = self._same(e.value)
        if var is None:
            return self.generic_visit(e)
        return self.visit(substitute(e.body, {e.var: var}))

    def visit_LetStmt(self, s: LetStmt) -> Any:
        var = self._same(s.value)
        if var is None:
            return self.generic_visit(s)
        return self.visit(substitute(s.body, {s.var: var}))


class _Hoister(Mutator):
    """Hoists invariant let chains out of every loop, innermost loops first (so a chain can
    move out through several loops it does not depend on)."""

    def __init__(self, aliased: bool) -> None:
        self.an = Analyzer()
        self.aliased = aliased  # a handle is let-bound: storage may have two names

    def visit_For(self, s: For) -> Any:
        s = self.generic_visit(s)
        if not isinstance(s, For) or s.thread_tag is not None or not _starts_with_let(s.body) \
                or contains_loop_jump(s.body) or _impure(s.body):
            return s
        written = _written(s.body)
        any_store = bool(written) and self.aliased  # then a store may write any storage
        bound: set[Var] = {s.loop_var}

        def invariant(e: PrimExpr) -> bool:
            used, storage = _reads(e)
            return not (used & bound) and not (storage & written) and \
                not (storage and any_store)

        chain: list[_Link] = []
        node: Stmt = s.body
        while True:
            if isinstance(node, IfThenElse) and node.else_case is None and \
                    invariant(node.condition):
                chain.append(_Link(node))
                node = node.then_case
            elif isinstance(node, LetStmt) and invariant(node.value):
                chain.append(_Link(node))
                node = node.body
            else:
                break
        while chain and isinstance(chain[-1].node, IfThenElse):  # keep trailing guards inside
            node = chain.pop().wrap(node)
        if not chain:
            return s
        hoisted = [(link.node.var, link.node.value) for link in chain
                   if isinstance(link.node, LetStmt)]
        out: Stmt = s.replace(body=_Reuse(hoisted).visit(node))
        for link in reversed(chain):
            out = link.wrap(out)
        runs = binop("gt", s.extent, IntImm(0, s.extent.dtype))
        if not self.an.can_prove(runs):
            out = IfThenElse(runs, out, None, span=s.span)
        return out


@dataclass(frozen=True)
class HoistInvariantLets(PrimFuncPass):
    """Loop-invariant lets at the top of a loop body computed once before the loop."""

    name = "hoist-invariant-lets"
    description = "a loop-invariant let (a sparse position search) computed once before its loop"
    optional = True  # an optimisation (see Pass.optional)

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        aliased = any_node(func.body, lambda n: isinstance(n, LetStmt | Let) and
                           n.var.dtype.is_handle)
        body = _Hoister(aliased).visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
