"""The printer: exact text for hand-built IR, and canonical round trips for random IR."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from ir_strategies import ir_modules
from tirc.ir import (
    Buffer,
    BufferStore,
    FloatImm,
    For,
    ForKind,
    IntImm,
    IRModule,
    PrimFunc,
    Var,
    make_buffer,
    structural_equal,
)
from tirc.ir import expr as E
from tirc.ir.dtype import dtype
from tirc.ir.printer import print_module, print_node

HANDLE = dtype("handle")


def _func(body_fn) -> tuple[PrimFunc, Buffer]:
    a = make_buffer("A", (8,), "float32")
    h = Var("A", HANDLE)
    return PrimFunc("f", (h,), {h: a}, body_fn(a)), a


def test_precedence_and_literals() -> None:
    i = Var("i")
    f, _ = _func(lambda a: For(i, IntImm(0), IntImm(8), ForKind.SERIAL, BufferStore(
        a, (a.vload(i) - (a.vload(i) - FloatImm(1.0))) * FloatImm(2.5), (i // 2 * 2 - (i % 3),))))
    text = print_node(f)
    assert "A[i // 2 * 2 - i % 3] = (A[i] - (A[i] - T.float32(1.0))) * T.float32(2.5)" in text


def test_comparisons_never_chain() -> None:
    i = Var("i")
    e = E.binop("eq", E.binop("lt", i, IntImm(3)), E.const(True))
    assert print_node(e) == "(i < 3) == True"


def test_int64_and_negative_literals() -> None:
    n = Var("n", dtype("int64"))
    assert print_node(n + 1) == "n + T.int64(1)"
    assert print_node(Var("i") + IntImm(-4)) == "i + -4"
    assert print_node(E.minimum(Var("i"), 3)) == "T.min(i, 3)"


def test_shadowed_names_are_renamed() -> None:
    outer, inner = Var("i"), Var("i")
    f, _ = _func(lambda a: For(outer, IntImm(0), IntImm(2), ForKind.SERIAL, For(
        inner, IntImm(0), IntImm(4), ForKind.PARALLEL, BufferStore(a, FloatImm(0.0),
                                                                   (outer * 4 + inner,)))))
    text = print_node(f)
    assert "for i_1 in T.parallel(4):" in text
    assert "A[i * 4 + i_1]" in text


def test_symbolic_buffer_prints_match_buffer() -> None:
    n = Var("n", dtype("int64"))
    x = make_buffer("X", (n, 4), "float32")
    h = Var("x", HANDLE)
    i = Var("i", dtype("int64"))
    f = PrimFunc("g", (h,), {h: x}, For(i, IntImm(0, dtype("int64")), n, ForKind.SERIAL,
                                          BufferStore(x, FloatImm(1.0), (i, IntImm(0)))))
    lines = print_node(f).splitlines()
    assert lines[:4] == [
        "@T.prim_func",
        "def g(x: T.handle):",
        "    n = T.int64()",
        '    X = T.match_buffer(x, (n, 4), "float32")',
    ]


def _parse():
    frontend = pytest.importorskip("tirc.frontend")
    if not hasattr(frontend, "parse"):
        pytest.skip("frontend.parse not available")
    return frontend.parse


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ir_modules())
def test_random_modules_round_trip(mod: IRModule) -> None:
    parse = _parse()
    text = print_module(mod)
    again = parse(text, "<random>")
    assert structural_equal(again, mod), text
    assert print_module(again) == text


def test_scoped_declarations_followed_by_statements_print_as_with() -> None:
    from tirc.ir import Allocate, LetStmt
    from tirc.ir.stmt import seq

    parse = _parse()
    a = make_buffer("A", (4,), "float32")
    h = Var("A", HANDLE)
    tmp = make_buffer("tmp", (4,), "float32")
    t = Var("t", dtype("float32"))
    body = seq(Allocate(tmp, BufferStore(tmp, FloatImm(1.0), (IntImm(0),))),
               LetStmt(t, a.vload(IntImm(0)), BufferStore(a, t, (IntImm(1),))),
               BufferStore(a, FloatImm(2.0), (IntImm(2),)))
    mod = IRModule({"f": PrimFunc("f", (h,), {h: a}, body)})
    text = print_module(mod)
    assert '        with T.decl_buffer((4,), "float32") as tmp:\n' in text
    assert "        with T.LetStmt(A[0]) as t:\n            A[1] = t\n" in text
    again = parse(text, "<scoped>")
    assert structural_equal(again, mod)
    assert print_module(again) == text
