"""unroll: constant unroll loops become copies of their body; the rest get an LLVM hint."""

from __future__ import annotations

import pytest
from lowering_support import (
    assert_same_results,
    body_text,
    buf,
    count_nodes,
    func_text,
    loop,
    module,
    prim_func,
    run_on_text,
    run_pass,
)
from tirc.frontend import parse
from tirc.ir import (
    Allocate,
    CompileError,
    FloatImm,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    LetStmt,
    Var,
    dtype,
)
from tirc.ir.stmt import BufferStore, seq
from tirc.passes.pass_base import PassContext
from tirc.passes.unroll import Unroll

U = ForKind.UNROLLED
F32 = dtype("float32")


def squares(extent: int | Var = 3):
    n = Var("n")
    A, B = buf("A", (n * 3,)), buf("B", (n * 3,))
    i, j, t = Var("i"), Var("j"), Var("t", F32)
    body = LetStmt(t, A.vload(i * 3 + j), BufferStore(B, t * t, (i * 3 + j,)))
    return module(prim_func("sq", [A, B], loop(i, n, loop(j, extent, body, U)), scalars=(n,)))


def test_constant_unroll_loop_becomes_copies_with_the_index_folded() -> None:
    mod = squares(3)
    out, _ = run_pass(Unroll(), mod)
    assert body_text(out).endswith(
        "for i in range(n):\n"
        "    with T.LetStmt(A[i * 3]) as t:\n"
        "        B[i * 3] = t * t\n"
        "    with T.LetStmt(A[i * 3 + 1]) as t:\n"
        "        B[i * 3 + 1] = t * t\n"
        "    t: T.float32 = A[i * 3 + 2]\n"
        "    B[i * 3 + 2] = t * t\n")
    assert_same_results(mod, out, "sq", sizes={"n": 4})


def test_each_copy_defines_fresh_variables() -> None:
    out, _ = run_pass(Unroll(), squares(3))
    lets = []
    body = out["sq"].body.body
    for stmt in body.seq:
        assert isinstance(stmt, LetStmt)
        lets.append(stmt.var)
    assert len({id(v) for v in lets}) == 3


def test_symbolic_extent_stays_a_loop_with_the_unroll_hint() -> None:
    m = Var("m")
    mod = squares(m)
    mod = module(mod["sq"].replace(params=(*mod["sq"].params, m)))
    out, _ = run_pass(Unroll(), mod)
    inner = out["sq"].body.body
    assert isinstance(inner, For) and inner.kind == ForKind.SERIAL
    assert inner.annotations == {"pragma_unroll": True}
    assert 'for j in T.serial(m, annotations={"pragma_unroll": True}):' in body_text(out)
    assert_same_results(mod, out, "sq", sizes={"n": 2, "m": 3})


def test_extent_above_the_limit_stays_a_loop() -> None:
    out, _ = run_pass(Unroll(), squares(3), **{"unroll.max-extent": "2"})
    inner = out["sq"].body.body
    assert isinstance(inner, For) and inner.annotations == {"pragma_unroll": True}
    out, _ = run_pass(Unroll(), squares(3), **{"unroll.max-extent": "3"})
    assert count_nodes(out, For) == 1


def test_nested_unroll_loops_with_an_allocation_and_a_nonzero_start() -> None:
    A, B = buf("A", (8,)), buf("B", (4,))
    tmp = buf("tmp", (1,))
    i, j = Var("i"), Var("j")
    body = Allocate(tmp, seq(
        BufferStore(tmp, A.vload(i * 2 + j - 1), (IntImm(0),)),
        BufferStore(B, B.vload(i) + tmp.vload(IntImm(0)), (i,))))
    mod = module(prim_func("f", [A, B], loop(i, 4, loop(j, 2, body, U, lo=1), U)))
    out, _ = run_pass(Unroll(), mod)
    assert count_nodes(out, For) == 0
    assert count_nodes(out, Allocate) == 8
    allocated = []
    out_body = out["f"].body
    for stmt in out_body.seq:
        assert isinstance(stmt, Allocate)
        allocated.append(stmt.buffer)
    assert len({id(b) for b in allocated}) == 8
    assert len({id(b.data) for b in allocated}) == 8
    assert body_text(out).startswith(
        'with T.decl_buffer((1,), "float32") as tmp:\n'
        "    tmp[0] = A[0]\n"
        "    B[0] = B[0] + tmp[0]\n"
        'with T.decl_buffer((1,), "float32") as tmp:\n'
        "    tmp[0] = A[1]\n"
        "    B[0] = B[0] + tmp[0]\n"
        'with T.decl_buffer((1,), "float32") as tmp:\n'
        "    tmp[0] = A[2]\n"
        "    B[1] = B[1] + tmp[0]\n")
    assert_same_results(mod, out, "f")


