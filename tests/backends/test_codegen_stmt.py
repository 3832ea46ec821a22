"""Statement code generation: if/else, while, lets, asserts, allocations on the stack and the
heap (as storage-rewrite classifies them, and by size without it), and loop metadata."""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm
import numpy as np
import pytest
from backend_support import build_library, emit, func, i64
from tirc.ir import For, ForKind, IRModule, Var, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.expr import StringImm, binop, call, cast, const
from tirc.ir.intrinsics import BREAK_LOOP
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    IfThenElse,
    LetStmt,
    While,
    seq,
)
from tirc.runtime import TircError

I64 = dtype("int64")
N = 100


def _if_else() -> Any:
    x, out = make_buffer("X", (i64(N),), "int32"), make_buffer("Out", (i64(N),), "int32")
    i = Var("i", I64)
    body = IfThenElse(binop("floormod", x.vload(i), 2).eq(0),
                      BufferStore(out, x.vload(i) // 2, (i,)),
                      BufferStore(out, x.vload(i) * 3 + 1, (i,)))
    return func("collatz_step", [x, out], For(i, i64(0), i64(N), ForKind.SERIAL, body))


def _while_let() -> Any:
    """out[0] = number of halvings of x[0] until it is 1, with a let-bound counter cell."""
    x, out = make_buffer("X", (i64(1),), "int64"), make_buffer("Out", (i64(1),), "int64")
    first = Var("first", I64)
    body = LetStmt(first, x.vload(i64(0)), seq(
        BufferStore(out, i64(0), (i64(0),)),
        BufferStore(x, first, (i64(0),)),
        While(x.vload(i64(0)) > 1, seq(
            BufferStore(x, x.vload(i64(0)) // 2, (i64(0),)),
            BufferStore(out, out.vload(i64(0)) + 1, (i64(0),))))))
    return func("halvings", [x, out], body)


def _assert() -> Any:
    x, out = make_buffer("X", (i64(4),), "float32"), make_buffer("Out", (i64(4),), "float32")
    i = Var("i", I64)
    body = For(i, i64(0), i64(4), ForKind.SERIAL,
               AssertStmt(x.vload(i) >= const(0.0), "x must be non-negative (100% sure)",
                          BufferStore(out, x.vload(i), (i,))))
    return func("checked_copy", [x, out], body)


def _scratch(name: str, size: Any, kind: str | None, n: Any) -> Any:
    """out[i] = x[i] * 2 through a scratch buffer of `size` elements."""
    x, out = make_buffer("X", (n,), "float32"), make_buffer("Out", (n,), "float32")
    tmp = make_buffer("tmp", (size,), "float32", scope="local")
    i, j = Var("i", I64), Var("j", I64)
    fill = For(i, i64(0), n, ForKind.SERIAL, BufferStore(tmp, x.vload(i) * 2.0, (i,)))
    copy = For(j, i64(0), n, ForKind.SERIAL, BufferStore(out, tmp.vload(j), (j,)))
    inner = seq(fill, copy)
    if kind is not None:
        inner = AttrStmt(tmp, "storage_kind", StringImm(kind), inner)
    return func(name, [x, out], Allocate(tmp, inner))


def _event_init() -> Any:
    out = make_buffer("Out", (i64(8),), "int32")
    ev = make_buffer("E", (i64(8),), "int32", scope="event")
    i = Var("i", I64)
    body = Allocate(ev, For(i, i64(0), i64(8), ForKind.SERIAL,
                            BufferStore(out, ev.vload(i) + 1, (i,))), init=const(5))
    return func("event_init", [out], body)


def _unrolled() -> Any:
    x, out = make_buffer("X", (i64(8),), "float32"), make_buffer("Out", (i64(8),), "float32")
    i = Var("i", I64)
    return func("unrolled", [x, out], For(i, i64(0), i64(8), ForKind.UNROLLED,
                                          BufferStore(out, x.vload(i) + 1.0, (i,))))


NV = Var("n", I64)
FUNCS = [_if_else(), _while_let(), _assert(),
         _scratch("stack_scratch", i64(N), "stack", i64(N)),
         _scratch("heap_scratch", i64(N), "heap", i64(N)),
         _scratch("auto_scratch", NV, None, NV),
         _event_init(), _unrolled()]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_library(FUNCS, tmp_path_factory.mktemp("stmt") / "stmt.so", 1)


def test_if_else(lib: Any) -> None:
    x = np.arange(N, dtype=np.int32)
    np.testing.assert_array_equal(lib.collatz_step(x), np.where(x % 2 == 0, x // 2, 3 * x + 1))


def test_while_and_let(lib: Any) -> None:
    out = lib.halvings(np.array([1000], np.int64))
    assert out.tolist() == [9]


def test_assert_failure_is_an_error_with_its_message(lib: Any) -> None:
    assert lib.checked_copy(np.ones(4, np.float32)).tolist() == [1, 1, 1, 1]
    with pytest.raises(TircError) as info:
        lib.checked_copy(np.array([1, -1, 2, 3], np.float32))
    assert str(info.value) == "x must be non-negative (100% sure)"
    assert info.value.code == -3


@pytest.mark.parametrize("name", ["stack_scratch", "heap_scratch", "auto_scratch"])
def test_allocations(lib: Any, name: str) -> None:
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    np.testing.assert_array_equal(lib[name](x), x * 2)


def test_allocation_with_init(lib: Any) -> None:
    assert lib.event_init().tolist() == [6] * 8


def test_stack_and_heap_in_ir() -> None:
    mod = IRModule({f.name: f for f in FUNCS[3:6]})
    text = emit(mod, "ll", None, 0).decode()
    stack = text[text.index("define internal i32 @stack_scratch.compute"):]
    stack = stack[:stack.index("\n}\n")]
    assert "alloca [100 x float], align 64" in stack and "aligned_alloc" not in stack
    heap = text[text.index("define internal i32 @heap_scratch.compute"):]
    heap = heap[:heap.index("\n}\n")]
    assert "call ptr @aligned_alloc(i64 64" in heap and "call void @free" in heap


def test_unroll_metadata() -> None:
    text = emit(IRModule({"unrolled": FUNCS[-1]}), "ll", None, 0).decode()
    assert '!"llvm.loop.unroll.full"' in text
    assert "!llvm.loop" in text
    llvm.parse_assembly(text).verify()


def test_unroll_pragma_metadata() -> None:
    x, out = make_buffer("X", (i64(8),), "float32"), make_buffer("Out", (i64(8),), "float32")
    i, j = Var("i", I64), Var("j", I64)
    enable = For(i, i64(0), i64(8), ForKind.SERIAL, BufferStore(out, x.vload(i), (i,)),
                 annotations={"pragma_unroll": True})
    count = For(j, i64(0), i64(8), ForKind.SERIAL, BufferStore(x, out.vload(j), (j,)),
                annotations={"pragma_unroll": 4})
    k = Var("k", I64)
    rolled = For(k, i64(0), i64(8), ForKind.SERIAL, BufferStore(out, x.vload(k), (k,)),
                 annotations={"pragma_unroll": 0})
    text = emit(IRModule({"p": func("p", [x, out], seq(enable, count, rolled))}), "ll", None,
                0).decode()
    assert '!{!"llvm.loop.unroll.enable"}' in text
    assert '!{!"llvm.loop.unroll.count", i32 4}' in text
    assert '!{!"llvm.loop.unroll.disable"}' in text
    assert '!{!"llvm.loop.vectorize.enable", i1 false}' in text
    llvm.parse_assembly(text).verify()


def test_rolled_loop_stays_a_loop_at_o3() -> None:
    """`pragma_unroll = 0` (a sparse plan's copy loops): LLVM neither unrolls nor vectorizes
    it, even with a constant trip count it would otherwise unroll completely."""
    x, out = make_buffer("X", (i64(8),), "float32"), make_buffer("Out", (i64(8),), "float32")
    k = Var("k", I64)
    rolled = For(k, i64(0), i64(8), ForKind.SERIAL,
                 BufferStore(out, x.vload(k) * x.vload(k), (k,)),
                 annotations={"pragma_unroll": 0})
    text = emit(IRModule({"r": func("r", [x, out], rolled)}), "ll", None, 3).decode()
    assert "phi i64" in text and "x float>" not in text and text.count("store float") == 1


def test_unrolled_loop_runs(lib: Any) -> None:
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(lib.unrolled(x), x + 1)


def test_vectorize_hint_only_where_llvm_can_take_it() -> None:
    """A `vectorized` loop gets LLVM's vectorize hint, except one whose store is guarded by an
    `if` (a tail guard left at -O1): LLVM cannot if-convert it and would print a warning."""
    x, out = make_buffer("X", (i64(64),), "float32"), make_buffer("Out", (i64(64),), "float32")
    n = Var("n", I64)
    i, j = Var("i", I64), Var("j", I64)
    plain = For(i, i64(0), i64(64), ForKind.VECTORIZED, BufferStore(out, x.vload(i), (i,)))
    guarded = For(j, i64(0), i64(64), ForKind.VECTORIZED,
                  IfThenElse(binop("lt", j, n), BufferStore(out, x.vload(j), (j,))))
    hint = '!"llvm.loop.vectorize.enable", i1 true'
    text = emit(IRModule({"p": func("p", [x, out], plain)}), "ll", None, 0).decode()
    assert hint in text
    text = emit(IRModule({"g": func("g", [x, out], guarded, (n,))}), "ll", None, 0).decode()
    assert hint not in text
    llvm.parse_assembly(text).verify()


@pytest.mark.parametrize("jump", [False, True])
def test_symbolic_unroll_hint_leaves_no_llvm_warning(capfd: pytest.CaptureFixture[str],
                                                     tmp_path: Any, jump: bool) -> None:
    """An unroll hint on a loop of symbolic extent (what the unroll pass leaves of `T.unroll(n)`)
    asks LLVM for a count: `unroll.enable` there needs runtime unrolling, which LLVM refused
    for its vectorizer's remainder loop or a loop that breaks, printing 'loop not unrolled'."""
    n = Var("n", I64)
    x, out = make_buffer("X", (n,), "float32"), make_buffer("Out", (n,), "float32")
    i = Var("i", I64)
    store = BufferStore(out, x.vload(i) * 2.0, (i,))
    body = seq(IfThenElse(x.vload(i) > 4.0, Evaluate(call(BREAK_LOOP, dt="int32"))), store) \
        if jump else store
    loop = For(i, i64(0), n, ForKind.SERIAL, body, annotations={"pragma_unroll": True})
    f = func("twice", [x, out], loop, (n,))
    text = emit(IRModule({"twice": f}), "ll", None, 0).decode()
    assert '!{!"llvm.loop.unroll.count", i32 4}' in text
    assert "llvm.loop.unroll.enable" not in text
    lib = build_library([f], tmp_path / "twice.so", 3)
    assert "loop not unrolled" not in capfd.readouterr().err
    xs = np.arange(11, dtype=np.float32)
    got = lib.twice(xs, np.zeros(11, np.float32), 11)
    want = np.where(np.arange(11) < 5, xs * 2, 0) if jump else xs * 2
    np.testing.assert_array_equal(got, want)


def test_no_vectorize_hint_on_a_loop_around_a_loop(capfd: pytest.CaptureFixture[str],
                                                   tmp_path: Any) -> None:
    """A `vectorized` loop whose body holds a loop (an inner sum, left so at -O1) gets no
    vectorize hint: LLVM vectorizes innermost loops only, and printed 'loop not vectorized'."""
    n = Var("n", I64)
    x, out = make_buffer("X", (i64(64) * n,), "float32"), make_buffer("Out", (i64(64),), "float32")
    i, k = Var("i", I64), Var("k", I64)
    body = seq(BufferStore(out, const(0.0), (i,)),
               For(k, i64(0), n, ForKind.SERIAL,
                   BufferStore(out, out.vload(i) + x.vload(i * n + k), (i,))))
    f = func("rows", [x, out], For(i, i64(0), i64(64), ForKind.VECTORIZED, body), (n,))
    text = emit(IRModule({"rows": f}), "ll", None, 0).decode()
    assert "llvm.loop.vectorize.enable" not in text
    lib = build_library([f], tmp_path / "rows.so", 1)
    assert "loop not vectorized" not in capfd.readouterr().err
    xs = np.arange(320, dtype=np.float32).reshape(64, 5)
    np.testing.assert_array_equal(lib.rows(xs.ravel(), np.zeros(64, np.float32), 5),
                                  xs.sum(axis=1))



def _pairs(trips: int, scratch: bool = False) -> Any:
    """out[4i + j] = x[4i + j] * (j + 1) for j below `trips` (through a one-element scratch
    buffer allocated in the inner loop's body with `scratch`)."""
    x, out = make_buffer("X", (i64(32),), "float32"), make_buffer("Out", (i64(32),), "float32")
    i, j = Var("i", I64), Var("j", I64)
    at = i * 4 + j
    value = x.vload(at) * cast(dtype("float32"), j + 1)
    store: Any = BufferStore(out, value, (at,))
    if scratch:
        tmp = make_buffer("tmp", (i64(1),), "float32", scope="local")
        store = Allocate(tmp, seq(BufferStore(tmp, value, (i64(0),)),
                                  BufferStore(out, tmp.vload(i64(0)), (at,))))
    inner = For(j, i64(0), i64(trips), ForKind.SERIAL, store)
    return func(f"pairs{trips}{'_scratch' if scratch else ''}", [x, out],
                For(i, i64(0), i64(8), ForKind.SERIAL, inner))


@pytest.mark.parametrize("trips, scratch, straight", [(2, False, True), (1, False, True),
                                                       (3, False, False), (2, True, False)])
def test_two_trip_loops_are_straight_line_code(tmp_path: Any, trips: int, scratch: bool,
                                               straight: bool) -> None:
    """A serial loop of at most two iterations over a small loop-free body has no loop blocks
    of its own in the LLVM IR (LLVM would spend its loop passes unrolling it); one of three,
    or one allocating in its body, stays a loop. Either way it computes the same."""
    f = _pairs(trips, scratch)
    text = emit(IRModule({f.name: f}), "ll", None, 0).decode()
    assert ("for.j" not in text) == straight
    assert "for.i" in text
    x = np.arange(32, dtype=np.float32).reshape(8, 4) + 1
    out = build_library([f], tmp_path / "pairs.so")[f.name](x.ravel()).reshape(8, 4)
    want = x[:, :trips] * np.arange(1, trips + 1, dtype=np.float32)
    np.testing.assert_array_equal(out[:, :trips], want)
