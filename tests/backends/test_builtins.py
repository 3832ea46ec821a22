"""Non-math intrinsics: bit operations, reinterpret, dtype limits, no-op hints, and the atomic
event-tensor operations (`event_notify` decrements, `event_wait` returns once it reaches 0)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from backend_support import build_library, elementwise, func, i64
from tirc.ir import For, ForKind, IRModule, Var, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.expr import Call, IntImm, StringImm, call, cast, const
from tirc.ir.interpreter import Interpreter
from tirc.ir.stmt import Allocate, BufferStore, Evaluate, seq

I32 = dtype("int32")
BF16 = np.dtype(ml_dtypes.bfloat16)


def bit(op: str, dt: str) -> Any:
    return lambda a, b: Call(op, (a, b), dtype(dt))


def _limits() -> Any:
    out = make_buffer("Out", (i64(6),), "float64")
    vals = [Call("max_value", (), dtype("int8")), Call("min_value", (), dtype("uint32")),
            Call("max_value", (), dtype("float16")), Call("min_value", (), dtype("float32")),
            Call("max_value", (), dtype("bfloat16")), Call("max_value", (), dtype("int64"))]
    return func("limits", [out], seq(*[BufferStore(out, cast("float64", v), (i64(k),))
                                       for k, v in enumerate(vals)]))


def _events() -> Any:
    """E starts at 3; three notifies (one of count 2) then a wait; out = [E after 2, E at end]."""
    out = make_buffer("Out", (i64(2),), "int32")
    ev = make_buffer("E", (i64(1),), "int32", scope="event")
    e0 = ev.vload(i64(0))
    i = Var("i", dtype("int64"))
    body = seq(
        For(i, i64(0), i64(2), ForKind.SERIAL, Evaluate(Call("event_notify", (e0,), I32))),
        BufferStore(out, ev.vload(i64(0)), (i64(0),)),
        Evaluate(Call("event_notify", (e0, IntImm(2, I32)), I32)),
        Evaluate(Call("event_wait", (e0,), I32)),
        Evaluate(Call("tvm_storage_sync", (StringImm("shared"),), I32)),
        Evaluate(Call("assume", (const(True),), I32)),
        Evaluate(Call("tvm_thread_fence", (), I32)),
        BufferStore(out, ev.vload(i64(0)), (i64(1),)))
    return func("events", [out], Allocate(ev, body, init=IntImm(4, I32)))


FUNCS = [
    elementwise("shl_i32", ["int32", "int32"], "int32", bit("shift_left", "int32")),
    elementwise("shr_i16", ["int16", "int16"], "int16", bit("shift_right", "int16")),
    elementwise("shr_u16", ["uint16", "uint16"], "uint16", bit("shift_right", "uint16")),
    elementwise("and_u8", ["uint8", "uint8"], "uint8", bit("bitwise_and", "uint8")),
    elementwise("or_i64", ["int64", "int64"], "int64", bit("bitwise_or", "int64")),
    elementwise("xor_i8", ["int8", "int8"], "int8", bit("bitwise_xor", "int8")),
    elementwise("not_i32", ["int32"], "int32", lambda a: Call("bitwise_not", (a,), I32)),
    elementwise("f32_bits", ["float32"], "int32", lambda a: Call("reinterpret", (a,), I32)),
    elementwise("bf16_bits", ["bfloat16"], "uint16",
                lambda a: Call("reinterpret", (a,), dtype("uint16"))),
    elementwise("bits_f16", ["int16"], "float16",
                lambda a: Call("reinterpret", (a,), dtype("float16"))),
    elementwise("likely_exp", ["float32"], "float32",
                lambda a: call("exp", Call("likely", (a,), dtype("float32")))),
    _limits(), _events(),
]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_library(FUNCS, tmp_path_factory.mktemp("builtins") / "b.so", 2)


def rand_int(dt: str, lo: int, hi: int) -> np.ndarray:
    return np.random.default_rng(5).integers(lo, hi, 64).astype(dt)


def test_bit_operations(lib: Any) -> None:
    a, s = rand_int("int32", -1000, 1000), rand_int("int32", 0, 20)
    np.testing.assert_array_equal(lib.shl_i32(a, s), a << s)
    h, hs = rand_int("int16", -30000, 30000), rand_int("int16", 0, 15)
    np.testing.assert_array_equal(lib.shr_i16(h, hs), h >> hs)
    u, us = rand_int("uint16", 0, 65535), rand_int("uint16", 0, 15)
    np.testing.assert_array_equal(lib.shr_u16(u, us), u >> us)
    b1, b2 = rand_int("uint8", 0, 255), rand_int("uint8", 0, 255)[::-1].copy()
    np.testing.assert_array_equal(lib.and_u8(b1, b2), b1 & b2)
    w1, w2 = rand_int("int64", -10**12, 10**12), rand_int("int64", 0, 10**12)
    np.testing.assert_array_equal(lib.or_i64(w1, w2), w1 | w2)
    x1 = rand_int("int8", -128, 127)
    np.testing.assert_array_equal(lib.xor_i8(x1, x1[::-1].copy()), x1 ^ x1[::-1])
    np.testing.assert_array_equal(lib.not_i32(a), ~a)


def test_reinterpret(lib: Any) -> None:
    f = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(lib.f32_bits(f), f.view(np.int32))
    g = f.astype(BF16)
    np.testing.assert_array_equal(lib.bf16_bits(g), g.view(np.uint16))
    bits = np.arange(0x3C00, 0x3C00 + 64, dtype=np.int16)
    np.testing.assert_array_equal(lib.bits_f16(bits), bits.view(np.float16))


def test_limits_and_hints(lib: Any) -> None:
    assert lib.limits().tolist() == [127, 0, 65504, float(np.finfo(np.float32).min),
                                     float(ml_dtypes.finfo(BF16).max), 2.0**63]
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    np.testing.assert_allclose(lib.likely_exp(x), np.exp(x), rtol=2e-6)


def test_event_counters(lib: Any) -> None:
    assert lib.events().tolist() == [2, 0]


@pytest.mark.parametrize("opt", [0, 2])
def test_shifts_out_of_range_are_numpys(tmp_path: Any, opt: int) -> None:
    """A negative shift or one of the width or more: `<<` gives 0, `>>` the sign (NumPy's
    rule, which the interpreter follows; LLVM's shl/ashr/lshr are poison there, and x86's
    scalar shifts take the amount modulo the width while its vector shifts give 0)."""
    lib = build_library(FUNCS[:3], tmp_path / f"shifts{opt}.so", opt)
    a = np.resize(np.array([1, -8, 5, -1, 7, -3, 12, 2**30], dtype="int32"), 64)
    s = np.resize(np.array([40, 40, -1, 33, 31, 32, 0, 1], dtype="int32"), 64)
    np.testing.assert_array_equal(lib.shl_i32(a, s), np.left_shift(a, s))
    h = np.resize(np.array([-5, 5, -32768, 100], dtype="int16"), 64)
    hs = np.resize(np.array([16, 17, -2, 15], dtype="int16"), 64)
    np.testing.assert_array_equal(lib.shr_i16(h, hs), np.right_shift(h, hs))
    u = np.resize(np.array([65535, 1, 8, 9], dtype="uint16"), 64)
    us = np.resize(np.array([16, 65535, 3, 15], dtype="uint16"), 64)
    np.testing.assert_array_equal(lib.shr_u16(u, us), np.right_shift(u, us))
    interp = Interpreter(IRModule({f.name: f for f in FUNCS[:3]}))
    for name, args, ref in (("shl_i32", (a, s), np.left_shift(a, s)),
                            ("shr_i16", (h, hs), np.right_shift(h, hs)),
                            ("shr_u16", (u, us), np.right_shift(u, us))):
        out = np.zeros_like(ref)
        interp.call(name, *args, out)
        np.testing.assert_array_equal(out, ref)
