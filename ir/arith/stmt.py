"""The statement half of the simplifier: every expression of a statement simplified with what
the enclosing statements tell (loop ranges, lets, branch conditions), dead statements folded.

`StmtSimplifier` is what the `simplify` pass runs over a loop function (see passes/simplify.py
for the rules).
"""

from __future__ import annotations

from typing import Any

from tirc.ir.arith.analyzer import Analyzer
from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Range
from tirc.ir.expr import Call, IntImm, Not, PrimExpr, Var, cast
from tirc.ir.function import PrimFunc
from tirc.ir.intrinsics import CALL_PRIM
from tirc.ir.loop_jumps import escaping_loop_jumps
from tirc.ir.rebind import rebind
from tirc.ir.stmt import (
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
    seq,
)
from tirc.ir.visitor import Mutator, any_node

THREAD_ATTRS = (THREAD_EXTENT, VIRTUAL_THREAD)
_UNIT_LOOP_KINDS = (ForKind.SERIAL, ForKind.UNROLLED, ForKind.VECTORIZED, ForKind.PARALLEL)


def noop() -> Stmt:
    """The empty statement `T.evaluate(0)` (what `pass` reads as)."""
    return Evaluate(IntImm(0))


def is_noop(s: Stmt) -> bool:
    return (isinstance(s, SeqStmt) and not s.seq) or (
        isinstance(s, Evaluate) and isinstance(s.value, IntImm))


def _calls(e: PrimExpr) -> bool:
    """Whether `e` calls a loop function (its value is known only by running it)."""
    return any_node(e, lambda n: isinstance(n, Call) and n.op == CALL_PRIM)


def _const(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


class StmtSimplifier(Mutator):
    """Simplifies expressions with an Analyzer bound along the way; folds dead statements."""

    def __init__(self, analyzer: Analyzer, remove_unit_loops: bool = True) -> None:
        self.an = analyzer
        self.remove_unit_loops = remove_unit_loops

    def visit(self, node: Any) -> Any:
        if isinstance(node, PrimExpr) and not isinstance(node, Var):
            return self.an.simplify(node)
        return super().visit(node)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        items = [self.visit(x) for x in s.seq]
        if all(a is b for a, b in zip(items, s.seq)) and not any(is_noop(x) for x in items):
            return s
        kept = [x for x in items if not is_noop(x)]
        return seq(*kept) if kept else noop()

    def visit_For(self, s: For) -> Stmt:
        lo = self.visit(s.min)
        extent = self.visit(s.extent)
        n = _const(extent)
        thread = s.kind == ForKind.THREAD_BINDING
        if n is not None and n <= 0 and not thread:
            return noop()
        if (self.remove_unit_loops and n == 1 and s.kind in _UNIT_LOOP_KINDS
                and not s.annotations and s.thread_tag is None
                and not escaping_loop_jumps(s.body)):  # a jump needs its loop
            value = lo if lo.dtype == s.loop_var.dtype else cast(s.loop_var.dtype, lo)
            return self.visit(rebind(s.body, {s.loop_var: value}))
        with self.an.scope():
            self.an.bind(s.loop_var, Range(lo, extent))
            body = self.visit(s.body)
        if is_noop(body) and not thread:
            return noop()
        if lo is s.min and extent is s.extent and body is s.body:
            return s
        return s.replace(min=lo, extent=extent, body=body)  # type: ignore[return-value]

    def visit_BlockRealize(self, s: BlockRealize) -> Stmt:
        values = tuple(self.visit(v) for v in s.iter_values)
        pred = self.visit(s.predicate)
        if isinstance(pred, IntImm) and not pred.value:
            return noop()
        with self.an.scope():
            block = self.visit(s.block)
        if (block is s.block and pred is s.predicate
                and all(a is b for a, b in zip(values, s.iter_values))):
            return s
        return BlockRealize(values, pred, block, span=s.span)

    def visit_Block(self, b: Block) -> Block:
        ivs = tuple(self.visit(iv) for iv in b.iter_vars)
        for iv in ivs:
            self.an.bind(iv.var, iv.dom)
        new = self.generic_visit(b.replace(iter_vars=ivs) if ivs != b.iter_vars else b)
        if new.body is not b.body and is_noop(new.body):
            new = new.replace(body=noop())
        return new  # type: ignore[no-any-return]

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.visit(s.condition)
        if isinstance(cond, IntImm):
            if cond.value:
                return self.visit(s.then_case)
            return self.visit(s.else_case) if s.else_case is not None else noop()
        with self.an.constraint(cond):
            then = self.visit(s.then_case)
        other = None
        if s.else_case is not None:
            with self.an.constraint(Not(cond)):
                other = self.visit(s.else_case)
            if is_noop(other):
                other = None
        if is_noop(then) and other is None:
            return noop()
        if is_noop(then) and other is not None:
            return IfThenElse(self.an.simplify(Not(cond)), other, None, span=s.span)
        if cond is s.condition and then is s.then_case and other is s.else_case:
            return s
        return IfThenElse(cond, then, other, span=s.span)

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.visit(s.value)
        with self.an.scope():
            if value.dtype.is_int and value.dtype.lanes == 1 and not _calls(value):
                self.an.bind(s.var, value)
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return LetStmt(s.var, value, body, span=s.span)

    def visit_AssertStmt(self, s: AssertStmt) -> Stmt:
        cond = self.visit(s.condition)
        body = self.visit(s.body)
        if isinstance(cond, IntImm) and cond.value:
            return body
        if cond is s.condition and body is s.body:
            return s
        return AssertStmt(cond, s.message, body, span=s.span)

    def visit_While(self, s: While) -> Stmt:
        cond = self.visit(s.condition)
        if isinstance(cond, IntImm) and not cond.value:
            return noop()
        body = self.visit(s.body)
        if cond is s.condition and body is s.body:
            return s
        return While(cond, body, span=s.span)

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        value = self.visit(s.value)
        with self.an.scope():
            if s.key in THREAD_ATTRS and isinstance(s.node, Var):
                self.an.bind(s.node, Range(IntImm(0, s.node.dtype), value))
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return AttrStmt(s.node, s.key, value, body, span=s.span)


def analyzer_for(func: PrimFunc) -> Analyzer:
    """An Analyzer knowing that symbolic dimensions of parameter buffers are nonnegative."""
    an = Analyzer()
    for buf in func.buffers:
        for d in buf.shape:
            if isinstance(d, Var) and not an.is_bound(d):
                an.bind(d, (0, None))
    return an
