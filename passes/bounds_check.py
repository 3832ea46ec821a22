"""bounds-check: run-time checks on every access the compiler cannot prove in bounds
(`-fbounds-check`, as `-fsanitize=bounds` for C).

Runs on blocks after the schedules (the loops that will run), before lower-init. With the loop
ranges, block domains, `T.where` predicates and `if` conditions it knows, the arith Analyzer
proves most indices in bounds; every other access gets a check before the statement holding
it, `tirc.bounds_check(cond, "format", values...)`, which makes the function return -5 with
a message naming the place, the buffer, the index values and the shape:

    oob.tir:6:25: out-of-bounds read of A[3, 17], shape (16, 16)

Block bindings that may leave their domain are checked the same way. A load in a branch of
`T.if_then_else` is checked only when that branch is taken. Nothing is added unless the pass
option `enabled` is set (`bounds-check{enabled=true}`, or the pass config `bounds-check` that the
command's `-fbounds-check` sets), so the default pipeline lists the pass without paying for it.

On a cuda target the checks land inside the kernels, where gpu-bounds-record (after
gpu-split-host-device) turns each into a store into the call's error record and an early exit
of the thread, and the host reports the same message (docs/abi.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.arith import Analyzer, simplify
from tirc.ir.buffer import Buffer, Range
from tirc.ir.dtype import dtype
from tirc.ir.expr import (
    BufferLoad,
    Call,
    IntImm,
    Let,
    Not,
    PrimExpr,
    StringImm,
    binop,
)
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import before_continues
from tirc.ir.module import IRModule
from tirc.ir.span import Span
from tirc.ir.stmt import (
    AssertStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    Stmt,
    While,
    seq,
)
from tirc.ir.visitor import Mutator
from tirc.passes.pass_base import PassContext, PrimFuncPass, option

CONFIG_KEY = "bounds-check"
INTRINSIC = intrin.BOUNDS_CHECK
INT32 = dtype("int32")
BOOL = dtype("bool")


@dataclass(frozen=True)
class BoundsCheck(PrimFuncPass):
    """Check every access not provably in bounds at run time (when `-fbounds-check` is on)."""

    name = "bounds-check"
    description = ("-fbounds-check: a run-time check before every access (and block binding) "
                   "not provably in bounds, naming buffer, indices and source line")

    enabled: bool = option(False, config=CONFIG_KEY,
                           doc="add the checks (the command's -fbounds-check sets it)")

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return super().run(mod, ctx) if self.enabled else mod

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Checks(func).visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]


def _and(items: list[PrimExpr]) -> PrimExpr:
    out = items[0]
    for c in items[1:]:
        out = binop("and", out, c)
    return out


def _where(span: Span | None) -> str:
    return f"{span}: " if span is not None else ""


def _fmt(text: str) -> str:
    return text.replace("%", "%%")


class _Checks(Mutator):
    """Adds the checks, knowing the ranges of the loops and iteration variables around."""

    def __init__(self, func: PrimFunc) -> None:
        self.an = Analyzer()
        self.func = func

    @contextmanager
    def knowing(self, *facts: PrimExpr) -> Iterator[None]:
        with self.an.scope():
            stack = [self.an.constraint(f) for f in facts]
            for c in stack:
                c.__enter__()
            try:
                yield
            finally:
                for c in reversed(stack):
                    c.__exit__(None, None, None)

    # ---- what to check -------------------------------------------------------------

    def in_function(self, span: Span | None) -> str:
        """Where an access without a place in the source is (a kernel tirc generated)."""
        return "" if span is not None else _fmt(f" in function '{self.func.name}'")

    def in_bounds(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> list[PrimExpr]:
        """The conditions (one per dimension) that are not provably true."""
        out: list[PrimExpr] = []
        for index, extent in zip(indices, buf.shape):
            if index.dtype.lanes != 1:
                continue
            zero = IntImm(0, index.dtype)
            ext = extent if extent.dtype == index.dtype else _cast(index.dtype, extent)
            for cond in (binop("ge", index, zero), binop("lt", index, ext)):
                if not self.an.can_prove(cond):
                    out.append(cond)
        return out

    def access_check(self, buf: Buffer, indices: tuple[PrimExpr, ...], span: Span | None,
                     write: bool, guards: list[PrimExpr]) -> PrimExpr | None:
        """The check call for one access, or None when it is provably in bounds."""
        with self.knowing(*guards):
            conds = self.in_bounds(buf, indices)
        if not conds or len(indices) != len(buf.shape):
            return None
        ok = _and(conds)
        if guards:
            ok = binop("or", Not(_and(guards)), ok)
        values: list[PrimExpr] = list(indices)
        dims = []
        for d in buf.shape:
            if isinstance(d, IntImm):
                dims.append(str(d.value))
            else:
                dims.append("%lld")
                values.append(d)
        what = "write to" if write else "read of"
        fmt = (_fmt(f"{_where(span)}out-of-bounds {what} {buf.name}") +
               "[" + ", ".join("%lld" for _ in indices) + "], shape (" + ", ".join(dims) +
               ("," if len(dims) == 1 else "") + ")" + self.in_function(span))
        return Call(INTRINSIC, (ok, StringImm(fmt), *values), INT32)

    def expr_checks(self, e: Any, guards: list[PrimExpr]) -> list[PrimExpr]:
        """Checks for every load inside `e`, innermost first."""
        out: list[PrimExpr] = []
        if isinstance(e, BufferLoad):
            for i in e.indices:
                out += self.expr_checks(i, guards)
            check = self.access_check(e.buffer, e.indices, e.span, False, guards)
            if check is not None:
                out.append(check)
        elif isinstance(e, Call) and e.op == intrin.IF_THEN_ELSE and len(e.args) == 3:
            c, t, f = e.args
            out += self.expr_checks(c, guards)
            out += self.expr_checks(t, [*guards, c])
            out += self.expr_checks(f, [*guards, Not(c)])
        elif isinstance(e, Let):
            out += self.expr_checks(e.value, guards)
            with self.an.scope():
                self.an.bind(e.var, e.value)
                inner = self.expr_checks(e.body, guards)
            out += [Let(e.var, e.value, c, c.dtype) for c in inner]
        elif isinstance(e, PrimExpr):
            for _, value in e.node_fields():
                if isinstance(value, PrimExpr):
                    out += self.expr_checks(value, guards)
                elif isinstance(value, tuple):
                    for v in value:
                        out += self.expr_checks(v, guards)
        return out

    def before(self, checks: list[PrimExpr], stmt: Stmt) -> Stmt:
        if not checks:
            return stmt
        return seq(*[Evaluate(c, span=stmt.span) for c in checks], stmt)

    # ---- statements ----------------------------------------------------------------

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        checks = self.expr_checks(s.value, [])
        for i in s.indices:
            checks += self.expr_checks(i, [])
        own = self.access_check(s.buffer, s.indices, s.span, True, [])
        return self.before(checks + ([own] if own is not None else []), s)

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        return self.before(self.expr_checks(s.value, []), s)

    def visit_AssertStmt(self, s: AssertStmt) -> Stmt:
        checks = self.expr_checks(s.condition, [])
        return self.before(checks, s.replace(body=self.visit(s.body)))  # type: ignore[arg-type]

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        checks = self.expr_checks(s.value, [])
        with self.an.scope():
            self.an.bind(s.var, s.value)
            body = self.visit(s.body)
        return self.before(checks, s if body is s.body else s.replace(body=body))

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        checks = self.expr_checks(s.condition, [])
        with self.knowing(s.condition):
            then = self.visit(s.then_case)
        other = s.else_case
        if other is not None:
            with self.knowing(Not(s.condition)):
                other = self.visit(other)
        new = s if then is s.then_case and other is s.else_case else \
            s.replace(then_case=then, else_case=other)
        return self.before(checks, new)  # type: ignore[arg-type]

    def visit_While(self, s: While) -> Stmt:
        checks = self.expr_checks(s.condition, [])
        body = self.visit(s.body)
        if checks:  # the condition is evaluated again after every iteration
            again = seq(*[Evaluate(c, span=s.span) for c in checks])
            body = seq(before_continues(body, again), again)
        return self.before(checks, s if body is s.body else s.replace(body=body))

    def visit_For(self, s: For) -> Stmt:
        checks = self.expr_checks(s.min, []) + self.expr_checks(s.extent, [])
        with self.an.scope():
            self.an.bind(s.loop_var, Range(s.min, s.extent))
            body = self.visit(s.body)
        return self.before(checks, s if body is s.body else s.replace(body=body))

    def visit_BlockRealize(self, br: BlockRealize) -> Stmt:
        checks: list[PrimExpr] = []
        for v in br.iter_values:
            checks += self.expr_checks(v, [])
        pred = br.predicate
        guards = [] if isinstance(pred, IntImm) and pred.value else [pred]
        blk = br.block
        for iv, v in zip(blk.iter_vars, br.iter_values):
            check = self.binding_check(blk, iv.var.name, iv.dom, v, guards)
            if check is not None:
                checks.append(check)
        with self.knowing(*guards):
            for iv in blk.iter_vars:
                self.an.bind(iv.var, iv.dom)
            body = self.visit(blk.body)
            init = self.visit(blk.init) if blk.init is not None else None
        if body is not blk.body or init is not blk.init:
            br = br.replace(block=blk.replace(body=body, init=init))  # type: ignore[assignment]
        return self.before(checks, br)

    def binding_check(self, blk: Block, name: str, dom: Range, value: PrimExpr,
                      guards: list[PrimExpr]) -> PrimExpr | None:
        lo = dom.min if dom.min.dtype == value.dtype else _cast(value.dtype, dom.min)
        hi = simplify(binop("add", lo, dom.extent if dom.extent.dtype == value.dtype
                            else _cast(value.dtype, dom.extent)))
        with self.knowing(*guards):
            conds = [c for c in (binop("ge", value, lo), binop("lt", value, hi))
                     if not self.an.can_prove(c)]
        if not conds or value.dtype.lanes != 1:
            return None
        ok = _and(conds)
        if guards:
            ok = binop("or", Not(_and(guards)), ok)
        span = value.span or blk.span
        fmt = _fmt(f"{_where(span)}block '{blk.name}': {name} = ") + \
            "%lld is outside its domain [%lld, %lld)" + self.in_function(span)
        return Call(INTRINSIC, (ok, StringImm(fmt), value, lo, hi), INT32)


def _cast(dt: Any, e: PrimExpr) -> PrimExpr:
    from tirc.ir.expr import cast

    return cast(dt, e)
