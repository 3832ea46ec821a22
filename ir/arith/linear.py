"""Linear forms: an integer expression as a sum of coefficient * atom plus a constant.

The simplifier works on this canonical form to collect like terms (`x*2 + x - x*3` is 0), to
split a sum by a divisor (`(x*8 + y) // 8`), and to find the bounds of a difference. An atom is
any non-linear sub-expression (a variable, `x // 4`, `x * y`, a load...); atoms are keyed by
structural equality of the expression nodes themselves (variables compare by identity).
"""

from __future__ import annotations

from dataclasses import field

from tirc.ir.dtype import DType, no_overflow, wrap_int
from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var
from tirc.ir.lean_dataclass import dataclass


@dataclass
class Linear:
    """`sum(coef * atom) + const`; `terms` keeps the order in which atoms first appeared."""

    dtype: DType
    terms: dict[PrimExpr, int] = field(default_factory=dict)
    const: int = 0

    def copy(self) -> Linear:
        return Linear(self.dtype, dict(self.terms), self.const)

    def add_term(self, atom: PrimExpr, coef: int) -> None:
        new = self.terms.get(atom, 0) + coef
        if new == 0:
            self.terms.pop(atom, None)
        else:
            self.terms[atom] = new

    def add(self, other: Linear, scale: int = 1) -> None:
        """In place: self += scale * other."""
        for atom, coef in other.terms.items():
            self.add_term(atom, coef * scale)
        self.const += other.const * scale

    def scaled(self, k: int) -> Linear:
        if k == 0:
            return Linear(self.dtype)
        return Linear(self.dtype, {a: c * k for a, c in self.terms.items()}, self.const * k)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def single_atom(self) -> PrimExpr | None:
        """The atom when the form is exactly `1 * atom + 0`."""
        if self.const == 0 and len(self.terms) == 1:
            atom, coef = next(iter(self.terms.items()))
            if coef == 1:
                return atom
        return None


def is_index_dtype(dt: DType) -> bool:
    """Scalar signed integers of 32 or 64 bits: the dtypes the linear form applies to.

    Their arithmetic is taken not to overflow (the LLVM backend marks it `nsw`, as TVM does),
    so `x * 2 // 2` is `x` and `x + 1 > x` holds. Narrower and unsigned integers wrap (in the
    interpreter and in compiled code alike), where those rewrites would change the value.
    """
    return no_overflow(dt) and dt.lanes == 1


def exact_linear(e: PrimExpr) -> bool:
    """Whether the linear form of `e` gives its value: an int32/int64 expression, or a
    variable or constant of a narrower or unsigned integer type (nothing in it can wrap, so
    an identity binding `vi = i` of an int16 loop is linear in `i`)."""
    return is_index_dtype(e.dtype) or (
        e.dtype.is_int and e.dtype.lanes == 1 and isinstance(e, (Var, IntImm)))


LinearMemo = dict[int, tuple[PrimExpr, Linear]]


def to_linear(e: PrimExpr, memo: LinearMemo | None = None) -> Linear:
    """The linear form of an integer expression; non-linear parts become atoms.

    `memo` (node id -> (node, form)) remembers the forms of sub-expressions; the caller always
    gets a fresh copy it may change."""
    if memo is not None:
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1].copy()
    out = _to_linear(e, memo)
    if memo is not None and not isinstance(e, IntImm):
        memo[id(e)] = (e, out.copy())
    return out


def _to_linear(e: PrimExpr, memo: LinearMemo | None) -> Linear:
    if isinstance(e, IntImm):
        return Linear(e.dtype, {}, e.value)
    if isinstance(e, BinOp) and e.op in ("add", "sub") and e.a.dtype == e.dtype:
        out = to_linear(e.a, memo)
        out.add(to_linear(e.b, memo), 1 if e.op == "add" else -1)
        return out
    if isinstance(e, BinOp) and e.op == "mul":
        la = to_linear(e.a, memo)
        lb = to_linear(e.b, memo)
        if la.is_const:
            return lb.scaled(la.const)
        if lb.is_const:
            return la.scaled(lb.const)
    return Linear(e.dtype, {e: 1}, 0)


def _term(atom: PrimExpr, coef: int, dt: DType) -> PrimExpr:
    if coef == 1:
        return atom
    return BinOp("mul", atom, IntImm(coef, dt), dt)


def from_linear(lin: Linear) -> PrimExpr:
    """Rebuild an expression: positive terms first, then subtracted ones, the constant last."""
    dt = lin.dtype
    const = wrap_int(lin.const, dt)
    pos = [(a, c) for a, c in lin.terms.items() if c > 0]
    neg = [(a, -c) for a, c in lin.terms.items() if c < 0]
    if not pos and not neg:
        return IntImm(const, dt)
    out: PrimExpr | None = None
    for atom, coef in pos:
        t = _term(atom, coef, dt)
        out = t if out is None else BinOp("add", out, t, dt)
    if out is None:
        if const > 0:
            out = IntImm(const, dt)
            const = 0
        else:
            out = IntImm(0, dt)
    for atom, coef in neg:
        out = BinOp("sub", out, _term(atom, coef, dt), dt)
    if const > 0:
        out = BinOp("add", out, IntImm(const, dt), dt)
    elif const < 0 and wrap_int(-const, dt) == -const:
        out = BinOp("sub", out, IntImm(-const, dt), dt)
    elif const < 0:
        out = BinOp("add", out, IntImm(const, dt), dt)
    return out
