"""Rewriting one loop body into vector code, for the vectorize pass.

`BodyVectorizer` replaces the loop variable by a ramp and pushes it through expressions and
statements: affine index arithmetic stays a ramp, loop-invariant values stay scalar and are
broadcast where they meet vector values, accesses at a ramp index become vector accesses.
Anything it cannot express raises NotVectorizable with the reason the pass reports.
"""

from __future__ import annotations

from tirc.ir import intrinsics as intrin
from tirc.ir.arith import construct
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType, no_overflow
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Var,
    cast,
    const,
)
from tirc.ir.intrinsics import MATH_INTRINSICS
from tirc.ir.stmt import (
    AssertStmt,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import any_node


class NotVectorizable(Exception):
    """Why a loop body cannot become vector code."""


class BodyVectorizer:
    """Rewrites one loop body for a given ramp of the loop variable; raises NotVectorizable."""

    def __init__(self, loop_var: Var, base: PrimExpr, lanes: int) -> None:
        self.loop_var = loop_var
        self.lanes = lanes
        ramp = construct.make_ramp(cast(loop_var.dtype, base), const(1, loop_var.dtype), lanes)
        self.map: dict[Var, PrimExpr] = {loop_var: ramp}

    # ---- helpers

    def vec(self, dt: DType) -> DType:
        return dt.with_lanes(self.lanes)

    def bcast(self, e: PrimExpr) -> PrimExpr:
        if e.dtype.lanes == self.lanes:
            return e
        return Broadcast(e, self.lanes, self.vec(e.dtype))

    @staticmethod
    def is_vector(e: PrimExpr) -> bool:
        return e.dtype.lanes > 1

    # ---- expressions

    def expr(self, e: PrimExpr) -> PrimExpr:
        if e.dtype.lanes != 1:
            raise NotVectorizable("the body already holds vector code")
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise NotVectorizable(f"{type(e).__name__} expressions are not supported")
        return method(e)

    def expr_Var(self, e: Var) -> PrimExpr:
        return self.map.get(e, e)

    def expr_IntImm(self, e: PrimExpr) -> PrimExpr:
        return e

    expr_FloatImm = expr_StringImm = expr_IntImm

    def expr_BinOp(self, e: BinOp) -> PrimExpr:
        a, b = self.expr(e.a), self.expr(e.b)
        if not self.is_vector(a) and not self.is_vector(b):
            return e if a is e.a and b is e.b else e.replace(a=a, b=b)
        if e.op in ("add", "sub", "mul") and e.dtype.is_int:
            build = {"add": construct.add, "sub": construct.sub, "mul": construct.mul}[e.op]
            return build(a, b)
        return BinOp(e.op, self.bcast(a), self.bcast(b), self.vec(e.dtype), span=e.span)

    def expr_Not(self, e: Not) -> PrimExpr:
        a = self.expr(e.a)
        if not self.is_vector(a):
            return e if a is e.a else e.replace(a=a)
        return Not(a, self.vec(e.dtype), span=e.span)

    def expr_Select(self, e: Select) -> PrimExpr:
        parts = [self.expr(x) for x in (e.condition, e.true_value, e.false_value)]
        if not any(self.is_vector(p) for p in parts):
            return e.replace(condition=parts[0], true_value=parts[1], false_value=parts[2])
        c, t, f = (self.bcast(p) for p in parts)
        return Select(c, t, f, self.vec(e.dtype), span=e.span)

    def expr_Cast(self, e: Cast) -> PrimExpr:
        v = self.expr(e.value)
        if not self.is_vector(v):
            return e if v is e.value else e.replace(value=v)
        if isinstance(v, Ramp) and e.dtype.is_int:
            return construct.make_ramp(cast(e.dtype, v.base), cast(e.dtype, v.stride), v.lanes)
        return Cast(v, self.vec(e.dtype), span=e.span)

    def expr_Call(self, e: Call) -> PrimExpr:
        args = [self.expr(a) for a in e.args]
        if not any(self.is_vector(a) for a in args):
            return e if all(a is b for a, b in zip(args, e.args)) else e.replace(args=tuple(args))
        if e.op in MATH_INTRINSICS:
            return Call(e.op, tuple(self.bcast(a) for a in args), self.vec(e.dtype), span=e.span)
        if e.op == intrin.IF_THEN_ELSE and len(args) == 3:
            cond, t, f = args
            if not _has_load(e.args[1]) and not _has_load(e.args[2]):
                return Select(self.bcast(cond), self.bcast(t), self.bcast(f), self.vec(e.dtype),
                              span=e.span)
            if not self.is_vector(cond):
                return Call(e.op, (cond, self.bcast(t), self.bcast(f)), self.vec(e.dtype),
                            span=e.span)
            raise NotVectorizable(f"T.if_then_else guards a load with a condition that "
                                  f"depends on {self.loop_var.name}")
        raise NotVectorizable(f"call to '{e.op}' depends on {self.loop_var.name}")

    def vector_index(self, buffer: Buffer, indices: tuple[PrimExpr, ...],
                     what: str) -> tuple[tuple[PrimExpr, ...], int | None]:
        """Indices rewritten, and the position of the one that depends on the loop var."""
        new = tuple(self.expr(i) for i in indices)
        varying = [k for k, i in enumerate(new) if self.is_vector(i)]
        if len(varying) > 1:
            raise NotVectorizable(f"{what} {buffer.name} depends on {self.loop_var.name} "
                                  f"in more than one dimension")
        if not varying:
            return new, None
        idx = new[varying[0]]
        if not isinstance(idx, (Ramp, Broadcast)):
            kind = "gather" if what == "load from" else "scatter"
            raise NotVectorizable(f"{what} {buffer.name} at an index that is not affine in "
                                  f"{self.loop_var.name} (a {kind})")
        return new, varying[0]

    def expr_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        indices, k = self.vector_index(e.buffer, e.indices, "load from")
        if k is None:
            return e if all(a is b for a, b in zip(indices, e.indices)) \
                else e.replace(indices=indices)
        idx = indices[k]
        if isinstance(idx, Broadcast):
            scalar = indices[:k] + (idx.value,) + indices[k + 1:]
            return self.bcast(BufferLoad(e.buffer, scalar, e.dtype, span=e.span))
        return BufferLoad(e.buffer, indices, self.vec(e.dtype), span=e.span)

    def expr_Let(self, e: Let) -> PrimExpr:
        value = self.expr(e.value)
        var = e.var
        if self.is_vector(value):
            var = Var(e.var.name, value.dtype, span=e.var.span)
            self.map[e.var] = var
        body = self.expr(e.body)
        return Let(var, value, body, body.dtype, span=e.span)

    # ---- statements

    def stmt(self, s: Stmt) -> Stmt:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            what = {"While": "a while loop", "Allocate": "an allocation",
                    "AttrStmt": "an attribute statement", "BlockRealize": "a block"}
            raise NotVectorizable(f"the body holds {what.get(type(s).__name__, type(s).__name__)}")
        return method(s)

    def stmt_SeqStmt(self, s: SeqStmt) -> Stmt:
        return seq(*(self.stmt(x) for x in s.seq))

    def stmt_BufferStore(self, s: BufferStore) -> Stmt:
        value = self.expr(s.value)
        indices, k = self.vector_index(s.buffer, s.indices, "store to")
        if k is None or isinstance(indices[k], Broadcast):
            raise NotVectorizable(f"every iteration stores to the same element of "
                                  f"{s.buffer.name} (a reduction)")
        return BufferStore(s.buffer, self.bcast(value), indices, span=s.span)

    def stmt_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.expr(s.value)
        var = s.var
        if self.is_vector(value):
            var = Var(s.var.name, value.dtype, span=s.var.span)
            self.map[s.var] = var
        return LetStmt(var, value, self.stmt(s.body), span=s.span)

    def stmt_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.expr(s.condition)
        if self.is_vector(cond):
            raise NotVectorizable(f"an if condition depends on {self.loop_var.name}")
        else_case = self.stmt(s.else_case) if s.else_case is not None else None
        return IfThenElse(cond, self.stmt(s.then_case), else_case, span=s.span)

    def stmt_AssertStmt(self, s: AssertStmt) -> Stmt:
        cond = self.expr(s.condition)
        if self.is_vector(cond):
            raise NotVectorizable(f"an assert condition depends on {self.loop_var.name}")
        return AssertStmt(cond, s.message, self.stmt(s.body), span=s.span)

    def stmt_For(self, s: For) -> Stmt:
        """An inner loop with invariant bounds stays a loop around the vector body.

        The iterations of the vectorized loop are independent, so running all lanes of one
        inner iteration before the next inner iteration is an allowed interchange.
        """
        lo, extent = self.expr(s.min), self.expr(s.extent)
        if self.is_vector(lo) or self.is_vector(extent):
            raise NotVectorizable(f"the bounds of inner loop {s.loop_var.name} depend on "
                                  f"{self.loop_var.name}")
        if s.kind == ForKind.THREAD_BINDING:
            raise NotVectorizable("the body holds a thread-bound loop")
        kind = s.kind if s.kind == ForKind.UNROLLED else ForKind.SERIAL
        return s.replace(min=lo, extent=extent, kind=kind, body=self.stmt(s.body))

    def stmt_Evaluate(self, s: Evaluate) -> Stmt:
        if construct.is_int_const(s.value):
            return s
        raise NotVectorizable("the body evaluates a call for its effect")


def _has_load(e: PrimExpr) -> bool:
    return any_node(e, lambda n: isinstance(n, BufferLoad))


def interval_condition(cond: PrimExpr) -> bool:
    """True for a vector condition whose true lanes are contiguous: ands of comparisons
    between ramps and broadcasts (each side affine in the lane number)."""
    if isinstance(cond, BinOp) and cond.op == "and":
        return interval_condition(cond.a) and interval_condition(cond.b)
    # int32/int64 lanes only: a ramp of a type that wraps (uint8 200, 216, 232, 248, 8) is
    # not monotonic, so its true lanes need not be contiguous
    return (isinstance(cond, BinOp) and cond.op in ("lt", "le", "gt", "ge")
            and cond.dtype.lanes > 1 and no_overflow(cond.a.dtype)
            and all(isinstance(x, (Ramp, Broadcast)) for x in (cond.a, cond.b)))
