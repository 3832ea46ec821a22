"""vectorize: vectorized loops become ramps and broadcasts; unvectorizable ones stay scalar."""

from __future__ import annotations

import pytest
from lowering_support import (
    assert_same_results,
    body_text,
    buf,
    func_text,
    i64,
    loop,
    module,
    prim_func,
    run_on_text,
    run_pass,
)
from tirc.ir import (
    CompileError,
    FloatImm,
    ForKind,
    IfThenElse,
    IntImm,
    IRModule,
    LetStmt,
    Ramp,
    Select,
    Var,
    dtype,
)
from tirc.ir import expr as E
from tirc.ir.interpreter import InterpreterError
from tirc.ir.stmt import BufferStore, seq
from tirc.ir.target import Target
from tirc.passes.pass_base import PassContext
from tirc.passes.vectorize import Vectorize

V = ForKind.VECTORIZED
I64 = dtype("int64")


def elementwise(extent: int = 8):
    A, B, c = buf("A", (extent,)), buf("B", (extent,)), buf("c", (1,))
    i = Var("i")
    value = A.vload(i) * FloatImm(2.0) + c.vload(IntImm(0))
    return module(prim_func("f", [A, B, c], loop(i, extent, BufferStore(B, value, (i,)), V)))


def test_constant_extent_becomes_one_vector_statement() -> None:
    mod = elementwise(8)
    out, ctx = run_pass(Vectorize(), mod)
    assert body_text(out) == (
        "B[T.Ramp(0, 1, 8)] = A[T.Ramp(0, 1, 8)] * T.Broadcast(T.float32(2.0), 8)"
        " + T.Broadcast(c[0], 8)\n")
    assert ctx.notes == []
    assert_same_results(mod, out, "f")


def test_inner_vectorized_loop_of_a_2d_nest_gets_ramps_at_row_offsets() -> None:
    A, B = buf("A", (64,)), buf("B", (64,))
    i, j = Var("i"), Var("j")
    body = loop(i, 4, loop(j, 16, BufferStore(B, E.call("sqrt", A.vload(i * 16 + j)),
                                              (i * 16 + j,)), V))
    mod = module(prim_func("f", [A, B], body))
    out, _ = run_pass(Vectorize(), mod)
    assert body_text(out) == (
        "for i in range(4):\n"
        "    B[T.Ramp(i * 16, 1, 16)] = T.sqrt(A[T.Ramp(i * 16, 1, 16)])\n")
    assert_same_results(mod, out, "f")


def _exp_rows() -> IRModule:
    A, B = buf("A", (64,)), buf("B", (64,))
    i, j = Var("i"), Var("j")
    body = loop(i, 4, loop(j, 16, BufferStore(B, E.call("exp", A.vload(i * 16 + j) - FloatImm(
        1.0)), (i * 16 + j,)), V))
    return module(prim_func("f", [A, B], body))


def test_a_loop_of_libm_math_stays_scalar_on_the_cpu() -> None:
    """exp runs one lane at a time through libm on the CPU: the vector loop added only lane
    moves and spills around the sixteen calls (softmax's exp stage 10 ms -> 7.3 ms scalar)."""
    mod = _exp_rows()
    out, ctx = run_pass(Vectorize(), mod)
    assert body_text(out) == ("for i, j in T.grid(4, 16):\n"
                              "    B[i * 16 + j] = T.exp(A[i * 16 + j] - T.float32(1.0))\n")
    assert ctx.notes == ["vectorize: loop j in f left scalar: exp run one lane at a time on "
                         "the CPU (libm), and vector code around them only adds lane moves"]
    assert_same_results(mod, out, "f")


def test_a_loop_of_libm_math_is_vector_code_on_the_gpu() -> None:
    out = Vectorize()(_exp_rows(), PassContext(target=Target("cuda", arch="sm_80")))
    assert "B[T.Ramp(i * 16, 1, 16)] = T.exp(A[T.Ramp(i * 16, 1, 16)]" in body_text(out)


