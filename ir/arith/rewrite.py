"""The rewriting simplifier: constant folding, canonical sums, div/mod, min/max, comparisons.

Children are simplified first; each node then tries its rules and keeps a rewrite only when it
is not structurally larger than the node it replaces, so simplification terminates and never
grows an expression. Integer rules go through the linear form (`linear.py`); float arithmetic
is only folded when every operand is a constant, never reassociated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tirc.ir import intrinsics as intrin
from tirc.ir.arith.bounds import bound_mul
from tirc.ir.arith.fold import fold_binop, fold_cast, is_false, is_true
from tirc.ir.arith.linear import Linear, from_linear, is_index_dtype
from tirc.ir.dtype import BOOL, DType, int_range
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Var,
)

if TYPE_CHECKING:
    from tirc.ir.arith.analyzer import Analyzer

# `Rewriter.visit_<Class>` by expression class (None: returned unchanged), looked up once.
_VISIT_METHODS: dict[type, Callable[[Rewriter, Any], PrimExpr] | None] = {}
_FLIP = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq"}
# Expression classes `expr_size` counts as one node without looking inside.
_SIZE_LEAVES = frozenset({Var, IntImm, FloatImm, StringImm})


def expr_size(e: PrimExpr, memo: dict[int, tuple[PrimExpr, int]] | None = None) -> int:
    """The number of expression nodes in `e` (what "structurally smaller" measures), counting
    a shared sub-expression once per path to it; `memo` (node id -> (node, size)) remembers
    the sizes of sub-expressions seen before."""
    if type(e) in _SIZE_LEAVES:
        return 1  # most calls: a variable or constant (never memoised)
    if memo is not None:
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
    if isinstance(e, BinOp):
        size = 1 + expr_size(e.a, memo) + expr_size(e.b, memo)
    elif isinstance(e, (Not, Cast)):
        size = 1 + expr_size(e.a if isinstance(e, Not) else e.value, memo)
    elif isinstance(e, Select):
        size = (1 + expr_size(e.condition, memo) + expr_size(e.true_value, memo)
                + expr_size(e.false_value, memo))
    elif isinstance(e, Call):
        size = 1 + sum(expr_size(a, memo) for a in e.args)
    elif isinstance(e, BufferLoad):
        size = 1 + sum(expr_size(i, memo) for i in e.indices)
    elif isinstance(e, Ramp):
        size = 1 + expr_size(e.base, memo) + expr_size(e.stride, memo)
    elif isinstance(e, Broadcast):
        size = 1 + expr_size(e.value, memo)
    elif isinstance(e, Let):
        size = 1 + expr_size(e.value, memo) + expr_size(e.body, memo)
    elif isinstance(e, Shuffle):
        size = 1 + sum(expr_size(v, memo) for v in e.vectors)
    else:
        return 1
    if memo is not None:
        memo[id(e)] = (e, size)
    return size


def _smallest(*cands: PrimExpr, an: Analyzer | None = None) -> PrimExpr:
    """The first of the smallest candidates (sizes memoised by `an` when given)."""
    size_of = expr_size if an is None else an.expr_size
    best = cands[0]
    size = size_of(best)
    for c in cands[1:]:
        s = size_of(c)
        if s < size:
            best, size = c, s
    return best


def _bool(value: bool) -> PrimExpr:
    return IntImm(1 if value else 0, BOOL)


def _coef_gcd(lin: Linear, c: int) -> int:
    g = c
    for coef in lin.terms.values():
        g = math.gcd(g, coef)
    return math.gcd(g, lin.const)


def _divided(lin: Linear, g: int) -> Linear:
    return Linear(lin.dtype, {a: k // g for a, k in lin.terms.items()}, lin.const // g)


class Rewriter:
    """One simplification run over an expression, using an Analyzer's knowledge."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.an = analyzer

    def simplify(self, e: PrimExpr) -> PrimExpr:
        """One rewrite of `e`, bottom-up; `e` itself when the result would be structurally
        larger. One round reaches the normal form (a second changes nothing: checked on random
        expressions in tests/ir/test_arith_property.py), so no confirming round is run: it
        took a third of the simplifier's time and, over every sample, never changed a result."""
        new = self.visit(e)
        if new is e:
            return e
        return new if self.an.expr_size(new) <= self.an.expr_size(e) else e

    # ---- traversal -------------------------------------------------------------------

    def visit(self, e: PrimExpr) -> PrimExpr:
        """`e` rewritten; memoised per node for the Analyzer's current knowledge (a shared
        sub-expression is rewritten once)."""
        cls = type(e)
        try:
            method = _VISIT_METHODS[cls]
        except KeyError:
            method = _VISIT_METHODS[cls] = getattr(Rewriter, "visit_" + cls.__name__, None)
        if method is None:
            return e
        memo = self.an.memo_for(e).visited
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = method(self, e)
        memo[id(e)] = (e, out)
        self.an.count_memo_entry()
        return out

    def visit_BinOp(self, e: BinOp) -> PrimExpr:
        a = self.visit(e.a)
        b = self.visit(e.b)
        node = e if a is e.a and b is e.b else BinOp(e.op, a, b, e.dtype, span=e.span)
        folded = fold_binop(e.op, a, b, e.dtype)
        if folded is not None:
            return folded
        if e.op in ("and", "or"):
            return self.logic(node)
        if e.op in _FLIP:
            return self.compare(node)
        if not is_index_dtype(e.dtype) or a.dtype != e.dtype or b.dtype != e.dtype:
            return node
        rule = getattr(self, "rule_" + e.op, None)
        if rule is None:
            return node
        new = rule(node)
        return node if new is node else _smallest(new, node, an=self.an)

    def visit_Not(self, e: Not) -> PrimExpr:
        a = self.visit(e.a)
        if isinstance(a, IntImm):
            return _bool(a.value == 0)
        if isinstance(a, Not):
            return a.a
        if isinstance(a, BinOp) and a.op in _FLIP and is_index_dtype(a.a.dtype):
            return self.compare(BinOp(_FLIP[a.op], a.a, a.b, a.dtype, span=a.span))
        return e if a is e.a else Not(a, e.dtype, span=e.span)

    def visit_Select(self, e: Select) -> PrimExpr:
        c = self.visit(e.condition)
        t = self.visit(e.true_value)
        f = self.visit(e.false_value)
        if is_true(c):
            return t
        if is_false(c):
            return f
        if t == f:
            return t
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return Select(c, t, f, e.dtype, span=e.span)

    def visit_Cast(self, e: Cast) -> PrimExpr:
        v = self.visit(e.value)
        if v.dtype == e.dtype:
            return v
        folded = fold_cast(v, e.dtype)
        if folded is not None:
            return folded
        if isinstance(v, Cast) and v.value.dtype == e.dtype and e.dtype.is_int and \
                v.dtype.is_int and self._fits(v.value, v.dtype):
            return v.value  # int64(int32(x)) is x when x's values fit in int32
        if isinstance(v, Cast) and v.value.dtype.is_int and v.dtype.is_int and \
                e.dtype.is_int and v.dtype.bits >= v.value.dtype.bits and \
                e.dtype.bits >= v.value.dtype.bits and self._fits(v.value, v.dtype):
            return Cast(v.value, e.dtype, span=e.span)  # through a type that loses nothing
        if isinstance(v, BinOp) and v.op in ("add", "sub", "mul") and e.dtype.is_int and \
                v.dtype.is_int and e.dtype.bits > v.dtype.bits and e.dtype.kind == v.dtype.kind \
                and self._exact_in(v, v.dtype):
            # widening a sum that does not overflow: widen its operands (int64(int32(x) + 31)
            # becomes x + 31 when x is an int64 index)
            wide = BinOp(v.op, self.visit(Cast(v.a, e.dtype)), self.visit(Cast(v.b, e.dtype)),
                         e.dtype, span=e.span)
            return self.visit(wide)
        return e if v is e.value else Cast(v, e.dtype, span=e.span)

    def _exact_in(self, v: BinOp, dt: DType) -> bool:
        """Whether `v` (an add, sub or mul) never wraps in `dt`: its operands' bounds give a
        result inside the dtype's range (the bound of `v` itself is clipped to that range when
        it may wrap, so it cannot tell)."""
        a, b = self.an.bound_of(v.a), self.an.bound_of(v.b)
        if None in a or None in b:
            return False
        if v.op == "mul":
            lo, hi = bound_mul(a, b)
        elif v.op == "add":
            lo, hi = a[0] + b[0], a[1] + b[1]  # type: ignore[operator]
        else:
            lo, hi = a[0] - b[1], a[1] - b[0]  # type: ignore[operator]
        return self._fits_range(lo, hi, dt)

    def _fits(self, x: PrimExpr, dt: DType) -> bool:
        """Whether every value `x` takes (by the analyzer's bounds) is one of `dt`'s."""
        return self._fits_range(*self.an.bound_of(x), dt)

    @staticmethod
    def _fits_range(lo: int | None, hi: int | None, dt: DType) -> bool:
        """Whether [lo, hi] (None: unknown) lies inside integer dtype `dt`'s range."""
        tlo, thi = int_range(dt)
        return lo is not None and hi is not None and tlo <= lo and hi <= thi

    def visit_Call(self, e: Call) -> PrimExpr:
        args = tuple(self.visit(a) for a in e.args)
        if e.op == intrin.IF_THEN_ELSE and len(args) == 3:
            if is_true(args[0]):
                return args[1]
            if is_false(args[0]):
                return args[2]
            if args[1] == args[2]:
                return args[1]
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return Call(e.op, args, e.dtype, span=e.span)

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        if all(x is y for x, y in zip(idx, e.indices)):
            return e
        return BufferLoad(e.buffer, idx, e.dtype, span=e.span)

    def visit_Ramp(self, e: Ramp) -> PrimExpr:
        base = self.visit(e.base)
        stride = self.visit(e.stride)
        if base is e.base and stride is e.stride:
            return e
        return Ramp(base, stride, e.lanes, e.dtype, span=e.span)

    def visit_Broadcast(self, e: Broadcast) -> PrimExpr:
        v = self.visit(e.value)
        return e if v is e.value else Broadcast(v, e.lanes, e.dtype, span=e.span)

    def visit_Shuffle(self, e: Shuffle) -> PrimExpr:
        vectors = tuple(self.visit(v) for v in e.vectors)
        if len(vectors) == 1 and e.indices == tuple(range(vectors[0].dtype.lanes)):
            return vectors[0]  # every lane of one vector, in order
        if all(x is y for x, y in zip(vectors, e.vectors)):
            return e
        return Shuffle(vectors, e.indices, e.dtype, span=e.span)

    def visit_Let(self, e: Let) -> PrimExpr:
        value = self.visit(e.value)
        with self.an.scope():
            self.an.bind(e.var, value)
            body = self.visit(e.body)
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body, e.dtype, span=e.span)

    # ---- integer arithmetic ----------------------------------------------------------

    def canonical(self, lin: Linear) -> PrimExpr:
        """Rebuild a linear form after recombining `(x // c) * c + x % c` into `x`."""
        self.combine_divmod(lin)
        return from_linear(lin)

    def combine_divmod(self, lin: Linear) -> None:
        """Rewrite `m * (A // c)` with `A = c * (A // c) + A % c` when that removes terms."""
        changed = True
        while changed:
            changed = False
            for atom, coef in list(lin.terms.items()):
                if not (isinstance(atom, BinOp) and atom.op == "floordiv"
                        and isinstance(atom.b, IntImm) and atom.b.value > 0):
                    continue
                c = atom.b.value
                if coef % c != 0 or atom.a.dtype != lin.dtype:
                    continue
                k = coef // c
                trial = lin.copy()
                trial.add_term(atom, -coef)
                trial.add(self.an.to_linear(atom.a), k)
                trial.add_term(BinOp("floormod", atom.a, atom.b, lin.dtype), -k)
                if len(trial.terms) < len(lin.terms):
                    lin.terms, lin.const = trial.terms, trial.const
                    changed = True
                    break

    def rule_add(self, e: BinOp) -> PrimExpr:
        return self.canonical(self.an.to_linear(e))

    rule_sub = rule_add
    rule_mul = rule_add

    def quotient_if_fixed(self, lin: Linear, c: int) -> int | None:
        """`lin // c` when the bounds of `lin` put it in one multiple of c."""
        lo, hi = self.an.linear_bound(lin)
        if lo is not None and hi is not None and lo // c == hi // c:
            return lo // c
        return None

    def rule_floordiv(self, e: BinOp) -> PrimExpr:
        if isinstance(e.b, IntImm):
            c = e.b.value
            if c == 1:
                return e.a
            if c > 0:
                return self.div_const(self.an.to_linear(e.a), c)
            return e
        if self.nonneg_below(e.a, e.b):
            return IntImm(0, e.dtype)
        return e

    def div_const(self, lin: Linear, c: int) -> PrimExpr:
        """`lin // c` for c > 0: multiples of c leave the division, fixed quotients fold."""
        dt = lin.dtype
        g = _coef_gcd(lin, c)
        if g > 1:
            lin, c = _divided(lin, g), c // g
            if c == 1:
                return self.canonical(lin)
        quot = Linear(dt)
        rest = Linear(dt)
        for atom, coef in lin.terms.items():
            if coef % c == 0:
                quot.add_term(atom, coef // c)
            else:
                rest.add_term(atom, coef)
        whole = rest.copy()
        whole.const = lin.const
        fixed = self.quotient_if_fixed(whole, c)
        if fixed is not None:
            quot.const += fixed
            return self.canonical(quot)
        q0, r0 = divmod(lin.const, c)
        split = rest.copy()
        split.const = r0
        fixed = self.quotient_if_fixed(split, c)
        if fixed is not None:
            quot.const += q0 + fixed
            return self.canonical(quot)
        cand_whole = quot.copy()
        cand_whole.add_term(self.div_atom(whole, c), 1)
        cand_split = quot.copy()
        cand_split.const += q0
        cand_split.add_term(self.div_atom(split, c), 1)
        return _smallest(self.canonical(cand_whole), self.canonical(cand_split), an=self.an)

    def div_atom(self, lin: Linear, c: int) -> PrimExpr:
        """The atom `lin // c`, merging a nested `(x // a) // c` into `x // (a * c)`."""
        dt = lin.dtype
        inner = lin.single_atom()
        if (isinstance(inner, BinOp) and inner.op == "floordiv" and isinstance(inner.b, IntImm)
                and inner.b.value > 0):
            return BinOp("floordiv", inner.a, IntImm(inner.b.value * c, dt), dt)
        return BinOp("floordiv", from_linear(lin), IntImm(c, dt), dt)

    def rule_floormod(self, e: BinOp) -> PrimExpr:
        if isinstance(e.b, IntImm):
            c = e.b.value
            if c == 1:
                return IntImm(0, e.dtype)
            if c > 0:
                return self.mod_const(self.an.to_linear(e.a), c)
            return e
        if self.nonneg_below(e.a, e.b):
            return e.a
        return e

    def mod_const(self, lin: Linear, c: int) -> PrimExpr:
        """`lin % c` for c > 0: multiples of c drop out, a known range removes the `%`."""
        dt = lin.dtype
        g = _coef_gcd(lin, c)
        if g == c:
            return IntImm(0, dt)
        cands: list[PrimExpr] = []
        if g > 1:
            inner = self.an.to_linear(self.mod_const(_divided(lin, g), c // g))
            cands.append(from_linear(inner.scaled(g)))
        rest = Linear(dt, {}, lin.const % c)
        for atom, coef in lin.terms.items():
            reduced = (abs(coef) % c) * (1 if coef > 0 else -1)
            if reduced:
                rest.add_term(atom, reduced)
        if rest.is_const:
            return IntImm(rest.const, dt)
        for trial in (rest, _with_const(rest, lin.const)):
            fixed = self.quotient_if_fixed(trial, c)
            if fixed is not None:
                out = trial.copy()
                out.const -= fixed * c
                return self.canonical(out)
        inner_atom = rest.single_atom()
        if (isinstance(inner_atom, BinOp) and inner_atom.op == "floormod"
                and isinstance(inner_atom.b, IntImm) and inner_atom.b.value % c == 0):
            cands.append(self.mod_const(self.an.to_linear(inner_atom.a), c))
        cands.append(BinOp("floormod", from_linear(rest), IntImm(c, dt), dt))
        return _smallest(*reversed(cands), an=self.an)

    def trunc_rule(self, e: BinOp, floor_op: str) -> PrimExpr:
        """Truncating division equals flooring division for a nonnegative dividend."""
        b_lo = self.an.bound_of(e.b)[0]
        if b_lo is not None and b_lo > 0 and self.nonneg(e.a):
            floor = BinOp(floor_op, e.a, e.b, e.dtype, span=e.span)
            return _smallest(getattr(self, "rule_" + floor_op)(floor), floor, an=self.an)
        return e

    def rule_truncdiv(self, e: BinOp) -> PrimExpr:
        return self.trunc_rule(e, "floordiv")

    rule_div = rule_truncdiv

    def rule_truncmod(self, e: BinOp) -> PrimExpr:
        return self.trunc_rule(e, "floormod")

    def rule_min(self, e: BinOp) -> PrimExpr:
        return self.min_max(e, pick_a_when_le=True)

    def rule_max(self, e: BinOp) -> PrimExpr:
        return self.min_max(e, pick_a_when_le=False)

    def min_max(self, e: BinOp, pick_a_when_le: bool) -> PrimExpr:
        if e.a == e.b:
            return e.a
        lo, hi = self.diff_bound(e.a, e.b)
        if hi is not None and hi <= 0:
            return e.a if pick_a_when_le else e.b
        if lo is not None and lo >= 0:
            return e.b if pick_a_when_le else e.a
        return e

    # ---- comparisons and logic -------------------------------------------------------

    def diff_bound(self, a: PrimExpr, b: PrimExpr) -> tuple[int | None, int | None]:
        diff = self.an.to_linear(a)
        diff.add(self.an.to_linear(b), -1)
        return self.an.linear_bound(diff)

    def nonneg(self, e: PrimExpr) -> bool:
        lo = self.an.bound_of(e)[0]
        return lo is not None and lo >= 0

    def nonneg_below(self, a: PrimExpr, b: PrimExpr) -> bool:
        """0 <= a < b (so a // b is 0 and a % b is a)."""
        hi = self.diff_bound(a, b)[1]
        return self.nonneg(a) and hi is not None and hi < 0

    def compare(self, e: BinOp) -> PrimExpr:
        a, b = e.a, e.b
        if not (is_index_dtype(a.dtype) and a.dtype == b.dtype):
            return e
        diff = self.an.to_linear(a)
        diff.add(self.an.to_linear(b), -1)
        lo, hi = self.an.linear_bound(diff)
        decided = _decide(e.op, lo, hi)
        if decided is not None:
            return _bool(decided)
        atom = _single_unit_atom(diff)
        if atom is not None:
            moved = BinOp(e.op, atom, IntImm(-diff.const, a.dtype), e.dtype, span=e.span)
            return _smallest(moved, e, an=self.an)
        return e

    def logic(self, e: BinOp) -> PrimExpr:
        a, b = e.a, e.b
        if e.op == "and":
            if is_true(a):
                return b
            if is_true(b):
                return a
            if is_false(a) or is_false(b):
                return _bool(False)
        else:
            if is_false(a):
                return b
            if is_false(b):
                return a
            if is_true(a) or is_true(b):
                return _bool(True)
        if a == b:
            return a
        return e


def _with_const(lin: Linear, const: int) -> Linear:
    out = lin.copy()
    out.const = const
    return out


def _single_unit_atom(lin: Linear) -> PrimExpr | None:
    """The atom of `1 * atom + k`, for moving the constant across a comparison."""
    if len(lin.terms) == 1:
        atom, coef = next(iter(lin.terms.items()))
        if coef == 1:
            return atom
    return None


def _decide(op: str, lo: int | None, hi: int | None) -> bool | None:
    """The value of `d <op> 0` for d in [lo, hi], when the bounds settle it."""
    if op == "lt":
        return True if hi is not None and hi < 0 else False if lo is not None and lo >= 0 else None
    if op == "le":
        return True if hi is not None and hi <= 0 else False if lo is not None and lo > 0 else None
    if op == "gt":
        return True if lo is not None and lo > 0 else False if hi is not None and hi <= 0 else None
    if op == "ge":
        return True if lo is not None and lo >= 0 else False if hi is not None and hi < 0 else None
    settled = lo is not None and lo == hi
    differs = (hi is not None and hi < 0) or (lo is not None and lo > 0)
    if op == "eq":
        return (lo == 0) if settled else (False if differs else None)
    return (lo != 0) if settled else (True if differs else None)
