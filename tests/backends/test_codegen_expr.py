"""Expression code generation against numpy: integer division semantics, casts, intrinsics,
float16/bfloat16 arithmetic, selects and comparisons, at -O0 and -O3 from one library each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from backend_support import EXACT, build_library, elementwise, emit
from tirc.ir import PrimExpr
from tirc.ir.dtype import dtype
from tirc.ir.expr import (
    Let,
    Var,
    binop,
    call,
    cast,
    const,
    if_then_else,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    select,
)
from tirc.ir.target import parse_target

N = 64
BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(7)


def ints(dt: str, lo: int = -100, hi: int = 100, nonzero: bool = False) -> np.ndarray:
    info = np.iinfo(dt)
    x = RNG.integers(max(lo, info.min), min(hi, info.max) + 1, N).astype(dt)
    if nonzero:
        x[x == 0] = 3
    return x


def floats(dt: Any, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
    return RNG.uniform(lo, hi, N).astype(dt)


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (q * np.sign(a) * np.sign(b)).astype(a.dtype)


@dataclass
class Case:
    name: str
    in_dtypes: list[str]
    out_dtype: str
    ir: Callable[..., PrimExpr]
    ref: Callable[..., np.ndarray]
    inputs: list[np.ndarray]
    rtol: float = 0.0
    atol: float = 0.0


def _int_cases() -> list[Case]:
    out = []
    for dt in ("int8", "int16", "int32", "int64"):
        a, b = ints(dt), ints(dt, -9, 9, nonzero=True)
        out += [
            Case(f"floordiv_{dt}", [dt, dt], dt, lambda x, y: x // y, np.floor_divide, [a, b]),
            Case(f"floormod_{dt}", [dt, dt], dt, lambda x, y: x % y, np.mod, [a, b]),
            Case(f"truncdiv_{dt}", [dt, dt], dt, lambda x, y: binop("truncdiv", x, y),
                 trunc_div, [a, b]),
            Case(f"truncmod_{dt}", [dt, dt], dt, lambda x, y: binop("truncmod", x, y),
                 lambda x, y: (x - trunc_div(x, y) * y).astype(x.dtype), [a, b]),
        ]
    a32 = ints("int32", -1000, 1000)
    out += [
        Case("floordiv_const", ["int32"], "int32", lambda x: x // 7, lambda x: x // 7, [a32]),
        Case("floormod_const", ["int32"], "int32", lambda x: x % 7, lambda x: x % 7, [a32]),
        Case("floordiv_negconst", ["int32"], "int32", lambda x: x // -3, lambda x: x // -3,
             [a32]),
        Case("floormod_negconst", ["int32"], "int32", lambda x: x % -3, lambda x: x % -3,
             [a32]),
    ]
    # Positive constant divisors take a shorter path (a shift or mask for powers of two):
    # the whole range of each type, its extremes included.
    for dt, divisors in (("int8", (1, 2, 64, 3, 127)), ("int16", (16, 1000)),
                         ("int32", (1, 8, 1 << 30)), ("int64", (1 << 40, 12345))):
        info = np.iinfo(dt)  # its own generator: the other cases keep their inputs
        full = np.random.default_rng(11).integers(info.min, info.max, N, endpoint=True,
                                                  dtype=dt)
        full[:2] = info.min, info.max
        for d in divisors:
            out += [
                Case(f"floordiv_{dt}_by_{d}", [dt], dt, lambda x, d=d: x // d,
                     lambda x, d=d: x // x.dtype.type(d), [full]),
                Case(f"floormod_{dt}_by_{d}", [dt], dt, lambda x, d=d: x % d,
                     lambda x, d=d: x % x.dtype.type(d), [full]),
            ]
    out += [
        Case("div_by_zero_is_zero", ["int32", "int32"], "int32", lambda x, y: x // y,
             lambda x, y: np.zeros_like(x), [a32, np.zeros(N, np.int32)]),
        Case("mod_by_zero_is_zero", ["int32", "int32"], "int32", lambda x, y: x % y,
             lambda x, y: np.zeros_like(x), [a32, np.zeros(N, np.int32)]),
        Case("udiv_uint32", ["uint32", "uint32"], "uint32", lambda x, y: x // y,
             np.floor_divide, [ints("uint32", 0, 4_000_000_000), ints("uint32", 1, 1000)]),
        Case("umod_uint8", ["uint8", "uint8"], "uint8", lambda x, y: x % y, np.mod,
             [ints("uint8", 0, 255), ints("uint8", 1, 255)]),
        Case("min_int16", ["int16", "int16"], "int16", minimum, np.minimum,
             [ints("int16"), ints("int16")]),
        Case("max_uint16", ["uint16", "uint16"], "uint16", maximum, np.maximum,
             [ints("uint16", 0, 65535), ints("uint16", 0, 65535)]),
        Case("wrapping_add_int8", ["int8", "int8"], "int8", lambda x, y: x + y,
             lambda x, y: x + y, [ints("int8", -128, 127), ints("int8", -128, 127)]),
        Case("abs_int32", ["int32"], "int32", lambda x: call("abs", x), np.abs, [a32]),
        Case("mul_sub_int64", ["int64", "int64"], "int64", lambda x, y: x * y - y,
             lambda x, y: x * y - y, [ints("int64", -10**9, 10**9), ints("int64", -10**9, 10**9)]),
    ]
    return out


def _cast_cases() -> list[Case]:
    f = floats(np.float32, -300, 300)
    return [
        Case("f32_to_i32", ["float32"], "int32", lambda x: cast("int32", x),
             lambda x: x.astype(np.int32), [f]),
        Case("f32_to_u8", ["float32"], "uint8", lambda x: cast("uint8", x),
             lambda x: x.astype(np.uint8), [floats(np.float32, 0, 255)]),
        Case("i32_to_f32", ["int32"], "float32", lambda x: cast("float32", x),
             lambda x: x.astype(np.float32), [ints("int32", -10**6, 10**6)]),
        Case("u32_to_f64", ["uint32"], "float64", lambda x: cast("float64", x),
             lambda x: x.astype(np.float64), [ints("uint32", 0, 4_000_000_000)]),
        Case("i64_to_i8_wraps", ["int64"], "int8", lambda x: cast("int8", x),
             lambda x: x.astype(np.int8), [ints("int64", -10**6, 10**6)]),
        Case("u8_to_i32_zext", ["uint8"], "int32", lambda x: cast("int32", x),
             lambda x: x.astype(np.int32), [ints("uint8", 0, 255)]),
        Case("i8_to_i64_sext", ["int8"], "int64", lambda x: cast("int64", x),
             lambda x: x.astype(np.int64), [ints("int8", -128, 127)]),
        Case("f64_to_f16", ["float64"], "float16", lambda x: cast("float16", x),
             lambda x: x.astype(np.float16), [floats(np.float64, -1000, 1000)]),
        Case("f16_to_f32", ["float16"], "float32", lambda x: cast("float32", x),
             lambda x: x.astype(np.float32), [floats(np.float16)]),
        Case("f32_to_bf16", ["float32"], "bfloat16", lambda x: cast("bfloat16", x),
             lambda x: x.astype(BF16), [floats(np.float32, -1000, 1000)]),
        Case("bf16_to_f64", ["bfloat16"], "float64", lambda x: cast("float64", x),
             lambda x: x.astype(np.float64), [floats(BF16)]),
        Case("f16_to_bf16", ["float16"], "bfloat16", lambda x: cast("bfloat16", x),
             lambda x: x.astype(np.float32).astype(BF16), [floats(np.float16)]),
        Case("bool_to_f32", ["bool"], "float32", lambda x: cast("float32", x),
             lambda x: x.astype(np.float32), [RNG.integers(0, 2, N).astype(bool)]),
        Case("f32_to_bool_nan_true", ["float32"], "bool", lambda x: cast("bool", x),
             lambda x: x.astype(bool),
             [np.array([0.0, -0.0, 1.5, np.nan] * (N // 4), np.float32)]),
        Case("i16_to_bool", ["int16"], "bool", lambda x: cast("bool", x),
             lambda x: x.astype(bool), [ints("int16", -2, 2)]),
    ]


def _math_cases() -> list[Case]:
    pos = floats(np.float32, 0.1, 10)
    f = floats(np.float32)
    tol = {"rtol": 2e-6, "atol": 1e-6}

    def unary(op: str, ref: Callable[..., np.ndarray], x: np.ndarray, dt: str = "float32",
              **kw: float) -> Case:
        return Case(f"{op}_{dt}", [dt], dt, lambda a: call(op, a), ref, [x], **(kw or tol))

    from math import erf

    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    return [
        unary("exp", np.exp, f), unary("exp2", np.exp2, f), unary("log", np.log, pos),
        unary("log2", np.log2, pos), unary("sqrt", np.sqrt, pos), unary("tanh", np.tanh, f),
        unary("erf", np.vectorize(erf), f), unary("sigmoid", sigmoid, f),
        unary("rsqrt", lambda x: 1 / np.sqrt(x), pos), unary("abs", np.abs, f),
        unary("floor", np.floor, f), unary("ceil", np.ceil, f), unary("trunc", np.trunc, f),
        unary("round", np.round, np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4] * 10 + [3.5] * 4,
                                          np.float32)),
        unary("sin", np.sin, f), unary("cos", np.cos, f),
        unary("exp", np.exp, floats(np.float64), "float64", rtol=1e-14),
        unary("erf", np.vectorize(erf), floats(np.float64), "float64", rtol=1e-14),
        unary("tanh", np.tanh, floats(np.float16), "float16", rtol=1e-3),
        unary("erf", lambda x: np.vectorize(erf)(x.astype(np.float64)).astype(np.float16),
              floats(np.float16), "float16", rtol=1e-3),
        Case("pow_f32", ["float32", "float32"], "float32", lambda a, b: call("pow", a, b),
             np.power, [pos, f], **tol),
        Case("fma_f64", ["float64"] * 3, "float64", lambda a, b, c: call("fma", a, b, c),
             lambda a, b, c: a * b + c,
             [floats(np.float64), floats(np.float64), floats(np.float64)], rtol=1e-15),
        Case("min_f32", ["float32", "float32"], "float32", minimum, np.minimum, [f, pos]),
        Case("max_f64", ["float64", "float64"], "float64", maximum, np.maximum,
             [floats(np.float64), floats(np.float64)]),
        Case("floordiv_f32", ["float32", "float32"], "float32", lambda a, b: a // b,
             np.floor_divide, [f, pos]),
    ]


def _other_cases() -> list[Case]:
    f, g = floats(np.float32), floats(np.float32)
    h16 = [floats(np.float16), floats(np.float16), floats(np.float16)]
    b16 = [floats(BF16), floats(BF16)]
    let_var = Var("t", dtype("float32"))
    return [
        Case("f16_mul_add", ["float16"] * 3, "float16", lambda a, b, c: a * b + c,
             lambda a, b, c: a * b + c, h16),
        Case("f16_div", ["float16"] * 2, "float16", lambda a, b: a / b,
             lambda a, b: a / b, h16[:2]),
        Case("bf16_add_mul", ["bfloat16"] * 2, "bfloat16", lambda a, b: (a + b) * b,
             lambda a, b: (a + b) * b, b16),
        Case("select_lt", ["float32", "float32"], "float32", lambda a, b: select(a < b, a * 2.0, b),
             lambda a, b: np.where(a < b, a * 2, b), [f, g]),
        Case("compare_ne_nan", ["float32", "float32"], "bool", lambda a, b: a.ne(b),
             lambda a, b: a != b, [np.array([np.nan, 1.0] * (N // 2), np.float32),
                                   np.array([np.nan, 2.0] * (N // 2), np.float32)]),
        Case("compare_eq_nan", ["float32", "float32"], "bool", lambda a, b: a.eq(b),
             lambda a, b: a == b, [np.array([np.nan, 1.0] * (N // 2), np.float32),
                                   np.array([np.nan, 1.0] * (N // 2), np.float32)]),
        Case("compare_uint_ge", ["uint32", "uint32"], "bool", lambda a, b: a >= b,
             lambda a, b: a >= b, [ints("uint32", 0, 4_000_000_000),
                                   ints("uint32", 0, 4_000_000_000)]),
        Case("bool_logic", ["bool", "bool"], "bool",
             lambda a, b: logical_or(logical_and(a, logical_not(b)), logical_and(b, a)),
             lambda a, b: (a & ~b) | (b & a),
             [RNG.integers(0, 2, N).astype(bool), RNG.integers(0, 2, N).astype(bool)]),
        Case("if_then_else", ["float32", "float32"], "float32",
             lambda a, b: if_then_else(a > const(0.0), a, b),
             lambda a, b: np.where(a > 0, a, b), [f, g]),
        Case("let_expr", ["float32"], "float32",
             lambda a: Let(let_var, a * a, let_var + let_var, let_var.dtype),
             lambda a: a * a + a * a, [f]),
        Case("relu_chain", ["float32", "float32", "float32"], "float32",
             lambda x, w, b: maximum(x * w + b, const(0.0)) * 0.5 + x,
             lambda x, w, b: np.maximum(x * w + b, 0) * np.float32(0.5) + x, [f, g, f],
             rtol=1e-6),
    ]


CASES = _int_cases() + _cast_cases() + _math_cases() + _other_cases()


@pytest.fixture(scope="module", params=[0, 3], ids=["O0", "O3"])
def library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    funcs = [elementwise(c.name, c.in_dtypes, c.out_dtype, c.ir, N) for c in CASES]
    path = tmp_path_factory.mktemp("expr") / f"expr_O{request.param}.so"
    # Exact agreement with numpy's separately rounded operations: no FMA contraction.
    return build_library(funcs, path, opt_level=request.param, target=EXACT)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_expression_matches_numpy(library: Any, case: Case) -> None:
    out = library[case.name](*case.inputs)
    with np.errstate(all="ignore"):
        want = np.asarray(case.ref(*case.inputs)).astype(out.dtype)
    if case.rtol or case.atol:
        np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64),
                                   rtol=case.rtol, atol=case.atol)
    else:
        np.testing.assert_array_equal(out, want)


def test_multiply_add_contracts_to_fma_unless_the_target_says_off() -> None:
    """`a * b + c` becomes one FMA by default (as C compilers do), never with -fp-contract=off."""
    from tirc.ir import IRModule

    f = elementwise("mul_add", ["float32"] * 3, "float32", lambda a, b, c: a * b + c, N)
    mod = IRModule({"mul_add": f})
    fused = emit(mod, "asm", parse_target("llvm -mcpu=znver5"), 2)
    exact = emit(mod, "asm", parse_target("llvm -mcpu=znver5 -fp-contract=off"), 2)
    assert b"vfmadd" in fused
    assert b"vfmadd" not in exact
