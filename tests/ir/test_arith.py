"""The arithmetic simplifier and analyzer: exact results for each rule."""

from __future__ import annotations

import numpy as np
import pytest
from tirc.ir.arith import Analyzer, can_prove, expr_size, simplify
from tirc.ir.arith.construct import fold
from tirc.ir.buffer import Range, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.expr import (
    BinOp,
    Cast,
    FloatImm,
    IntImm,
    Let,
    PrimExpr,
    Ramp,
    Var,
    binop,
    cast,
    const,
    if_then_else,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    select,
    shuffle,
    var,
)
from tirc.ir.printer import print_node

F32 = dtype("float32")
x, y, z, n, i = var("x"), var("y"), var("z"), var("n"), var("i")
c = var("c", "bool")
a = var("a", "float32")
I8, U8 = var("x_i8", "int8"), var("x_u8", "uint8")


def rng(lo: int, extent: PrimExpr | int) -> Range:
    return Range(const(lo), extent if isinstance(extent, PrimExpr) else const(extent))


def text(e: PrimExpr, bounds: dict | None = None) -> str:
    return print_node(simplify(e, bounds))


CASES = [
    # canonical sums: like terms collected, constants last
    (x * 2 + x - x * 3, None, "0"),
    (x + 3 + x, None, "x * 2 + 3"),
    (4 * i + y, None, "i * 4 + y"),
    ((0 - i) + n, None, "n - i"),
    (3 - x + 5, None, "8 - x"),
    (x * 0, None, "0"),
    ((x + 1) * 2 - 2, None, "x * 2"),
    # floor division and modulo
    ((x * 8 + y) // 8, None, "x + y // 8"),
    ((x * 8 + y) // 8, {y: rng(0, 8)}, "x"),
    ((x * 8 + y) % 8, None, "y % 8"),
    ((x * 8 + y) % 8, {y: rng(0, 8)}, "y"),
    (x % 1, None, "0"),
    (x // 1, None, "x"),
    ((x // 4) * 4 + x % 4, None, "x"),
    (x - (x // 4) * 4, None, "x % 4"),
    ((x // 4) // 8, None, "x // 32"),
    ((x % 16) % 8, None, "x % 8"),
    ((x * 4 + 4) // 8, None, "(x + 1) // 2"),
    ((x + 5) // 8, {x: (0, 2)}, "0"),
    ((x - 1) % 8, {x: (1, 8)}, "x - 1"),
    ((x * 4) % 8, {x: (0, 1)}, "x * 4"),
    (i // n, {i: rng(0, n)}, "0"),
    (i % n, {i: rng(0, n)}, "i"),
    (binop("truncdiv", i, 4), {i: (0, None)}, "i // 4"),
    (binop("truncmod", i, 4), {i: (0, None)}, "i % 4"),
    (binop("truncdiv", i, 4), None, "T.truncdiv(i, 4)"),
    # min / max with bounds
    (minimum(x, n), {x: (0, n - 1)}, "x"),
    (maximum(x, n), {x: (0, n - 1)}, "n"),
    (minimum(minimum(x, 4), 8), None, "T.min(x, 4)"),
    (minimum(x, x), None, "x"),
    (minimum(x, y), None, "T.min(x, y)"),
    # comparisons decided by bounds
    (i < 16, {i: rng(0, 16)}, "True"),
    (i < 15, {i: rng(0, 16)}, "i < 15"),
    (i >= 16, {i: rng(0, 16)}, "False"),
    (i < n, {i: rng(0, n)}, "True"),
    (i * 4 + y < n * 4, {i: rng(0, n), y: (0, 3)}, "True"),
    (i + 1 < 5, None, "i < 4"),
    ((x * 2).eq(x + x), None, "True"),
    ((x + 1).ne(x), None, "True"),
    (x + 1 <= x, None, "False"),
    # boolean logic
    (logical_and(c, const(True)), None, "c"),
    (logical_and(c, const(False)), None, "False"),
    (logical_or(c, const(False)), None, "c"),
    (logical_or(const(True), c), None, "True"),
    (logical_not(i < n), None, "i >= n"),
    (logical_not(logical_not(c)), None, "c"),
    (logical_and(c, c), None, "c"),
    # select and if_then_else
    (select(const(True), x, y), None, "x"),
    (if_then_else(const(False), x, y), None, "y"),
    (select(c, x, x), None, "x"),
    (if_then_else(i < 16, x, y), {i: rng(0, 16)}, "x"),
    # constant folding with dtype semantics
    (IntImm(-7) // IntImm(2), None, "-4"),
    (IntImm(-7) % IntImm(2), None, "1"),
    (binop("truncdiv", IntImm(-7), IntImm(2)), None, "-3"),
    (binop("truncmod", IntImm(-7), IntImm(2)), None, "-1"),
    (x // 0, None, "x // 0"),
    (IntImm(5) % IntImm(0), None, "5 % 0"),
    (BinOp("add", IntImm(2147483647), IntImm(1), dtype("int32")), None, "-2147483648"),
    (Cast(IntImm(300), dtype("int8")), None, "T.int8(44)"),
    (Cast(FloatImm(-2.7, F32), dtype("int32")), None, "-2"),
    # floats: constants fold in float32, nothing else
    (FloatImm(0.1, F32) + FloatImm(0.2, F32), None, "T.float32(0.30000001192092896)"),
    (a + FloatImm(0.0, F32), None, "a + T.float32(0.0)"),
    (a + FloatImm(1.0, F32) + FloatImm(2.0, F32), None, "a + T.float32(1.0) + T.float32(2.0)"),
    (a * FloatImm(1.0, F32) - a, None, "a * T.float32(1.0) - a"),
    (FloatImm(1.0, F32) / FloatImm(0.0, F32), None, "T.float32(1.0) / T.float32(0.0)"),
    # float floordiv/floormod/truncdiv/truncmod (TVM's): fold as the code computes them, and
    # the integer rules (x % 1 is 0, x // 1 is x, bounds) never apply to floats
    (FloatImm(-7.5, F32) // FloatImm(2.0, F32), None, "T.float32(-4.0)"),
    (FloatImm(-7.5, F32) % FloatImm(2.0, F32), None, "T.float32(0.5)"),
    (FloatImm(7.5, F32) % FloatImm(-2.0, F32), None, "T.float32(-0.5)"),
    (binop("truncdiv", FloatImm(-7.5, F32), FloatImm(2.0, F32)), None, "T.float32(-3.75)"),
    (binop("truncmod", FloatImm(-7.5, F32), FloatImm(2.0, F32)), None, "T.float32(-1.5)"),
    (binop("truncmod", FloatImm(7.5, F32), FloatImm(-2.0, F32)), None, "T.float32(1.5)"),
    (a % FloatImm(1.0, F32), None, "a % T.float32(1.0)"),
    (a // FloatImm(1.0, F32), None, "a // T.float32(1.0)"),
    (binop("truncmod", a, FloatImm(1.0, F32)), None, "T.truncmod(a, T.float32(1.0))"),
    ((a + a) % a, None, "(a + a) % a"),
    (FloatImm(1.0, F32) % FloatImm(0.0, F32), None, "T.float32(1.0) % T.float32(0.0)"),
    # lets
    (Let(y, x + 1, y * 2 - y, dtype("int32")), None, "T.Let(y, where={y: x + 1})"),
    # narrow and unsigned integers wrap: no rule that assumes they do not overflow applies
    (binop("floordiv", U8 * IntImm(3, U8.dtype), IntImm(3, U8.dtype)), None,
     "x_u8 * T.uint8(3) // T.uint8(3)"),
    (binop("floordiv", I8 * IntImm(2, I8.dtype), IntImm(2, I8.dtype)), None,
     "x_i8 * T.int8(2) // T.int8(2)"),
    (BinOp("gt", I8 + IntImm(1, I8.dtype), I8, dtype("bool")), None, "x_i8 + T.int8(1) > x_i8"),
    (Cast(U8 + IntImm(200, U8.dtype), dtype("uint32")), None,
     'T.Cast("uint32", x_u8 + T.uint8(200))'),
    (minimum(IntImm(0, dtype("int64")), Cast(Cast(I8, dtype("uint64")), dtype("int64"))), None,
     'T.min(T.int64(0), T.Cast("int64", T.Cast("uint64", x_i8)))'),
    # ... while int32 and int64 do not overflow (compiled code takes overflow as undefined)
    (x * 2 // 2, None, "x"),
    (BinOp("gt", x + 1, x, dtype("bool")), None, "True"),
]


@pytest.mark.parametrize(("expr", "bounds", "expected"), CASES,
                         ids=[print_node(e) for e, _, _ in CASES])
def test_simplify_rule(expr: PrimExpr, bounds: dict | None, expected: str) -> None:
    assert text(expr, bounds) == expected


def test_float32_fold_matches_numpy() -> None:
    out = simplify(FloatImm(0.1, F32) * FloatImm(3.0, F32))
    assert isinstance(out, FloatImm)
    assert out.value == float(np.float32(0.1) * np.float32(3.0))


def test_float_floormod_fold_is_tvms_formula_not_numpys_mod() -> None:
    """1 % 0.1 folds to 1 - floor(1 / 0.1) * 0.1 (what TVM's code computes), not np.mod."""
    one, tenth = np.float32(1.0), np.float32(0.1)
    out = simplify(FloatImm(1.0, F32) % FloatImm(0.1, F32))
    assert isinstance(out, FloatImm)
    assert out.value == float(one - np.floor(one / tenth) * tenth)
    assert np.float32(out.value) != np.mod(one, tenth)


def test_shuffle_of_one_vector_in_order_is_the_vector() -> None:
    ramp = Ramp(x, const(1), 4, dtype("int32x4"))
    assert simplify(shuffle([ramp], [0, 1, 2, 3])) == ramp
    kept = shuffle([ramp, y + 0], [4, 3])  # children simplify, the shuffle stays
    assert print_node(simplify(kept)) == "T.Shuffle([T.Ramp(x, 1, 4), y], [4, 3])"


def test_int64_expressions_keep_their_dtype() -> None:
    m = var("m", "int64")
    out = simplify(m * 2 + m - m * 3 + 5)
    assert isinstance(out, IntImm) and out.value == 5 and str(out.dtype) == "int64"


def test_buffer_load_indices_simplify() -> None:
    buf = make_buffer("A", (4, 4))
    load = buf.vload((x * 4 + y) // 4, (x * 4 + y) % 4)
    assert text(load, {y: (0, 3)}) == "A[x, y]"


def test_result_never_larger() -> None:
    e = (x + y) * 4
    out = simplify(e)
    assert print_node(out) == "(x + y) * 4"
    assert expr_size(out) <= expr_size(e)


def test_analyzer_const_int_bound() -> None:
    an = Analyzer()
    an.bind(n, (1, 64))
    an.bind(i, Range(const(0), n))
    assert an.const_int_bound(i) == (0, 63)
    assert an.const_int_bound(i // 4) == (0, 15)
    assert an.const_int_bound(i % 8) == (0, 7)
    assert an.const_int_bound(i * 2 - n) == (-64, 125)
    assert an.const_int_bound(x) == (None, None)
    assert an.const_int_bound(x % 8) == (0, 7)
    assert an.const_int_bound(minimum(x, 5)) == (None, 5)
    assert an.const_int_bound(c) == (0, 1)


def test_analyzer_proves_through_symbolic_bounds() -> None:
    an = Analyzer()
    an.bind(i, Range(const(0), n))
    an.bind(y, (0, 3))
    assert an.can_prove(i < n)
    assert an.can_prove(i * 4 + y < n * 4)
    assert an.can_prove(i - n <= -1)
    assert not an.can_prove(i < n - 1)
    assert an.can_prove_equal((i * 8 + y) // 8, i)
    assert not an.can_prove(x < 4)


def test_analyzer_constraint_scopes() -> None:
    an = Analyzer()
    an.bind(i, rng(0, 100))
    with an.constraint(i < 10):
        assert print_node(an.simplify(i < 20)) == "True"
        assert an.const_int_bound(i) == (0, 9)
    assert print_node(an.simplify(i < 20)) == "i < 20"
    with an.constraint(logical_not(i < n)):
        assert an.can_prove(n <= i)
    with an.constraint(logical_and(i >= 5, i <= 7)):
        assert an.const_int_bound(i) == (5, 7)


def test_analyzer_scope_forgets_bindings() -> None:
    an = Analyzer()
    with an.scope():
        an.bind(i, rng(0, 4))
        assert an.can_prove(i < 4)
    assert not an.is_bound(i)
    assert not an.can_prove(i < 4)


def test_bind_let_value() -> None:
    an = Analyzer()
    an.bind(x, (0, 7))
    an.bind(y, x * 2)
    assert an.const_int_bound(y) == (0, 14)
    assert an.can_prove(y - x * 2 <= 0)


def test_can_prove_function() -> None:
    assert can_prove(i < 16, {i: rng(0, 16)})
    assert not can_prove(i < 16)


def test_var_identity_not_name() -> None:
    other_x = Var("x")
    assert text(x - other_x) == "x - x"


def test_cast_of_an_integer_constant_wraps_into_the_dtype() -> None:
    """`T.Cast("uint64", T.int32(-2))` is the constant 2**64 - 2, which prints and parses
    back (it was an out-of-range uint64 -2, printed as text that does not parse)."""
    assert print_node(cast("uint64", IntImm(-2))) == "T.uint64(18446744073709551614)"
    assert print_node(cast("int8", IntImm(300))) == "T.int8(44)"
    assert print_node(cast("uint8", IntImm(-1))) == "T.uint8(255)"
    assert print_node(cast("bool", IntImm(-1))) == "True"


def test_fold_converts_integer_constants_and_keeps_other_casts() -> None:
    """construct.fold: a cast of an integer constant to an integer type is that constant (a
    narrowing one wraps), which lets `x * 16 + Cast(int64, 0)` lose its zero term; a cast to
    a float, or of a variable, stays (unroll folds its copies this way only)."""
    k = var("k", "int64")
    e = BinOp("add", binop("mul", k, const(16, "int64")), Cast(IntImm(0), dtype("int64")),
              dtype("int64"))
    assert print_node(fold(e)) == "k * T.int64(16)"
    assert print_node(fold(Cast(IntImm(300), dtype("int8")))) == "T.int8(44)"
    assert isinstance(fold(Cast(IntImm(3), dtype("float32"))), Cast)
    i = var("i")
    assert print_node(fold(Cast(i, dtype("int64")))) == 'T.Cast("int64", i)'