def test_extent_above_max_lanes_is_split_with_a_vector_tail() -> None:
    """A constant remainder is one narrower vector, not a scalar loop."""
    mod = elementwise(40)
    out, _ = run_pass(Vectorize(), mod)
    assert body_text(out) == (
        "for i_o in range(2):\n"
        "    B[T.Ramp(i_o * 16, 1, 16)] = A[T.Ramp(i_o * 16, 1, 16)]"
        " * T.Broadcast(T.float32(2.0), 16) + T.Broadcast(c[0], 16)\n"
        "B[T.Ramp(32, 1, 8)] = A[T.Ramp(32, 1, 8)] * T.Broadcast(T.float32(2.0), 8)"
        " + T.Broadcast(c[0], 8)\n")
    assert_same_results(mod, out, "f")


@pytest.mark.parametrize("extent, tail", [(17, "B[16] = A[16] * T.float32(2.0) + c[0]\n"),
                                          (23, "B[T.Ramp(16, 1, 7)] = A[T.Ramp(16, 1, 7)]")])
def test_a_tail_of_one_is_one_scalar_iteration_and_any_other_a_vector(extent: int,
                                                                       tail: str) -> None:
    mod = elementwise(extent)
    out, _ = run_pass(Vectorize(), mod)
    assert "B[T.Ramp(0, 1, 16)]" in body_text(out)
    assert tail in body_text(out)
    assert_same_results(mod, out, "f")


def test_extent_that_divides_has_no_tail() -> None:
    out, _ = run_pass(Vectorize(), elementwise(64), **{"vectorize.max-lanes": "32"})
    assert body_text(out).startswith("for i_o in range(2):\n    B[T.Ramp(i_o * 32, 1, 32)]")
    assert "i_t" not in body_text(out)


def test_symbolic_extent_from_a_shape_is_split_without_clamping() -> None:
    n = Var("n", I64)
    A, B = buf("A", (n,)), buf("B", (n,))
    i = Var("i", I64)
    mod = module(prim_func("f", [A, B], loop(i, n, BufferStore(B, A.vload(i) + FloatImm(1.0),
                                                              (i,)), V, lo=i64(0))))
    out, _ = run_pass(Vectorize(), mod, **{"vectorize.max-lanes": "4"})
    assert body_text(out).endswith(
        "for i_o in range(n // T.int64(4)):\n"
        "    B[T.Ramp(i_o * T.int64(4), T.int64(1), 4)] = "
        "A[T.Ramp(i_o * T.int64(4), T.int64(1), 4)] + T.Broadcast(T.float32(1.0), 4)\n"
        "for i_t in range(n % T.int64(4)):\n"
        "    B[n // T.int64(4) * T.int64(4) + i_t] = "
        "A[n // T.int64(4) * T.int64(4) + i_t] + T.float32(1.0)\n")
    for n_value in (0, 3, 4, 11):
        assert_same_results(mod, out, "f", sizes={"n": n_value}, seeds=(0,))


def test_extent_not_known_to_be_non_negative_is_clamped() -> None:
    A, B = buf("A", (32,)), buf("B", (32,))
    k, i = Var("k"), Var("i")
    body = loop(i, k - 2, BufferStore(B, A.vload(i), (i,)), V, lo=2)
    mod = module(prim_func("f", [A, B], body, scalars=(k,)))
    out, _ = run_pass(Vectorize(), mod, **{"vectorize.max-lanes": "8"})
    assert "for i_o in range(T.max(k - 2, 0) // 8):\n" in body_text(out)
    assert "for i_t in range(T.max(k - 2, 0) % 8):\n" in body_text(out)
    for k_value in (0, 1, 2, 13, 32):
        assert_same_results(mod, out, "f", sizes={"k": k_value}, seeds=(0,))


def test_strided_and_symbolic_stride_accesses_become_strided_ramps() -> None:
    n = Var("n")
    A, B, C = buf("A", (32,)), buf("B", (8,)), buf("C", (n * 4,))
    i, j = Var("i"), Var("j")
    body = seq(loop(i, 8, BufferStore(B, A.vload(i * 4 + 1), (i,)), V),
               loop(j, 4, BufferStore(C, C.vload(j * n) * FloatImm(0.5), (j * n,)), V))
    mod = module(prim_func("f", [A, B, C], body, scalars=(n,)))
    out, _ = run_pass(Vectorize(), mod)
    assert body_text(out).endswith(
        "B[T.Ramp(0, 1, 8)] = A[T.Ramp(1, 4, 8)]\n"
        "C[T.Ramp(0, n, 4)] = C[T.Ramp(0, n, 4)] * T.Broadcast(T.float32(0.5), 4)\n")
    assert_same_results(mod, out, "f", sizes={"n": 3})


