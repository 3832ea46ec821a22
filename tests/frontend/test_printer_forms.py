"""IR built directly (not from text) in forms only the printer writes — T.Div, T.Let,
T.call_intrin, T.attr, assert, block match_buffer, R.prim_value, R.str, tir_vars — parses back
equal, and prints the same text again."""

from __future__ import annotations

from tirc.frontend import parse
from tirc.ir import (
    AssertStmt,
    AttrStmt,
    BindingBlock,
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    Call,
    Constant,
    Evaluate,
    FloatImm,
    For,
    ForKind,
    Function,
    GCall,
    GlobalVar,
    GVar,
    IntImm,
    IRModule,
    Let,
    MatchBufferRegion,
    MatchCast,
    ObjectSInfo,
    PrimFunc,
    PrimSInfo,
    PrimValue,
    Range,
    SeqExpr,
    ShapeExpr,
    ShapeSInfo,
    StringImm,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    make_buffer,
    structural_equal,
)
from tirc.ir import expr as E
from tirc.ir.dtype import dtype
from tirc.ir.graph import StringValue
from tirc.ir.printer import print_module
from tirc.ir.stmt import seq

I64 = dtype("int64")
F32 = dtype("float32")


def _prim_func() -> tuple[PrimFunc, Var]:
    i, n, t = Var("i"), Var("n", I64), Var("t", F32)
    a = make_buffer("A", (16,), "float32")
    b = make_buffer("B", (n,), "int32", elem_offset=IntImm(0, I64))
    sub = make_buffer("Asub", (4,), "float32")
    ha, hb = Var("A", dtype("handle")), Var("b", dtype("handle"))
    region = BufferRegion(a, (Range(IntImm(0), IntImm(4)),))
    block = Block("outer", (), (region,), (), BufferStore(sub, FloatImm(1.0), (IntImm(0),)),
                  match_buffers=(MatchBufferRegion(sub, region),))
    body = seq(
        For(i, IntImm(0), IntImm(4), ForKind.SERIAL, seq(
            BufferStore(a, E.cast(F32, E.binop("div", i, IntImm(3))), (i,)),
            BufferStore(a, Let(t, a.vload(i), t + t, F32), (i + 1,)),
        )),
        AttrStmt(a, "storage_alignment", IntImm(64),
                 Evaluate(Call("popcount", (IntImm(7),), dtype("int32")))),
        AttrStmt(None, "pragma", StringImm("x"), Evaluate(IntImm(0))),
        AssertStmt(E.binop("gt", n, 0), "n positive", seq(
            BufferStore(b, IntImm(1), (IntImm(0, I64),)),
            BlockRealize((), E.const(True), block),
        )),
    )
    return PrimFunc("forms", (ha, hb, n), {ha: a, hb: b}, body, {"global_symbol": "forms"}), n


def _round_trip(mod: IRModule) -> str:
    text = print_module(mod)
    again = parse(text, "forms.tir")
    assert structural_equal(again, mod), text
    assert print_module(again) == text
    return text


def test_loop_level_printer_forms() -> None:
    f, _ = _prim_func()
    text = _round_trip(IRModule({"forms": f}))
    for form in ("T.Div(i, 3)", "T.Let(t + t, where={t: A[i]})", "with T.attr(None,",
                 'T.popcount(7)', 'assert n > T.int64(0), "n positive"',
                 "Asub = T.match_buffer(A[0:4], (4,), \"float32\")"):
        assert form in text


def test_graph_level_printer_forms() -> None:
    f, _ = _prim_func()
    n = Var("n", I64)  # the graph function's own symbolic size
    x = GVar("x", TensorSInfo((n, IntImm(4)), F32, 2))
    params = (x, GVar("y", TensorSInfo(None, F32, 2)), GVar("z", ShapeSInfo((n,), 1)),
              GVar("w", PrimSInfo(I64)), GVar("o", ObjectSInfo()))
    out = TensorSInfo((n,), dtype("int32"), 1)
    v1, v2, v3 = GVar("v1"), GVar("v2"), GVar("v3", out)  # match_cast: the cast's type
    bindings = (
        VarBinding(v1, GCall("call_tir", (GlobalVar("forms"), Tuple((x,)), ShapeExpr((n,))), {},
                             (out, TensorSInfo((IntImm(4),), F32, 1)))),
        VarBinding(v2, GCall("foo.bar", (PrimValue(n), StringValue("s"),
                                         Constant(1.0, dtype("float16"))), {"k": (1, 2)})),
        MatchCast(v3, TupleGetItem(v1, 0), out),
    )
    g = Function("main", params, SeqExpr((BindingBlock(bindings, False),), v3), out)
    text = _round_trip(IRModule({"forms": f, "main": g}))
    assert "R.foo.bar(R.prim_value(n), R.str(\"s\"), R.const(1.0, \"float16\"), k=(1, 2))" \
        in text
