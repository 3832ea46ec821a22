"""bfloat16 math intrinsics (tanh, sigmoid, exp, log, rsqrt, fma, nextafter, pow, atan2 and
their products and sums) compiled at -O0 and -O3 equal the reference interpreter bit for bit:
each intrinsic is computed in float32 and rounded to bfloat16 once (TVM's BF16ComputeLegalize),
in both (so T.nextafter of a bfloat16 moves by a float32 step and rounds back)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from backend_support import build_library
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter

BF16 = np.dtype(ml_dtypes.bfloat16)
N = 1024

BODIES = {
    "tanh_times_sigmoid": "T.tanh(A[i]) * T.sigmoid(A[i])",
    "sigmoid": "T.sigmoid(A[i])",
    "tanh": "T.tanh(A[i])",
    "exp": "T.exp(A[i])",
    "log": "T.log(T.fabs(A[i]))",
    "rsqrt": "T.rsqrt(T.fabs(A[i]))",
    "exp_plus_log": "T.exp(A[i]) + T.log(T.fabs(A[i]))",
    "sigmoid_times_exp_plus_tanh": "T.sigmoid(A[i]) * T.exp(A[i]) + T.tanh(A[i])",
    "fma": "T.fma(A[i], A[i], T.sigmoid(A[i]))",
    "nextafter": "T.nextafter(A[i], T.bfloat16(100))",
    "pow_plus_atan2": "T.pow(T.fabs(A[i]), T.bfloat16(1.7)) + T.atan2(A[i], T.bfloat16(3))",
}
# `lanes` below is tanh * sigmoid on explicit 8-lane vectors (the interpreter's vector path).


def _source() -> str:
    """One loop function per body, each over N bfloat16 elements."""
    funcs = [f'''
@T.prim_func
def {name}(A: T.Buffer(({N},), "bfloat16"), B: T.Buffer(({N},), "bfloat16")):
    for i in range({N}):
        B[i] = {body}
''' for name, body in BODIES.items()]
    funcs.append(f'''
@T.prim_func
def lanes(A: T.Buffer(({N},), "bfloat16"), B: T.Buffer(({N},), "bfloat16")):
    for i in range({N // 8}):
        B[T.ramp(i * 8, 1, 8)] = T.tanh(A[T.ramp(i * 8, 1, 8)]) * T.sigmoid(A[T.ramp(i * 8, 1, 8)])
''')
    return "from tvm.script import tir as T\n" + "".join(funcs)


def _inputs() -> np.ndarray:
    """bfloat16 values of both signs over every finite exponent (random mantissas), the
    specials (zeros, infinities, NaN, subnormals) and the range where the results vary most."""
    rng = np.random.default_rng(11)
    exponents = np.arange(1, 255, dtype=np.uint16)
    bits = (exponents[rng.integers(0, exponents.size, N)] << 7) | rng.integers(0, 128, N).astype(
        np.uint16)
    bits |= (rng.integers(0, 2, N).astype(np.uint16) << 15)
    x = bits.view(BF16).copy()
    x[:256] = rng.uniform(-12, 12, 256).astype(np.float32).astype(BF16)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], np.float32)
    x[256:256 + specials.size] = specials.astype(BF16)
    x[270:274] = np.array([1, 0x8001, 0x7F, 0x807F], np.uint16).view(BF16)
    return x


@pytest.fixture(scope="module")
def module() -> object:
    """The parsed module of every test function."""
    return parse(_source())


@pytest.mark.parametrize("opt", [0, 3])
def test_bf16_math_equals_the_interpreter(module: object, opt: int, tmp_path: Path) -> None:
    """Every result bit equals the interpreter's (NaNs of any payload count as equal)."""
    names = [*BODIES, "lanes"]
    lib = build_library([module[name] for name in names], tmp_path / f"bf16_{opt}.so", opt)
    x = _inputs()
    interp = Interpreter(module)
    for name in names:
        got = np.zeros(N, BF16)
        want = np.zeros(N, BF16)
        getattr(lib, name)(x.copy(), got)
        interp.call(name, x.copy(), want)
        bad = got.view(np.uint16) != want.view(np.uint16)
        bad &= ~(np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32)))
        assert not bad.any(), (name, x[bad][:8], got[bad][:8], want[bad][:8])