def test_lets_become_vector_lets_and_scalar_lets_stay_scalar() -> None:
    A, B, s = buf("A", (8,)), buf("B", (8,)), buf("s", (1,))
    i = Var("i")
    x, scale = Var("x", dtype("float32")), Var("scale", dtype("float32"))
    body = LetStmt(scale, s.vload(IntImm(0)) * FloatImm(3.0), LetStmt(x, A.vload(i) * scale,
                   BufferStore(B, E.select(x > FloatImm(0.0), x, E.cast("float32", i)), (i,))))
    mod = module(prim_func("f", [A, B, s], loop(i, 8, body, V)))
    out, _ = run_pass(Vectorize(), mod)
    assert body_text(out) == (
        "scale: T.float32 = s[0] * T.float32(3.0)\n"
        "x: T.float32x8 = A[T.Ramp(0, 1, 8)] * T.Broadcast(scale, 8)\n"
        "B[T.Ramp(0, 1, 8)] = T.Select(x > T.Broadcast(T.float32(0.0), 8), x, "
        'T.Cast("float32x8", T.Ramp(0, 1, 8)))\n')
    assert_same_results(mod, out, "f")


def test_invariant_if_stays_and_load_free_if_then_else_becomes_select() -> None:
    A, B, flag = buf("A", (8,)), buf("B", (8,)), buf("flag", (1,), "int32")
    i = Var("i")
    guarded = BufferStore(B, E.if_then_else(i < 4, FloatImm(1.0), FloatImm(-1.0)), (i,))
    body = IfThenElse(flag.vload(IntImm(0)) > 0, guarded, BufferStore(B, A.vload(i), (i,)))
    mod = module(prim_func("f", [A, B, flag], loop(i, 8, body, V)))
    out, _ = run_pass(Vectorize(), mod)
    text = body_text(out)
    assert text.startswith("if flag[0] > 0:\n")
    assert isinstance(out["f"].body.then_case.value, Select)
    assert "T.Select(T.Ramp(0, 1, 8) < T.Broadcast(4, 8)" in text
    assert_same_results(mod, out, "f")


@pytest.mark.parametrize("case, reason", [
    ("reduction", "every iteration stores to the same element of s (a reduction)"),
    ("gather", "load from A at an index that is not affine in i (a gather)"),
    ("inner_loop", "the bounds of inner loop j depend on i"),
    ("varying_if", "an if condition depends on i"),
    ("guarded_load", "T.if_then_else guards a load with a condition that depends on i"),
])
def test_unvectorizable_bodies_stay_scalar_with_a_note(case: str, reason: str) -> None:
    A, B, s, idx = buf("A", (8,)), buf("B", (8,)), buf("s", (1,)), buf("idx", (8,), "int32")
    i, j = Var("i"), Var("j")
    bodies = {
        "reduction": BufferStore(s, s.vload(IntImm(0)) + A.vload(i), (IntImm(0),)),
        "gather": BufferStore(B, A.vload(E.binop("floormod", idx.vload(i), IntImm(8))), (i,)),
        "inner_loop": loop(j, i + 1, BufferStore(B, A.vload(i), (i,))),
        "varying_if": IfThenElse(A.vload(i) > FloatImm(0.0), BufferStore(B, A.vload(i), (i,))),
        "guarded_load": BufferStore(B, E.if_then_else(i > 0, A.vload(i - 1), FloatImm(0.0)),
                                    (i,)),
    }
    mod = module(prim_func("f", [A, B, s, idx], loop(i, 8, bodies[case], V)))
    out, ctx = run_pass(Vectorize(), mod)
    assert ctx.notes == [f"vectorize: loop i in f left scalar: {reason}"]
    assert out["f"].body.kind == ForKind.SERIAL
    assert out["f"].body.body is bodies[case]
    if case == "reduction":
        # A vectorized loop whose iterations all update s[0] races: the interpreter says so.
        with pytest.raises(InterpreterError, match=r"data race in T.vectorized loop 'i'"):
            assert_same_results(mod, out, "f")
    else:
        assert_same_results(mod, out, "f")


