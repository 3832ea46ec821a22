"""Property tests: simplification preserves the value of random integer expressions."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tirc.ir.arith import Analyzer, expr_size, simplify
from tirc.ir.arith.rewrite import Rewriter
from tirc.ir.dtype import BOOL, INT32
from tirc.ir.expr import BinOp, Call, IntImm, Not, PrimExpr, Select, Var

X, Y, Z = Var("x"), Var("y"), Var("z")
VARS = (X, Y, Z)

_INT_OPS = ["add", "sub", "mul", "floordiv", "floormod", "truncdiv", "truncmod", "min", "max"]
_CMP_OPS = ["lt", "le", "gt", "ge", "eq", "ne"]


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def evaluate(e: PrimExpr, env: dict[Var, int]) -> int:
    """An independent reference evaluator (floor semantics for // and %)."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, Not):
        return int(not evaluate(e.a, env))
    if isinstance(e, Select):
        return evaluate(e.true_value if evaluate(e.condition, env) else e.false_value, env)
    if isinstance(e, Call) and e.op == "if_then_else":
        c, t, f = e.args
        return evaluate(t if evaluate(c, env) else f, env)
    assert isinstance(e, BinOp), e
    a, b = evaluate(e.a, env), evaluate(e.b, env)
    table = {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "floordiv": lambda: a // b, "floormod": lambda: a % b,
        "truncdiv": lambda: _tdiv(a, b), "truncmod": lambda: a - b * _tdiv(a, b),
        "min": lambda: min(a, b), "max": lambda: max(a, b),
        "lt": lambda: int(a < b), "le": lambda: int(a <= b), "gt": lambda: int(a > b),
        "ge": lambda: int(a >= b), "eq": lambda: int(a == b), "ne": lambda: int(a != b),
        "and": lambda: int(bool(a) and bool(b)), "or": lambda: int(bool(a) or bool(b)),
    }
    return table[e.op]()


def int_exprs() -> st.SearchStrategy[PrimExpr]:
    leaves = st.one_of(st.sampled_from(VARS), st.integers(-9, 9).map(IntImm),
                       st.sampled_from([2, 4, 8, 16]).map(IntImm))

    def extend(children: st.SearchStrategy[PrimExpr]) -> st.SearchStrategy[PrimExpr]:
        arith = st.builds(lambda op, a, b: BinOp(op, a, b, INT32),
                          st.sampled_from(_INT_OPS), children, children)
        cmp = st.builds(lambda op, a, b: BinOp(op, a, b, BOOL),
                        st.sampled_from(_CMP_OPS), children, children)
        sel = st.builds(lambda c, t, f: Select(c, t, f, INT32), cmp, children, children)
        return st.one_of(arith, arith, arith, sel)

    return st.recursive(leaves, extend, max_leaves=8)


@st.composite
def ranges(draw: st.DrawFn) -> dict[Var, tuple[int, int]]:
    out = {}
    for v in VARS:
        lo = draw(st.integers(-6, 6))
        out[v] = (lo, lo + draw(st.integers(0, 6)))
    return out


def assignments(bounds: dict[Var, tuple[int, int]]) -> Iterator[dict[Var, int]]:
    """Every assignment of the variables within their (small) ranges."""
    spans = [range(bounds[v][0], bounds[v][1] + 1) for v in VARS]
    for values in itertools.product(*spans):
        yield dict(zip(VARS, values))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_exprs(), ranges())
def test_simplify_preserves_value(e: PrimExpr, bounds: dict) -> None:
    out = simplify(e, bounds)
    assert expr_size(out) <= expr_size(e)
    for env in assignments(bounds):
        try:
            want = evaluate(e, env)
        except ZeroDivisionError:
            continue
        assert evaluate(out, env) == want, (e, out, env)


@settings(max_examples=300, deadline=None)
@given(int_exprs(), st.data())
def test_simplify_without_bounds_preserves_value(e: PrimExpr, data: st.DataObject) -> None:
    out = simplify(e)
    for _ in range(6):
        env = {v: data.draw(st.integers(-40, 40)) for v in VARS}
        try:
            want = evaluate(e, env)
        except ZeroDivisionError:
            continue
        assert evaluate(out, env) == want, (e, out, env)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_exprs(), ranges(), st.booleans())
def test_one_rewrite_reaches_the_normal_form(e: PrimExpr, bounds: dict, bound: bool) -> None:
    """Rewriter.simplify runs one round: rewriting its result again changes nothing, with
    and without bounds on the variables."""
    an = Analyzer()
    if bound:
        for v, b in bounds.items():
            an.bind(v, b)
    rewriter = Rewriter(an)
    once = rewriter.visit(e)
    twice = rewriter.visit(once)
    assert twice is once or twice == once, (e, once, twice)


@settings(max_examples=200, deadline=None)
@given(int_exprs(), ranges())
def test_const_int_bound_contains_values(e: PrimExpr, bounds: dict) -> None:
    an = Analyzer()
    for v, b in bounds.items():
        an.bind(v, b)
    lo, hi = an.const_int_bound(e)
    for env in assignments(bounds):
        try:
            value = evaluate(e, env)
        except ZeroDivisionError:
            continue
        assert lo is None or lo <= value, (e, env, lo)
        assert hi is None or value <= hi, (e, env, hi)


@settings(max_examples=200, deadline=None)
@given(int_exprs(), ranges(), st.data())
def test_can_prove_is_sound(e: PrimExpr, bounds: dict, data: st.DataObject) -> None:
    cond = BinOp("le", e, IntImm(data.draw(st.integers(-20, 20))), BOOL)
    an = Analyzer()
    for v, b in bounds.items():
        an.bind(v, b)
    if not an.can_prove(cond):
        return
    for env in assignments(bounds):
        try:
            assert evaluate(cond, env) == 1, (cond, env)
        except ZeroDivisionError:
            continue