def test_zero_extent_unroll_loop_disappears() -> None:
    A = buf("A", (4,))
    i = Var("i")
    mod = module(prim_func("f", [A], loop(i, 0, BufferStore(A, FloatImm(1.0), (i,)), U)))
    out, _ = run_pass(Unroll(), mod)
    assert body_text(out) == "T.evaluate(0)\n"


def test_bad_max_extent_config_is_a_diagnostic() -> None:
    with pytest.raises(CompileError) as err:
        Unroll()(squares(3), PassContext(config={"unroll.max-extent": "-1"}))
    assert str(err.value) == "tirc: error: pass config 'unroll.max-extent' must be at least 0, " \
                             "got -1"


def test_module_without_unroll_loops_is_unchanged() -> None:
    A = buf("A", (4,))
    i = Var("i")
    mod = module(prim_func("f", [A], loop(i, 4, BufferStore(A, FloatImm(1.0), (i,)))))
    assert Unroll()(mod) is mod


def test_conditions_that_fold_to_constants_keep_only_the_taken_branch() -> None:
    A, R = buf("A", (12,)), buf("R", (4,))
    i, k = Var("i"), Var("k")
    body = seq(IfThenElse(k.eq(0), BufferStore(R, FloatImm(0.0), (i,))),
               BufferStore(R, R.vload(i) + A.vload(i * 3 + k), (i,)))
    mod = module(prim_func("rowsum", [A, R], loop(i, 4, loop(k, 3, body, U))))
    out, _ = run_pass(Unroll(), mod)
    assert body_text(out) == (
        "for i in range(4):\n"
        "    R[i] = T.float32(0.0)\n"
        "    R[i] = R[i] + A[i * 3]\n"
        "    R[i] = R[i] + A[i * 3 + 1]\n"
        "    R[i] = R[i] + A[i * 3 + 2]\n")
    assert_same_results(mod, out, "rowsum")


CONV1D = '''
@T.prim_func
def conv1d(X: T.Buffer((18,), "float32"), K: T.Buffer((3,), "float32"),
           Y: T.Buffer((16,), "float32")):
    for i in range(16):
        Y[i] = T.float32(0)
        for k in T.unroll(3):
            Y[i] = Y[i] + X[i + k] * K[k]
'''


def test_text_three_tap_filter() -> None:
    before, after, _ = run_on_text(Unroll(), CONV1D)
    assert func_text(after, "conv1d") == (
        "@T.prim_func\n"
        'def conv1d(X: T.Buffer((18,), "float32"), K: T.Buffer((3,), "float32"), '
        'Y: T.Buffer((16,), "float32")):\n'
        "    for i in range(16):\n"
        "        Y[i] = T.float32(0.0)\n"
        "        Y[i] = Y[i] + X[i] * K[0]\n"
        "        Y[i] = Y[i] + X[i + 1] * K[1]\n"
        "        Y[i] = Y[i] + X[i + 2] * K[2]\n")
    assert_same_results(before, after, "conv1d")


STAGED = '''
@T.prim_func
def staged(src: T.Buffer((16,), "int8"), out: T.Buffer((8,), "int8")):
    for i in T.unroll(2):
        tmp = T.allocate([4], "int8", "global")
        tmp_1 = T.Buffer([4], dtype="int8", data=tmp)
        for j in range(4):
            tmp_1[j] = src[i * 4 + j]
            out[i * 4 + j] = tmp_1[j]
'''


def test_a_view_of_storage_allocated_in_the_body_follows_each_copy() -> None:
    """Each copy allocates its own `tmp`; the view `tmp_1` (TVM's loop-partition test) must
    view that copy's storage, not the original's, which no longer exists."""
    before, after, _ = run_on_text(Unroll(), STAGED)
    text = body_text(after, "staged")
    assert text.count('tmp_1 = T.Buffer((4,), "int8", data=tmp.data)') == 2
    assert_same_results(before, after, "staged")
    reparsed = parse(after.script())
    assert_same_results(before, reparsed, "staged")