def test_split_guard_becomes_a_vector_chunk_or_scalar_iterations() -> None:
    n = Var("n")
    A, B = buf("A", (n,)), buf("B", (n,))
    io, ii = Var("io"), Var("ii")
    idx = io * 8 + ii
    body = loop(io, (n + 7) // 8, loop(ii, 8, IfThenElse(
        idx < n, BufferStore(B, A.vload(idx) + FloatImm(1.0), (idx,))), V))
    mod = module(prim_func("f", [A, B], body))
    out, ctx = run_pass(Vectorize(), mod)
    assert body_text(out).endswith(
        "for io in range((n + 7) // 8):\n"
        "    if io * 8 < n and io * 8 + 7 < n:\n"
        "        B[T.Ramp(io * 8, 1, 8)] = A[T.Ramp(io * 8, 1, 8)]"
        " + T.Broadcast(T.float32(1.0), 8)\n"
        "    else:\n"
        "        for ii_s in range(8):\n"
        "            if io * 8 + ii_s < n:\n"
        "                B[io * 8 + ii_s] = A[io * 8 + ii_s] + T.float32(1.0)\n")
    assert ctx.notes == []
    for n_value in (0, 5, 8, 13):
        assert_same_results(mod, out, "f", sizes={"n": n_value}, seeds=(0,))


def test_inner_loop_with_invariant_bounds_stays_around_the_vector_body() -> None:
    # The inner parallel loop's iterations write disjoint halves of S (independent, no race).
    A, R, S = buf("A", (24,)), buf("R", (8,)), buf("S", (16,))
    i, k, q = Var("i"), Var("k"), Var("q")
    body = loop(i, 8, seq(BufferStore(R, FloatImm(0.0), (i,)), loop(k, 3, BufferStore(
        R, R.vload(i) + A.vload(i * 3 + k), (i,)), ForKind.UNROLLED), loop(q, 2, BufferStore(
            S, R.vload(i) * FloatImm(0.5), (q * 8 + i,)), ForKind.PARALLEL)), V)
    mod = module(prim_func("f", [A, R, S], body))
    out, ctx = run_pass(Vectorize(), mod)
    assert body_text(out) == (
        "R[T.Ramp(0, 1, 8)] = T.Broadcast(T.float32(0.0), 8)\n"
        "for k in T.unroll(3):\n"
        "    R[T.Ramp(0, 1, 8)] = R[T.Ramp(0, 1, 8)] + A[T.Ramp(k, 3, 8)]\n"
        "for q in range(2):\n"
        "    S[T.Ramp(q * 8, 1, 8)] = R[T.Ramp(0, 1, 8)] * T.Broadcast(T.float32(0.5), 8)\n")
    assert ctx.notes == []
    assert_same_results(mod, out, "f")


def test_max_lanes_from_config_and_from_the_target() -> None:
    A, B = buf("A", (64,), "float64"), buf("B", (64,), "float64")
    i = Var("i")
    mod = module(prim_func("f", [A, B], loop(i, 64, BufferStore(B, A.vload(i), (i,)), V)))
    ctx = PassContext(target=Target("llvm", mcpu="znver5"))
    out = Vectorize()(mod, ctx)
    assert "for i_o in range(8):\n    B[T.Ramp(i_o * 8, 1, 8)]" in body_text(out)
    ctx = PassContext(target=Target("llvm", mcpu="znver5"), config={"vectorize.max-lanes": "2"})
    out = Vectorize()(mod, ctx)
    assert "for i_o in range(32):\n    B[T.Ramp(i_o * 2, 1, 2)]" in body_text(out)


def test_bad_max_lanes_config_is_a_diagnostic() -> None:
    with pytest.raises(CompileError) as err:
        Vectorize()(elementwise(8), PassContext(config={"vectorize.max-lanes": "wide"}))
    assert str(err.value) == "tirc: error: pass config 'vectorize.max-lanes' wants an integer, " \
                             "got 'wide'"
    with pytest.raises(CompileError) as err:
        Vectorize()(elementwise(8), PassContext(config={"vectorize.max-lanes": "0"}))
    assert str(err.value) == "tirc: error: pass config 'vectorize.max-lanes' must be at " \
                             "least 1, got 0"


