"""The `verify` pass: each rule of its table, on hand-built IR, with exact messages and spans."""

from __future__ import annotations

import pytest
from tirc.ir import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    CompileError,
    FloatImm,
    For,
    ForKind,
    Function,
    GCall,
    GlobalVar,
    GVar,
    IntImm,
    IRModule,
    IterKind,
    LetStmt,
    PrimFunc,
    Range,
    SeqExpr,
    SeqStmt,
    Span,
    Tuple,
    Var,
    VarBinding,
    make_buffer,
)
from tirc.ir.dtype import dtype
from tirc.ir.graph import BindingBlock
from tirc.ir.stmt import Allocate, IterVar
from tirc.passes.pass_base import PassContext
from tirc.passes.verify import RULES, Verify, verify_module

HANDLE = dtype("handle")
TRUE = IntImm(1, dtype("bool"))
F32 = dtype("float32")


def span(line: int, col: int = 5) -> Span:
    return Span("k.tir", line, col, line, col + 3)


def module(body_fn, shape=(8,)) -> IRModule:
    """One prim_func `f(A)` whose body is built by `body_fn(A)`."""
    a = make_buffer("A", shape, "float32")
    h = Var("A", HANDLE)
    return IRModule({"f": PrimFunc("f", (h,), {h: a}, body_fn(a))})


def messages(mod: IRModule) -> list[str]:
    return [d.header() for d in verify_module(mod)]  # spans point into no real file


def spatial_block(a, vi: Var, name: str = "b", region: Range | None = None) -> Block:
    region = region if region is not None else Range(vi, IntImm(1))
    return Block(name, (IterVar(vi, Range(IntImm(0), IntImm(8)), IterKind.SPATIAL),), (),
                 (BufferRegion(a, (region,)),), BufferStore(a, FloatImm(0.0), (vi,)))


def test_well_formed_module_passes_unchanged() -> None:
    i, vi = Var("i"), Var("vi")
    mod = module(lambda a: For(i, IntImm(0), IntImm(8), ForKind.SERIAL,
                               BlockRealize((i,), TRUE, spatial_block(a, vi))))
    assert verify_module(mod) == []
    assert Verify()(mod, PassContext()) is mod


def test_symbolic_shape_vars_are_defined_by_the_buffer_map() -> None:
    n, i = Var("n", dtype("int64")), Var("i", dtype("int64"))
    mod = module(lambda a: For(i, IntImm(0, n.dtype), n, ForKind.SERIAL,
                               BufferStore(a, FloatImm(1.0), (i,))), shape=(n,))
    assert verify_module(mod) == []


def test_use_outside_scope_is_reported_at_the_use() -> None:
    i = Var("i")

    def body(a):
        return SeqStmt((For(i, IntImm(0), IntImm(8), ForKind.SERIAL, BufferStore(
            a, FloatImm(0.0), (i,))), BufferStore(a, FloatImm(1.0), (i,), span=span(4))))

    assert messages(module(body)) == [
        "k.tir:4:5: error: variable 'i' is used outside the scope that defines it"]


def test_access_rank() -> None:
    mod = module(lambda a: BufferStore(a, FloatImm(0.0), (IntImm(0), IntImm(1)), span=span(7)))
    assert messages(mod) == [
        "k.tir:7:5: error: buffer 'A' has rank 1 but is accessed with 2 indices"]


def test_load_rank_and_region_rank() -> None:
    vi = Var("vi")

    def body(a):
        blk = Block("b", (IterVar(vi, Range(IntImm(0), IntImm(8)), IterKind.SPATIAL),), (),
                    (BufferRegion(a, (Range(vi, IntImm(1)), Range(IntImm(0), IntImm(1))),
                                  span=span(2)),),
                    BufferStore(a, a.vload(vi, vi), (vi,), span=span(3)))
        return BlockRealize((IntImm(0),), TRUE, blk)

    assert messages(module(body)) == [
        "k.tir:2:5: error: region of buffer 'A' has 2 dimensions but the buffer has rank 1",
        "k.tir:3:5: error: buffer 'A' has rank 1 but is accessed with 2 indices",
    ]


def test_block_iteration_variables_must_all_be_bound() -> None:
    vi = Var("vi")
    mod = module(lambda a: BlockRealize((), TRUE, spatial_block(a, vi), span=span(5)))
    assert messages(mod) == [
        "k.tir:5:5: error: block 'b' has 1 iteration variable but 0 values are bound"]


def test_iteration_variable_is_not_visible_outside_its_block() -> None:
    vi = Var("vi")

    def body(a):
        return SeqStmt((BlockRealize((IntImm(0),), TRUE, spatial_block(a, vi)),
                        BufferStore(a, FloatImm(0.0), (vi,), span=span(9))))

    assert messages(module(body)) == [
        "k.tir:9:5: error: variable 'vi' is used outside the scope that defines it"]


