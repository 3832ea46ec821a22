"""The reference interpreter on loop functions: results vs numpy, dtype semantics, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from lowering_support import block, buf, loop, module, prim_func, root
from tirc.ir import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferRegion,
    BufferStore,
    Evaluate,
    FloatImm,
    IntImm,
    LetStmt,
    MatchBufferRegion,
    Range,
    Var,
    While,
    make_buffer,
)
from tirc.ir import expr as E
from tirc.ir.dtype import BOOL, dtype
from tirc.ir.interpreter import Interpreter, InterpreterError, eval_expr, run_prim_func
from tirc.ir.stmt import ForKind, IfThenElse, seq

F32 = dtype("float32")
I32 = dtype("int32")
TRUE = IntImm(1, BOOL)


def f32(v: float) -> FloatImm:
    return FloatImm(v, F32)


def matmul_func(n: int, m: int, k: int):
    A, B, C = buf("A", (n, k)), buf("B", (k, m)), buf("C", (n, m))
    i, j, r = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    body = BufferStore(C, C.vload(vi, vj) + A.vload(vi, vk) * B.vload(vk, vj), (vi, vj))
    init = BufferStore(C, f32(0.0), (vi, vj))
    blk = block("C", [(vi, n, "S"), (vj, m, "S"), (vk, k, "R")], [i, j, r], body, init=init)
    return prim_func("matmul", [A, B, C], root(loop(i, n, loop(j, m, loop(r, k, blk)))))


def test_matmul_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype("float32")
    b = rng.standard_normal((64, 64)).astype("float32")
    c = np.full((64, 64), 123.0, dtype="float32")
    run_prim_func(matmul_func(64, 64, 64), [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_init_runs_when_reduce_vars_are_at_domain_min() -> None:
    # Row sums over a reduction domain starting at 2: init must run at vk == 2.
    A, S = buf("A", (3, 6)), buf("S", (3,))
    i, r, vi, vk = Var("i"), Var("r"), Var("vi"), Var("vk")
    body = BufferStore(S, S.vload(vi) + A.vload(vi, vk), (vi,))
    blk = block("S", [(vi, 3, "S")], [i, r + 2], body, init=BufferStore(S, f32(0.0), (vi,)))
    from tirc.ir import IterKind, IterVar

    ivs = (*blk.block.iter_vars, IterVar(vk, Range(IntImm(2), IntImm(4)), IterKind.REDUCE))
    blk = blk.replace(block=blk.block.replace(iter_vars=ivs))
    f = prim_func("rowsum", [A, S], root(loop(i, 3, loop(r, 4, blk))))
    a = np.arange(18, dtype="float32").reshape(3, 6)
    s = np.full(3, 100.0, dtype="float32")
    run_prim_func(f, [a, s])
    np.testing.assert_array_equal(s, a[:, 2:6].sum(axis=1))


def test_block_predicate_skips_iterations() -> None:
    A = buf("A", (10,))
    o, ii, v = Var("o"), Var("ii"), Var("v")
    body = BufferStore(A, f32(1.0), (v,))
    blk = block("B", [(v, 10, "S")], [o * 4 + ii], body, predicate=o * 4 + ii < 10)
    f = prim_func("f", [A], loop(o, 3, loop(ii, 4, blk)))
    a = np.zeros(10, dtype="float32")
    run_prim_func(f, [a])
    np.testing.assert_array_equal(a, np.ones(10, dtype="float32"))


def test_block_value_outside_domain_is_an_error() -> None:
    A = buf("A", (8,))
    i, v = Var("i"), Var("v")
    f = prim_func("f", [A], loop(i, 9, block("B", [(v, 8, "S")], [i],
                                              BufferStore(A, f32(1.0), (v,)))))
    with pytest.raises(InterpreterError, match=r"^block 'B': iteration variable v = 8 is "
                                               r"outside its domain \[0, 8\)$"):
        run_prim_func(f, [np.zeros(8, dtype="float32")])


def test_out_of_bounds_names_buffer_and_index() -> None:
    A = buf("A", (4, 16))
    i, j = Var("i"), Var("j")
    f = prim_func("f", [A], loop(i, 4, loop(j, 17, BufferStore(A, f32(0.0), (i, j)))))
    with pytest.raises(InterpreterError) as info:
        run_prim_func(f, [np.zeros((4, 16), dtype="float32")])
    assert str(info.value) == "out-of-bounds access A[0, 16] (shape (4, 16))"


def test_negative_index_is_out_of_bounds() -> None:
    A, B = buf("A", (4,)), buf("B", (4,))
    i = Var("i")
    f = prim_func("f", [A, B], loop(i, 4, BufferStore(B, A.vload(i - 1), (i,))))
    with pytest.raises(InterpreterError) as info:
        run_prim_func(f, [np.zeros(4, dtype="float32"), np.zeros(4, dtype="float32")])
    assert str(info.value) == "out-of-bounds access A[-1] (shape (4,))"


def test_symbolic_shapes_bind_from_arguments() -> None:
    n = Var("n")
    A, B = buf("A", (n, 3)), buf("B", (n, 3))
    i, j = Var("i"), Var("j")
    f = prim_func("f", [A, B], loop(i, n, loop(j, 3, BufferStore(
        B, A.vload(i, j) * f32(2.0), (i, j)))))
    a = np.arange(15, dtype="float32").reshape(5, 3)
    b = np.zeros((5, 3), dtype="float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, a * 2)
    with pytest.raises(InterpreterError) as info:
        run_prim_func(f, [a, np.zeros((4, 3), dtype="float32")])
    assert str(info.value) == "argument B: shape[0] is 4, but n = 5 from an earlier argument"


def test_argument_checks() -> None:
    A = buf("A", (4, 4))
    i = Var("i")
    f = prim_func("f", [A], loop(i, 4, BufferStore(A, f32(0.0), (i, i))))
    with pytest.raises(InterpreterError,
                       match=r"^argument A: expected dtype float32, got float64$"):
        run_prim_func(f, [np.zeros((4, 4))])
    with pytest.raises(InterpreterError, match=r"^argument A: expected 2 dimensions, got 1$"):
        run_prim_func(f, [np.zeros(16, dtype="float32")])
    with pytest.raises(InterpreterError, match=r"^argument A: shape\[1\] is 5, expected 4$"):
        run_prim_func(f, [np.zeros((4, 5), dtype="float32")])
    with pytest.raises(InterpreterError, match=r"^f takes 1 arguments, got 2$"):
        run_prim_func(f, [np.zeros((4, 4), dtype="float32"), 1])


def test_derived_shape_is_checked() -> None:
    n = Var("n")
    A, B = buf("A", (n,)), buf("B", (n * 2,))
    i = Var("i")
    f = prim_func("f", [A, B], loop(i, n, BufferStore(B, A.vload(i), (i * 2,))))
    a = np.arange(3, dtype="float32")
    b = np.zeros(6, dtype="float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, [0, 0, 1, 0, 2, 0])
    with pytest.raises(InterpreterError, match=r"^argument B: shape\[0\] is 5, expected 6$"):
        run_prim_func(f, [a, np.zeros(5, dtype="float32")])


def _int_func(op: str, dt: str = "int32"):
    A, B, C = buf("A", (8,), dt), buf("B", (8,), dt), buf("C", (8,), dt)
    i = Var("i")
    value = E.binop(op, A.vload(i), B.vload(i))
    return prim_func("f", [A, B, C], loop(i, 8, BufferStore(C, value, (i,))))


@pytest.mark.parametrize(("op", "ref"), [
    ("floordiv", np.floor_divide), ("floormod", np.mod),
    ("truncdiv", lambda a, b: np.trunc(a / b).astype(a.dtype)), ("truncmod", np.fmod),
])
def test_integer_division_semantics(op: str, ref) -> None:
    a = np.array([7, -7, 7, -7, 0, 9, -9, 1], dtype="int32")
    b = np.array([2, 2, -2, -2, 3, 4, 4, -5], dtype="int32")
    c = np.zeros(8, dtype="int32")
    run_prim_func(_int_func(op), [a, b, c])
    np.testing.assert_array_equal(c, ref(a, b))


def test_integer_division_by_zero() -> None:
    a = np.ones(8, dtype="int32")
    with pytest.raises(InterpreterError, match=r"^integer division by zero \(floordiv\)$"):
        run_prim_func(_int_func("floordiv"), [a, np.zeros(8, dtype="int32"), a.copy()])


@pytest.mark.parametrize("dt", ["int32", "int8", "uint8", "int64"])
def test_integer_overflow_wraps(dt: str) -> None:
    info = np.iinfo(dt)
    a = np.array([info.max, info.min, info.max, 3, 0, 1, info.max // 2, -1 if info.min else 5],
                 dtype=dt)
    b = np.array([1, -1 if info.min else 1, info.max, 5, 0, 1, 3, 7], dtype=dt)
    for op, ref in (("add", np.add), ("mul", np.multiply), ("sub", np.subtract)):
        c = np.zeros(8, dtype=dt)
        with np.errstate(all="ignore"):
            want = ref(a, b)
        run_prim_func(_int_func(op, dt), [a, b, c])
        np.testing.assert_array_equal(c, want)


def test_float32_arithmetic_stays_float32() -> None:
    # Sequential float32 accumulation differs from float64; the interpreter must match float32.
    A, S = buf("A", (1000,)), buf("S", (1,))
    i = Var("i")
    f = prim_func("f", [A, S], loop(i, 1000, BufferStore(
        S, S.vload(IntImm(0)) + A.vload(i) * f32(0.1), (IntImm(0),))))
    a = np.random.default_rng(1).standard_normal(1000).astype("float32")
    s = np.zeros(1, dtype="float32")
    run_prim_func(f, [a, s])
    want = np.float32(0)
    for v in a:
        want = np.float32(want + v * np.float32(0.1))
    assert s[0] == want
    assert float(s[0]) != float(sum(float(v) * 0.1 for v in a))


def test_casts() -> None:
    A, B, C = buf("A", (4,)), buf("B", (4,), "int32"), buf("C", (4,), "int8")
    i = Var("i")
    body = seq(BufferStore(B, E.cast("int32", A.vload(i)), (i,)),
               BufferStore(C, E.cast("int8", B.vload(i) * 100), (i,)))
    f = prim_func("f", [A, B, C], loop(i, 4, body))
    a = np.array([1.9, -1.9, 2.5, -0.5], dtype="float32")
    b, c = np.zeros(4, "int32"), np.zeros(4, "int8")
    run_prim_func(f, [a, b, c])
    np.testing.assert_array_equal(b, [1, -1, 2, 0])
    np.testing.assert_array_equal(c, np.array([100, -100, 200, 0]).astype("int8"))


@pytest.mark.parametrize(("name", "ref"), [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda x: 1 / np.sqrt(x)),
    ("tanh", np.tanh), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("erf", np.vectorize(math.erf)), ("abs", np.abs), ("floor", np.floor), ("ceil", np.ceil),
    ("round", np.rint), ("fast_exp", np.exp), ("exp2", np.exp2), ("log2", np.log2),
    ("trunc", np.trunc), ("sin", np.sin), ("cos", np.cos),
])
def test_math_intrinsics(name: str, ref) -> None:
    A, B = buf("A", (6,)), buf("B", (6,))
    i = Var("i")
    f = prim_func("f", [A, B], loop(i, 6, BufferStore(B, E.call(name, A.vload(i)), (i,))))
    a = np.array([0.5, 1.5, 2.5, 0.1, 3.0, 0.75], dtype="float32")
    b = np.zeros(6, dtype="float32")
    run_prim_func(f, [a, b])
    np.testing.assert_allclose(b, ref(a.astype("float64")).astype("float32"), rtol=2e-6)


def test_pow_fma_min_max_select() -> None:
    A, B = buf("A", (4,)), buf("B", (4, 5))
    i = Var("i")
    x = A.vload(i)
    values = [E.call("pow", x, f32(2.0)), E.call("fma", x, f32(3.0), f32(1.0)),
              E.minimum(x, f32(1.0)), E.maximum(x, f32(1.0)),
              E.select(x < f32(1.0), f32(-1.0), x)]
    f = prim_func("f", [A, B], loop(i, 4, seq(*[
        BufferStore(B, v, (i, IntImm(k))) for k, v in enumerate(values)])))
    a = np.array([0.5, 1.0, 2.0, -3.0], dtype="float32")
    b = np.zeros((4, 5), dtype="float32")
    run_prim_func(f, [a, b])
    want = np.stack([a ** 2, a * 3 + 1, np.minimum(a, 1), np.maximum(a, 1),
                     np.where(a < 1, -1, a)], axis=1)
    np.testing.assert_allclose(b, want, rtol=1e-6)


def test_if_then_else_is_lazy() -> None:
    # The guarded load A[i - 1] at i == 0 would be out of bounds.
    A, B = buf("A", (4,)), buf("B", (4,))
    i = Var("i")
    value = E.if_then_else(i > 0, A.vload(i - 1), f32(0.0))
    f = prim_func("f", [A, B], loop(i, 4, BufferStore(B, value, (i,))))
    a = np.array([1, 2, 3, 4], dtype="float32")
    b = np.zeros(4, dtype="float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, [0, 1, 2, 3])


def test_select_evaluates_both_operands() -> None:
    """T.Select is TVM's eager select: the same guarded load out of bounds at i == 0 is an
    error, as a -fbounds-check build traps on it (the interpreter returned [0, 1, 2, 3]);
    the data-dependent index keeps the static check from seeing it first."""
    A, B, idx = buf("A", (4,)), buf("B", (4,)), buf("I", (4,), "int32")
    i = Var("i")
    at = idx.vload(i)
    value = E.select(at > 0, A.vload(at - 1), f32(0.0))
    f = prim_func("f", [idx, A, B], loop(i, 4, BufferStore(B, value, (i,))))
    a = np.array([1, 2, 3, 4], dtype="float32")
    with pytest.raises(InterpreterError) as info:
        run_prim_func(f, [np.arange(4, dtype="int32"), a, np.zeros(4, dtype="float32")])
    assert str(info.value) == "out-of-bounds access A[-1] (shape (4,))"


def test_max_value_and_min_value() -> None:
    A = buf("A", (2,))
    f = prim_func("f", [A], seq(BufferStore(A, E.call("max_value", dt="float32"), (IntImm(0),)),
                                BufferStore(A, E.call("min_value", dt="float32"), (IntImm(1),))))
    a = np.zeros(2, dtype="float32")
    run_prim_func(f, [a])
    assert a[0] == np.finfo("float32").max and a[1] == np.finfo("float32").min


def test_allocate_let_if_while_assert() -> None:
    A = buf("A", (5,), "int32")
    T = make_buffer("T", (5,), "int32")
    i, x = Var("i"), Var("x")
    fill = loop(i, 5, LetStmt(x, i * i, IfThenElse(
        x > 4, BufferStore(T, x, (i,)), BufferStore(T, IntImm(0) - x, (i,)))))
    # while k < 5: A[k] = T[k]; k += 1  (k lives in a 1-element buffer)
    K = make_buffer("K", (1,), "int32")
    zero = IntImm(0)
    step = seq(BufferStore(A, T.vload(K.vload(zero)), (K.vload(zero),)),
               BufferStore(K, K.vload(zero) + 1, (zero,)))
    body = Allocate(T, Allocate(K, seq(fill, While(K.vload(zero) < 5, step))))
    f = prim_func("f", [A], AssertStmt(TRUE, "never", body))
    a = np.zeros(5, dtype="int32")
    run_prim_func(f, [a])
    np.testing.assert_array_equal(a, [0, -1, -4, 9, 16])


def test_assert_failure_raises_its_message() -> None:
    A = buf("A", (4,))
    n = Var("n")
    f = prim_func("f", [A], AssertStmt(n < 4, "n must be below 4",
                                       BufferStore(A, f32(1.0), (n,))), scalars=(n,))
    a = np.zeros(4, dtype="float32")
    run_prim_func(f, [a, 2])
    assert a[2] == 1
    with pytest.raises(InterpreterError, match=r"^n must be below 4$"):
        run_prim_func(f, [a, 4])


def test_runaway_while_is_stopped() -> None:
    A = buf("A", (1,))
    f = prim_func("f", [A], While(TRUE, BufferStore(A, f32(1.0), (IntImm(0),))))
    with pytest.raises(InterpreterError, match=r"^while loop ran more than 100 iterations$"):
        Interpreter(module(f), max_while_iterations=100).call("f", np.zeros(1, "float32"))


def test_block_alloc_buffer_is_fresh_and_uninitialised_each_time() -> None:
    """A block's buffer is allocated anew for each instance and holds NaN until written (a
    compiled library's stack or heap holds garbage there), so a read before the first write
    shows in the result instead of passing as a zero."""
    A, B = buf("A", (4, 3)), buf("B", (4,))
    tmp = make_buffer("tmp", (1,), "float32", scope="local")
    i, j, vi = Var("i"), Var("j"), Var("vi")
    zero = IntImm(0)
    body = seq(loop(j, 3, BufferStore(tmp, tmp.vload(zero) + A.vload(vi, j), (zero,))),
               BufferStore(B, tmp.vload(zero), (vi,)))
    blk = block("row", [(vi, 4, "S")], [i], body, alloc_buffers=(tmp,))
    f = prim_func("f", [A, B], loop(i, 4, blk))
    a = np.arange(12, dtype="float32").reshape(4, 3)
    b = np.zeros(4, dtype="float32")
    run_prim_func(f, [a, b])
    assert np.isnan(b).all()
    seeded = block("row", [(vi, 4, "S")], [i],
                   seq(BufferStore(tmp, f32(0.0), (zero,)), body), alloc_buffers=(tmp,))
    run_prim_func(prim_func("f", [A, B], loop(i, 4, seeded)), [a, b])
    np.testing.assert_array_equal(b, a.sum(axis=1))


def test_all_loop_kinds_and_thread_extent() -> None:
    A = buf("A", (2, 3, 4, 5, 6), "int32")
    vs = [Var(n) for n in "abcde"]
    tx = Var("threadIdx.x")
    store = BufferStore(A, vs[0] * 10000 + vs[1] * 1000 + vs[2] * 100 + vs[3] * 10 + tx,
                        (vs[0], vs[1], vs[2], vs[3], tx))
    body = AttrStmt(tx, "thread_extent", IntImm(6), store)
    nest = loop(vs[0], 2, loop(vs[1], 3, loop(vs[2], 4, loop(
        vs[3], 5, body, ForKind.UNROLLED), ForKind.VECTORIZED), ForKind.PARALLEL),
        ForKind.THREAD_BINDING, thread_tag="blockIdx.x")
    f = prim_func("f", [A], nest)
    a = np.zeros((2, 3, 4, 5, 6), dtype="int32")
    run_prim_func(f, [a])
    idx = np.indices(a.shape)
    np.testing.assert_array_equal(a, idx[0] * 10000 + idx[1] * 1000 + idx[2] * 100
                                  + idx[3] * 10 + idx[4])


def test_vector_loads_and_stores() -> None:
    A, B = buf("A", (8,)), buf("B", (8,))
    o = Var("o")
    ramp = E.Ramp(o * 4, IntImm(1), 4, dtype("int32x4"))
    two = E.Broadcast(f32(2.0), 4, dtype("float32x4"))
    value = E.BinOp("mul", A.vload(ramp), two, dtype("float32x4"))
    f = prim_func("f", [A, B], loop(o, 2, BufferStore(B, value, (ramp,))))
    a = np.arange(8, dtype="float32")
    b = np.zeros(8, dtype="float32")
    run_prim_func(f, [a, b])
    np.testing.assert_array_equal(b, a * 2)
    bad = prim_func("f", [A, B], loop(o, 2, BufferStore(
        B, A.vload(E.Ramp(o * 4 + 1, IntImm(1), 4, dtype("int32x4"))), (ramp,))))
    with pytest.raises(InterpreterError) as info:
        run_prim_func(bad, [a, b])
    assert str(info.value) == "out-of-bounds access A[[5, 6, 7, 8]] (shape (8,))"


FLOAT_DIVMOD = {"floordiv": np.floor_divide, "floormod": np.mod, "truncdiv": np.divide,
                "truncmod": np.fmod}


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(FLOAT_DIVMOD))
def test_float_division_and_modulo_match_numpy(op: str, dt: str) -> None:
    """Scalar and lane-wise float floordiv/floormod/truncdiv/truncmod (TVM's semantics) agree
    with numpy on operands of both signs (dyadic values, where floor(a / b) is exact)."""
    A, B, C, D = (buf(name, (8,), dt) for name in "ABCD")
    i, o = Var("i"), Var("o")
    ramp = E.Ramp(o * 4, IntImm(1), 4, dtype("int32x4"))
    vdt = dtype(dt).with_lanes(4)
    body = seq(loop(i, 8, BufferStore(C, E.binop(op, A.vload(i), B.vload(i)), (i,))),
               loop(o, 2, BufferStore(D, E.BinOp(op, A.vload(ramp), B.vload(ramp), vdt),
                                      (ramp,))))
    f = prim_func("f", [A, B, C, D], body)
    a = np.array([7.5, -7.5, 7.5, -7.5, 3.0, -3.0, 0.25, -6.0], dt)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.5, 1.25, -4.0, 3.0], dt)
    c, d = np.zeros(8, dt), np.zeros(8, dt)
    run_prim_func(f, [a, b, c, d])
    np.testing.assert_array_equal(c, FLOAT_DIVMOD[op](a, b))
    np.testing.assert_array_equal(d, FLOAT_DIVMOD[op](a, b))
    assert c.dtype == d.dtype == np.dtype(dt)


def test_float_floormod_is_tvms_formula() -> None:
    """floormod(a, b) is a - floor(a / b) * b, rounded per step, as TVM's generated code
    computes it (np.mod differs on 1 % 0.1)."""
    one, tenth = np.float32(1.0), np.float32(0.1)
    out = eval_expr(E.binop("floormod", f32(1.0), f32(0.1)))
    assert out == one - np.floor(one / tenth) * tenth != np.mod(one, tenth)


def test_buffers_of_vector_elements_and_shuffle() -> None:
    """A `T.Buffer((2,), "int32x2")` argument is an int32 array of shape (2, 2); an element
    loads and stores as a vector; T.Shuffle concatenates and picks lanes."""
    V = buf("V", (2,), "int32x2")
    x, y = Var("x"), Var("y")
    first = E.shuffle([x, y], [0, 1])
    swapped = E.shuffle([V.vload(IntImm(0)), x], [1, 0])
    lane = E.shuffle([V.vload(IntImm(0)), y], [2])
    f = prim_func("f", [V], seq(BufferStore(V, first, (IntImm(0),)),
                                BufferStore(V, swapped, (IntImm(1),)),
                                BufferStore(V, E.shuffle([lane, lane], [0, 1]), (IntImm(0),))),
                  (x, y))
    v = np.zeros((2, 2), np.int32)
    run_prim_func(f, [v, 3, -4])
    np.testing.assert_array_equal(v, [[-4, -4], [-4, 3]])
    with pytest.raises(InterpreterError, match=r"argument V: a buffer of int32x2 elements takes "
                                               r"an array of shape \(\*shape, 2\), got shape"):
        run_prim_func(f, [np.zeros(4, np.int32), 3, -4])


def test_explicit_strides_and_aliasing_views() -> None:
    # A is a (4, 4) view with row stride 8 into a larger array; F aliases C's data as 1-D.
    s0 = Var("s0")
    A = make_buffer("A", (4, 4), "float32", strides=(s0, IntImm(1)))
    C = buf("C", (4, 4))
    F = make_buffer("F", (16,), "float32")
    F = F.replace(data=C.data)
    i, j = Var("i"), Var("j")
    body = loop(i, 4, loop(j, 4, BufferStore(F, A.vload(i, j) + f32(1.0), (i * 4 + j,))))
    f = prim_func("f", [A, C], body)
    big = np.arange(32, dtype="float32").reshape(4, 8)
    c = np.zeros((4, 4), dtype="float32")
    run_prim_func(f, [big[:, :4], c])
    np.testing.assert_array_equal(c, big[:, :4] + 1)


def test_non_contiguous_argument_is_written_back() -> None:
    A = buf("A", (3, 2))
    i, j = Var("i"), Var("j")
    f = prim_func("f", [A], loop(i, 3, loop(j, 2, BufferStore(
        A, E.cast("float32", i * 2 + j), (i, j)))))
    base = np.zeros((2, 3), dtype="float32")
    run_prim_func(f, [base.T])
    np.testing.assert_array_equal(base.T, [[0, 1], [2, 3], [4, 5]])


def _tile_func(sub):
    A = buf("A", (4, 8))
    i, j, vi, o = Var("i"), Var("j"), Var("vi"), Var("o")
    region = BufferRegion(A, (Range(vi * 2, IntImm(2)), Range(IntImm(4), IntImm(4))))
    body = loop(i, 2, loop(j, 4, BufferStore(sub, sub.vload(i, j) + f32(1.0), (i, j))))
    blk = block("tile", [(vi, 2, "S")], [o], body,
                match_buffers=(MatchBufferRegion(sub, region),))
    return prim_func("f", [A], loop(o, 2, blk))


def test_match_buffer_views_a_region() -> None:
    s0, s1 = Var("s0"), Var("s1")
    sub = make_buffer("sub", (2, 4), "float32", strides=(s0, s1))
    a = np.zeros((4, 8), dtype="float32")
    run_prim_func(_tile_func(sub), [a])
    want = np.zeros((4, 8), dtype="float32")
    want[:, 4:] = 1
    np.testing.assert_array_equal(a, want)


def test_match_buffer_of_a_strided_region_without_strides() -> None:
    """A matched buffer declaring no strides views a non-contiguous region with the source's
    strides (TVM's LowerMatchBuffer; lower-blocks rewrites its accesses the same way)."""
    sub = make_buffer("sub", (2, 4), "float32")
    a = np.zeros((4, 8), dtype="float32")
    run_prim_func(_tile_func(sub), [a])
    want = np.zeros((4, 8), dtype="float32")
    want[:, 4:] = 1
    np.testing.assert_array_equal(a, want)


def test_parameter_with_only_an_elem_offset_takes_a_non_contiguous_array() -> None:
    """`T.match_buffer(a, (8, 4), elem_offset=off)` declares a compact layout; a strided
    view (a column slice) is read and written as a contiguous copy, as for a plain buffer
    (it was read through the view's storage as if row-major: wrong values)."""
    from tirc.frontend import parse

    mod = parse('''
@T.prim_func
def h(a: T.handle, b: T.handle):
    off = T.int32()
    A = T.match_buffer(a, (8, 4), elem_offset=off, offset_factor=1)
    B = T.match_buffer(b, (8, 4), elem_offset=off, offset_factor=1)
    for i, j in T.grid(8, 4):
        B[i, j] = A[i, j] * T.float32(2)
''')
    big = np.arange(64, dtype="float32").reshape(8, 8)
    out = np.zeros((8, 8), dtype="float32")
    Interpreter(mod).call("h", big[:, 2:6], out[:, 1:5])
    np.testing.assert_array_equal(out[:, 1:5], big[:, 2:6] * 2)
    assert not out[:, [0, 5, 6, 7]].any()


def test_event_tensor_counts_and_deadlock() -> None:
    A = buf("A", (2,))
    ev = make_buffer("E", (2,), "int32", scope="event")
    t = Var("t")
    notify = Evaluate(E.call("event_notify", ev.vload(t), IntImm(1), dt="void"))
    wait = Evaluate(E.call("event_wait", ev.vload(IntImm(1)), dt="void"))
    ok = Allocate(ev, seq(loop(t, 2, notify), wait, BufferStore(A, f32(1.0), (IntImm(0),))),
                  init=IntImm(2))
    a = np.zeros(2, dtype="float32")
    with pytest.raises(InterpreterError) as info:
        run_prim_func(prim_func("f", [A], ok), [a])
    assert str(info.value) == "deadlock or missing dependence: wait on E[1] with counter 1"
    twice = Allocate(ev, seq(loop(t, 2, seq(notify, notify)), wait,
                             BufferStore(A, f32(1.0), (IntImm(0),))), init=IntImm(2))
    run_prim_func(prim_func("f", [A], twice), [a])
    assert a[0] == 1


def test_unbound_variable_is_reported() -> None:
    A = buf("A", (4,))
    n = Var("n")
    f = prim_func("f", [A], BufferStore(A, f32(1.0), (n,)))
    with pytest.raises(InterpreterError, match=r"^variable 'n' is used before it is defined$"):
        run_prim_func(f, [np.zeros(4, dtype="float32")])


def test_scalar_parameters_and_module_call() -> None:
    A = buf("A", (4,))
    n, s = Var("n"), E.var("s", "float32")
    i = Var("i")
    f = prim_func("scale", [A], loop(i, n, BufferStore(A, A.vload(i) * s, (i,))), scalars=(n, s))
    interp = Interpreter(module(f))
    a = np.ones(4, dtype="float32")
    assert interp.call("scale", a, 3, 2.5) is None
    np.testing.assert_array_equal(a, [2.5, 2.5, 2.5, 1])
    assert interp.prim_func("scale") is interp.prim_func("scale")
    with pytest.raises(InterpreterError, match=r"^no function named 'nope' in the module$"):
        interp.call("nope")


def test_eval_expr() -> None:
    x = Var("x")
    assert eval_expr((x * 7 + 3) // 2 - x % 3, {x: -5}) == ((-5 * 7 + 3) // 2 - (-5 % 3))
    assert eval_expr(E.cast("float32", x) / FloatImm(3.0, F32), {x: 1}) == np.float32(1) / 3


def test_errors_carry_the_source_span() -> None:
    from tirc.frontend import parse

    mod = parse('''
@T.prim_func
def f(A: T.Buffer((4, 16), "float32")):
    for i, j in T.grid(4, 17):
        A[i, j] = T.float32(0)
''', filename="oob.tir")
    with pytest.raises(InterpreterError) as info:
        Interpreter(mod).call("f", np.zeros((4, 16), dtype="float32"))
    assert str(info.value) == "out-of-bounds access A[0, 16] (shape (4, 16))"
    assert info.value.span is not None
    assert (info.value.span.file, info.value.span.line) == ("oob.tir", 5)


def test_allocation_with_strides_holds_its_last_element() -> None:
    """`T.alloc_buffer(..., strides=[17, 1])` (TVM's lower_opaque_block test) reaches offset
    3 * 17 + 15: its storage covers the strides, not just the product of the shape."""
    from tirc.frontend import parse

    mod = parse('''
@T.prim_func
def f(A: T.Buffer((4, 16), "float32"), C: T.Buffer((4, 16), "float32")):
    B = T.alloc_buffer([4, 16], "float32", strides=[17, 1])
    for i, j in T.grid(4, 16):
        B[i, j] = A[i, j] + 1.0
    for i, j in T.grid(4, 16):
        C[i, j] = B[i, j]
''')
    a = np.arange(64, dtype=np.float32).reshape(4, 16)
    c = np.zeros_like(a)
    Interpreter(mod).call("f", a, c)
    np.testing.assert_array_equal(c, a + 1)