def test_nested_vectorized_loops_vectorize_the_inner_one_only() -> None:
    A, B = buf("A", (16,)), buf("B", (16,))
    i, j = Var("i"), Var("j")
    body = loop(i, 4, loop(j, 4, BufferStore(B, A.vload(i * 4 + j), (i * 4 + j,)), V), V)
    mod = module(prim_func("f", [A, B], body))
    out, ctx = run_pass(Vectorize(), mod)
    assert body_text(out) == (
        "for i in range(4):\n"
        "    B[T.Ramp(i * 4, 1, 4)] = A[T.Ramp(i * 4, 1, 4)]\n")
    assert ctx.notes == ["vectorize: loop i in f left scalar: the body already holds vector code"]
    assert_same_results(mod, out, "f")


def test_int64_loop_variable_gives_int64_ramps() -> None:
    A, B = buf("A", (i64(8),)), buf("B", (i64(8),))
    i = Var("i", I64)
    mod = module(prim_func("f", [A, B], loop(i, i64(8), BufferStore(B, A.vload(i), (i,)), V)))
    out, _ = run_pass(Vectorize(), mod)
    store = out["f"].body
    assert isinstance(store.indices[0], Ramp) and store.indices[0].dtype == dtype("int64x8")
    assert store.value.dtype == dtype("float32x8")
    assert_same_results(mod, out, "f")


FUSED = '''
@T.prim_func
def fused(x: T.handle, w: T.handle, y: T.handle):
    n = T.int64()
    X = T.match_buffer(x, (n,), "float32")
    W = T.match_buffer(w, (n,), "float32")
    Y = T.match_buffer(y, (n,), "float32")
    for i_0 in T.parallel(n // 64):
        for i_1 in T.vectorized(64):
            v: T.float32 = X[i_0 * 64 + i_1] * W[i_0 * 64 + i_1]
            Y[i_0 * 64 + i_1] = T.max(v, T.float32(0)) * T.float32(0.5) + X[i_0 * 64 + i_1]
    for i in T.vectorized(n % 64):
        Y[n // 64 * 64 + i] = X[n // 64 * 64 + i] * W[n // 64 * 64 + i]
'''


def test_text_fused_chain_with_a_symbolic_remainder_loop() -> None:
    before, after, ctx = run_on_text(Vectorize(), FUSED)
    base = 'i_0 * T.int64(64) + T.Cast("int64", i_1_o * 16)'
    ramp = f"T.Ramp({base}, T.int64(1), 16)"
    rest = "n // T.int64(64) * T.int64(64)"
    chunks = "n % T.int64(64) // T.int64(16)"
    tail = f"{rest} + ({chunks} * T.int64(16) + i_t)"
    assert func_text(after, "fused") == (
        "@T.prim_func\n"
        "def fused(x: T.handle, w: T.handle, y: T.handle):\n"
        "    n = T.int64()\n"
        '    X = T.match_buffer(x, (n,), "float32")\n'
        '    W = T.match_buffer(w, (n,), "float32")\n'
        '    Y = T.match_buffer(y, (n,), "float32")\n'
        "    for i_0 in T.parallel(n // T.int64(64)):\n"
        "        for i_1_o in range(4):\n"
        f"            v: T.float32x16 = X[{ramp}] * W[{ramp}]\n"
        f"            Y[{ramp}] = T.max(v, T.Broadcast(T.float32(0.0), 16))"
        f" * T.Broadcast(T.float32(0.5), 16) + X[{ramp}]\n"
        f"    for i_o in range({chunks}):\n"
        f"        Y[T.Ramp({rest} + i_o * T.int64(16), T.int64(1), 16)] = "
        f"X[T.Ramp({rest} + i_o * T.int64(16), T.int64(1), 16)] * "
        f"W[T.Ramp({rest} + i_o * T.int64(16), T.int64(1), 16)]\n"
        f"    for i_t in range(n % T.int64(64) % T.int64(16)):\n"
        f"        Y[{tail}] = X[{tail}] * W[{tail}]\n")
    assert ctx.notes == []
    for n in (0, 17, 64, 100, 129):
        assert_same_results(before, after, "fused", sizes={"n": n}, seeds=(0,))
