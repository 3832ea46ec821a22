"""The Analyzer: what is known about variables (loop ranges, lets, branch conditions).

Each variable has lists of inclusive lower and upper bounds, which may be symbolic
(`i` in a loop over `range(n)` has upper bound `n - 1`). Constant bounds come from interval
arithmetic; a comparison such as `i < n` is proved by substituting each variable's symbolic
bound into the linear form of the difference (`i - n <= (n - 1) - n = -1`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tirc.ir.arith.bounds import UNBOUNDED, Bound, const_int_bound, intersect
from tirc.ir.arith.linear import Linear, from_linear, is_index_dtype, to_linear
from tirc.ir.buffer import Range
from tirc.ir.expr import BinOp, IntImm, Not, PrimExpr, Var, binop

BoundLike = int | PrimExpr | None

_SUBSTITUTION_ROUNDS = 4
_MAX_FORMS = 24


@dataclass
class VarInfo:
    """Inclusive lower and upper bounds of one variable (every one of them holds)."""

    lo: list[PrimExpr] = field(default_factory=list)
    hi: list[PrimExpr] = field(default_factory=list)

    def copy(self) -> VarInfo:
        return VarInfo(list(self.lo), list(self.hi))


def _as_bound_expr(b: BoundLike, like: Var) -> PrimExpr | None:
    if b is None or isinstance(b, PrimExpr):
        return b
    return IntImm(int(b), like.dtype)


class Analyzer:
    """Variable bounds plus the simplifier and prover that use them.

    `bind(var, Range(min, extent))` records `min <= var <= min + extent - 1`;
    `bind(var, (lo, hi))` records inclusive bounds (None: unbounded);
    `bind(var, expr)` records `var == expr` (a let).
    """

    def __init__(self) -> None:
        self._vars: dict[Var, VarInfo] = {}
        self._busy: set[int] = set()

    # ---- what is known ---------------------------------------------------------------

    def bind(self, var: Var, value: Range | tuple[BoundLike, BoundLike] | PrimExpr | int) -> None:
        """Record the range or value of `var`, replacing what was known about it."""
        if isinstance(value, Range):
            last = binop("sub", binop("add", value.min, value.extent), 1)
            lo: PrimExpr | None = self.simplify(value.min)
            hi: PrimExpr | None = self.simplify(last)
        elif isinstance(value, tuple):
            lo = _as_bound_expr(value[0], var)
            hi = _as_bound_expr(value[1], var)
        else:
            lo = hi = _as_bound_expr(value, var)
        self._vars[var] = VarInfo([lo] if lo is not None else [], [hi] if hi is not None else [])

    def unbind(self, var: Var) -> None:
        self._vars.pop(var, None)

    def is_bound(self, var: Var) -> bool:
        return var in self._vars

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Bindings made inside the `with` are forgotten at its end."""
        saved = {v: info.copy() for v, info in self._vars.items()}
        try:
            yield
        finally:
            self._vars = saved

    @contextmanager
    def constraint(self, cond: PrimExpr) -> Iterator[None]:
        """Assume `cond` inside the `with` (a branch condition): `i < n - 4` bounds `i`."""
        saved: dict[Var, VarInfo | None] = {}
        for var, is_upper, bound in self._facts(cond):
            if var not in saved:
                saved[var] = self._vars[var].copy() if var in self._vars else None
            info = self._vars.setdefault(var, VarInfo())
            (info.hi if is_upper else info.lo).append(bound)
        try:
            yield
        finally:
            for var, info in saved.items():
                if info is None:
                    self._vars.pop(var, None)
                else:
                    self._vars[var] = info

    def _facts(self, cond: PrimExpr) -> Iterator[tuple[Var, bool, PrimExpr]]:
        """Bounds on single variables implied by a condition (conjunctions of comparisons)."""
        if isinstance(cond, BinOp) and cond.op == "and":
            yield from self._facts(cond.a)
            yield from self._facts(cond.b)
            return
        if isinstance(cond, Not) and isinstance(cond.a, BinOp) and cond.a.op in _NEGATE:
            a = cond.a
            cond = BinOp(_NEGATE[a.op], a.a, a.b, a.dtype)
        if not (isinstance(cond, BinOp) and cond.op in _NEGATE
                and is_index_dtype(cond.a.dtype) and cond.a.dtype == cond.b.dtype):
            return
        diff = to_linear(cond.a)
        diff.add(to_linear(cond.b), -1)
        # Every fact is written as `m <= 0`.
        forms: list[Linear] = []
        if cond.op == "lt":
            forms.append(_plus(diff, 1))
        elif cond.op == "le":
            forms.append(diff)
        elif cond.op == "gt":
            forms.append(_plus(diff.scaled(-1), 1))
        elif cond.op == "ge":
            forms.append(diff.scaled(-1))
        elif cond.op == "eq":
            forms += [diff, diff.scaled(-1)]
        for m in forms:
            for atom, coef in m.terms.items():
                if isinstance(atom, Var) and coef in (1, -1):
                    rest = m.copy()
                    rest.add_term(atom, -coef)
                    if coef == 1:  # atom + rest <= 0  ->  atom <= -rest
                        yield atom, True, from_linear(rest.scaled(-1))
                    else:  # rest - atom <= 0  ->  atom >= rest
                        yield atom, False, from_linear(rest)

    # ---- bounds ----------------------------------------------------------------------

    def var_bound(self, var: Var) -> Bound:
        """Constant bounds of a variable from all of its (possibly symbolic) bounds."""
        info = self._vars.get(var)
        if info is None or id(var) in self._busy:
            return UNBOUNDED
        self._busy.add(id(var))
        try:
            lo: int | None = None
            hi: int | None = None
            for b in info.lo:
                v = self.const_int_bound(b)[0]
                if v is not None:
                    lo = v if lo is None else max(lo, v)
            for b in info.hi:
                v = self.const_int_bound(b)[1]
                if v is not None:
                    hi = v if hi is None else min(hi, v)
            return (lo, hi)
        finally:
            self._busy.discard(id(var))

    def const_int_bound(self, e: PrimExpr) -> Bound:
        """Inclusive constant bounds `(lo, hi)` of an integer expression; None: unbounded."""
        return const_int_bound(e, self.var_bound)

    def linear_bound(self, lin: Linear) -> Bound:
        """Bounds of a linear form, using symbolic variable bounds where they cancel."""
        return (self._side(lin, upper=False), self._side(lin, upper=True))

    def bound_of(self, e: PrimExpr) -> Bound:
        """Like const_int_bound, but proves through symbolic bounds (`i - n` <= -1)."""
        if not is_index_dtype(e.dtype):
            return self.const_int_bound(e)
        return intersect(self.linear_bound(to_linear(e)), self.const_int_bound(e))

    def _side(self, lin: Linear, upper: bool) -> int | None:
        """The best constant bound over `lin` and forms with variables replaced by their
        symbolic bounds, one variable at a time (a small breadth-first search)."""
        best: int | None = None
        frontier = [lin]
        seen: set[frozenset] = set()
        for _ in range(_SUBSTITUTION_ROUNDS + 1):
            following: list[Linear] = []
            for form in frontier:
                key = frozenset(form.terms.items()) | {("const", form.const)}
                if key in seen or len(seen) >= _MAX_FORMS:
                    continue
                seen.add(key)
                value = self._const_side(form, upper)
                if value is not None:
                    best = value if best is None else (min(best, value) if upper
                                                       else max(best, value))
                following.extend(self._substitutions(form, upper))
            frontier = following
        return best

    def _substitutions(self, form: Linear, upper: bool) -> list[Linear]:
        """`form` with one variable replaced by one of its symbolic bounds on the wanted side."""
        out = []
        for atom, coef in form.terms.items():
            info = self._vars.get(atom) if isinstance(atom, Var) else None
            if info is None:
                continue
            for cand in info.hi if (coef > 0) == upper else info.lo:
                if isinstance(cand, IntImm) or cand.dtype != form.dtype:
                    continue
                new = form.copy()
                new.add_term(atom, -coef)
                new.add(to_linear(cand), coef)
                out.append(new)
        return out

    def _const_side(self, lin: Linear, upper: bool) -> int | None:
        total = lin.const
        for atom, coef in lin.terms.items():
            lo, hi = self.const_int_bound(atom)
            b = (hi if coef > 0 else lo) if upper else (lo if coef > 0 else hi)
            if b is None:
                return None
            total += coef * b
        return total

    # ---- simplification and proofs ---------------------------------------------------

    def simplify(self, e: PrimExpr) -> PrimExpr:
        """An equivalent expression, never structurally larger than `e`."""
        from tirc.ir.arith.rewrite import Rewriter

        return Rewriter(self).simplify(e)

    def can_prove(self, cond: PrimExpr) -> bool:
        """True when `cond` holds for every value of the variables within their bounds."""
        result = self.simplify(cond)
        return isinstance(result, IntImm) and result.value != 0

    def can_prove_equal(self, a: PrimExpr, b: PrimExpr) -> bool:
        return self.can_prove(binop("eq", a, b))


_NEGATE = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq"}


def _plus(lin: Linear, k: int) -> Linear:
    out = lin.copy()
    out.const += k
    return out

