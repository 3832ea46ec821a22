"""The Analyzer's memo: an answer is reused only while what it depends on is still known."""

from __future__ import annotations

from tirc.ir.arith import Analyzer, expr_size
from tirc.ir.buffer import Range
from tirc.ir.dtype import dtype
from tirc.ir.expr import IntImm, PrimExpr, Var, binop, select
from tirc.ir.printer import print_node

I64 = dtype("int64")


def _text(e: PrimExpr) -> str:
    return print_node(e)


def test_same_expression_gets_the_answer_of_the_current_bounds_after_a_scope() -> None:
    x = Var("x")
    cond = binop("lt", x, 10)
    an = Analyzer()
    with an.scope():
        an.bind(x, Range(IntImm(0), IntImm(5)))
        assert _text(an.simplify(cond)) == "True"
    with an.scope():
        an.bind(x, Range(IntImm(0), IntImm(20)))
        assert _text(an.simplify(cond)) == "x < 10"
    with an.scope():
        an.bind(x, Range(IntImm(0), IntImm(5)))
        assert _text(an.simplify(cond)) == "True"


def test_bound_reached_through_another_variable_is_not_reused_after_that_one_changes() -> None:
    n, i = Var("n", I64), Var("i", I64)
    below = binop("lt", i, IntImm(100, I64))  # mentions i only; i's bound mentions n
    an = Analyzer()
    an.bind(n, (0, 100))
    an.bind(i, Range(IntImm(0, I64), n))
    assert _text(an.simplify(below)) == "True"
    with an.scope():
        an.bind(n, (0, 1000))
        assert _text(an.simplify(below)) == "i < T.int64(100)"
    assert _text(an.simplify(below)) == "True"


def test_expression_without_the_new_loop_variable_keeps_its_answer_inside_the_loop() -> None:
    n, j = Var("n", I64), Var("j", I64)
    quotient = binop("floordiv", binop("add", n, IntImm(7, I64)), IntImm(8, I64))
    an = Analyzer()
    an.bind(n, (1, 8))
    outside = an.simplify(quotient)
    with an.scope():
        an.bind(j, Range(IntImm(0, I64), IntImm(4, I64)))
        assert an.simplify(quotient) is outside
        assert _text(an.simplify(binop("lt", j, IntImm(4, I64)))) == "True"
    assert _text(outside) == "T.int64(1)"


def test_constraint_answers_end_with_the_constraint() -> None:
    x = Var("x")
    cond = binop("lt", x, 8)
    an = Analyzer()
    an.bind(x, (0, 100))
    with an.constraint(binop("lt", x, 4)):
        assert _text(an.simplify(cond)) == "True"
    assert _text(an.simplify(cond)) == "x < 8"


def test_binding_made_inside_a_constraint_outlives_it_and_is_seen_afterwards() -> None:
    x, y = Var("x"), Var("y")
    cond = binop("lt", y, 4)
    an = Analyzer()
    an.bind(x, (0, 100))
    assert _text(an.simplify(cond)) == "y < 4"
    with an.constraint(binop("lt", x, 4)):
        an.bind(y, Range(IntImm(0), IntImm(4)))
    assert _text(an.simplify(cond)) == "True"


def test_shared_subexpression_is_counted_once_per_path_and_simplified_alike() -> None:
    n = Var("n", I64)
    shared = select(binop("eq", n, IntImm(1, I64)), binop("mul", n, IntImm(8, I64)),
                    binop("floordiv", binop("add", n, IntImm(7, I64)), IntImm(8, I64)))
    dag = binop("add", shared, shared)
    assert expr_size(dag) == 1 + 2 * expr_size(shared)
    an = Analyzer()
    an.bind(n, (1, 1))
    assert _text(an.simplify(dag)) == "n * T.int64(16)"
    fresh = Analyzer()
    fresh.bind(n, (1, 1))
    assert _text(fresh.simplify(shared)) == "n * T.int64(8)"