def test_constant_region_out_of_bounds() -> None:
    vi = Var("vi")
    region = Range(IntImm(4), IntImm(6))
    mod = module(lambda a: BlockRealize((IntImm(0),), TRUE, Block(
        "b", (IterVar(vi, Range(IntImm(0), IntImm(8)), IterKind.SPATIAL),),
        (BufferRegion(a, (region,), span=span(6, 17)),), (),
        BufferStore(a, FloatImm(0.0), (vi,)))))
    assert messages(mod) == [
        "k.tir:6:17: error: region [4:10] of buffer 'A' is outside its extent 8 in dimension 0"]


def test_symbolic_region_is_not_judged() -> None:
    vi = Var("vi")
    mod = module(lambda a: BlockRealize((IntImm(0),), TRUE, spatial_block(
        a, vi, region=Range(vi, IntImm(100)))))
    assert verify_module(mod) == []


def test_duplicate_definition_of_a_loop_variable() -> None:
    i = Var("i")

    def body(a):
        first = For(i, IntImm(0), IntImm(8), ForKind.SERIAL, BufferStore(a, FloatImm(0.0), (i,)))
        second = For(i, IntImm(0), IntImm(8), ForKind.SERIAL,
                     BufferStore(a, FloatImm(1.0), (i,)), span=span(11))
        return SeqStmt((first, second))

    assert messages(module(body)) == ["k.tir:11:5: error: variable 'i' is defined more than once"]


def test_let_and_allocation_scopes() -> None:
    x, i = Var("x"), Var("i")
    tmp = make_buffer("T", (4,), "float32")

    def body(a):
        inner = Allocate(tmp, BufferStore(tmp, FloatImm(0.0), (x,)))
        return SeqStmt((LetStmt(x, IntImm(1), inner),
                        BufferStore(tmp, FloatImm(0.0), (IntImm(0),), span=span(12)),
                        For(i, IntImm(0), IntImm(8), ForKind.SERIAL,
                            BufferStore(a, FloatImm(0.0), (i,)))))

    assert messages(module(body)) == [
        "k.tir:12:5: error: buffer 'T' is used outside the scope that defines it"]


def test_errors_without_spans_use_the_enclosing_span() -> None:
    j = Var("j")
    mod = module(lambda a: For(Var("i"), IntImm(0), IntImm(8), ForKind.SERIAL,
                               BufferStore(a, FloatImm(0.0), (j,)), span=span(2, 9)))
    assert messages(mod) == [
        "k.tir:2:9: error: variable 'j' is used outside the scope that defines it"]


def test_graph_variables_and_callees() -> None:
    x = GVar("x")
    y, z = GVar("y"), GVar("z")
    call = GCall("call_tir", (GlobalVar("missing", span=span(3, 23)), y), span=span(3, 13))
    fn = Function("main", (x,), SeqExpr((BindingBlock((
        VarBinding(z, call, span=span(3)),)),), z))
    mod = IRModule({"main": fn})
    assert messages(mod) == [
        "k.tir:3:23: error: 'missing' is not a function of the module",
        "k.tir:3:13: error: graph variable 'y' is used before it is defined",
    ]


def test_dataflow_outputs_must_be_bound_in_their_block() -> None:
    x, y = GVar("x"), GVar("y")
    blk = BindingBlock((), is_dataflow=True, outputs=(y,), span=span(4))
    mod = IRModule({"main": Function("main", (x,), SeqExpr((blk,), x))})
    assert "k.tir:4:5: error: dataflow output 'y' is not bound in its dataflow block" \
        in messages(mod)


def test_verify_pass_raises_compile_error_with_every_problem() -> None:
    mod = module(lambda a: SeqStmt((
        BufferStore(a, FloatImm(0.0), (IntImm(0), IntImm(0)), span=span(1)),
        BufferStore(a, FloatImm(0.0), (Var("q"),), span=span(2)))))
    with pytest.raises(CompileError) as err:
        Verify()(mod, PassContext())
    assert [d.span.line for d in err.value.diagnostics] == [1, 2]


def test_rule_table_names_are_unique_per_kind() -> None:
    keys = [(r.kind, r.name) for r in RULES]
    assert len(keys) == len(set(keys))


def test_tuples_in_graph_functions_are_walked() -> None:
    x, y, z = GVar("x"), GVar("y", span=span(6, 17)), GVar("z")
    fn = Function("main", (x,), SeqExpr((BindingBlock((
        VarBinding(z, Tuple((x, y))),)),), z))
    assert messages(IRModule({"main": fn})) == [
        "k.tir:6:17: error: graph variable 'y' is used before it is defined"]


def test_operands_of_one_dtype() -> None:
    """A pass that substitutes an int64 size for an int32 one leaves `n + 1` mixed; the
    verifier names it where LLVM would stop with an internal error."""
    from tirc.ir.expr import BinOp

    n = Var("n", dtype("int64"))

    def body(a):
        mixed = BinOp("add", n, IntImm(1), dtype("int64"))
        return LetStmt(n, IntImm(4, dtype("int64")),
                       BufferStore(a, FloatImm(0.0), (mixed,), span=span(13)))

    assert messages(module(body)) == [
        "k.tir:13:5: error: the operands of 'add' are int64 and int32"]
