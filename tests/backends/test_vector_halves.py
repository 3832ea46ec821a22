"""`T.vectorlow` / `T.vectorhigh` / `T.vectorcombine` in TVM's dtype-first form, compiled at
-O0 and -O3: the results equal the reference interpreter's and numpy's halves and joins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from backend_support import build_library
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter

SOURCE = '''from tvm.script import tir as T


@T.prim_func
def swap_i16(A: T.Buffer((64,), "int16"), B: T.Buffer((64,), "int16")):
    for i in range(8):
        v = A[T.ramp(i * 8, 1, 8)]
        B[T.ramp(i * 8, 1, 8)] = T.vectorcombine(
            "int16x8", T.vectorhigh("int16x4", v), T.vectorlow("int16x4", v)
        )


@T.prim_func
def halves_f32(A: T.Buffer((64,), "float32"), B: T.Buffer((32,), "float32")):
    for i in range(8):
        v = A[T.ramp(i * 8, 1, 8)]
        B[T.ramp(i * 4, 1, 4)] = T.vectorlow(v) * T.float32(2) + T.vectorhigh(v, dtype="float32x4")
'''


@pytest.fixture(scope="module")
def module() -> object:
    """The parsed module of both test functions."""
    return parse(SOURCE)


@pytest.mark.parametrize("opt", [0, 3])
def test_halves_equal_the_interpreter_and_numpy(module: object, opt: int,
                                               tmp_path: Path) -> None:
    """Each compiled result equals the interpreter's and the numpy one."""
    lib = build_library([module["swap_i16"], module["halves_f32"]], tmp_path / "h.so", opt)
    interp = Interpreter(module)
    rng = np.random.default_rng(3)
    a = rng.integers(-30000, 30000, 64).astype(np.int16)
    got, want = np.zeros(64, np.int16), np.zeros(64, np.int16)
    lib.swap_i16(a, got)
    interp.call("swap_i16", a.copy(), want)
    rows = a.reshape(8, 8)
    np.testing.assert_array_equal(want, np.concatenate([rows[:, 4:], rows[:, :4]], 1).ravel())
    np.testing.assert_array_equal(got, want)
    x = rng.standard_normal(64).astype(np.float32)
    got_f, want_f = np.zeros(32, np.float32), np.zeros(32, np.float32)
    lib.halves_f32(x, got_f)
    interp.call("halves_f32", x.copy(), want_f)
    xs = x.reshape(8, 8)
    np.testing.assert_array_equal(want_f, (xs[:, :4] * np.float32(2) + xs[:, 4:]).ravel())
    np.testing.assert_array_equal(got_f, want_f)
