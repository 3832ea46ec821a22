"""`T.Shuffle(vectors, indices)`, TVM's concatenation and lane selection: TVM's codegen_llvm
test program `LlvmScalarConcat` (a buffer of int32x2 elements, called through DLPack since
numpy has no vector dtype) and shuffles over ramp loads, compiled at -O0 and -O3, against
numpy and the reference interpreter."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tirc.driver import build, emit
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.interpreter import run_prim_func
from tirc.ir.printer import print_module
from tirc.runtime import load
from tirc.runtime.dlpack import ArgsPacker

CONCAT = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class LlvmScalarConcat:
    @T.prim_func
    def main(x: T.int32, y: T.int32, buffer: T.Tensor((1,), "int32x2")):
        buffer[0] = T.Shuffle([x, y], [0, 1])
'''

SOURCE = '''
from tvm.script import tir as T


@T.prim_func
def swap_halves(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    for i in range(4):
        B[T.Ramp(i * 8, 1, 8)] = T.Shuffle([A[T.Ramp(i * 8 + 4, 1, 4)],
                                            A[T.Ramp(i * 8, 1, 4)]], [0, 1, 2, 3, 4, 5, 6, 7])


@T.prim_func
def reverse(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "int32")):
    for i in range(4):
        B[T.Ramp(i * 4, 1, 4)] = T.Shuffle([A[T.Ramp(i * 4, 1, 4)]], [3, 2, 1, 0])


@T.prim_func
def mixed(A: T.Buffer((8,), "int64"), x: T.int64, B: T.Buffer((6,), "int64"),
          C: T.Buffer((1,), "int64")):
    B[T.Ramp(0, 1, 6)] = T.Shuffle([x, A[T.Ramp(2, 1, 4)], T.int64(7)], [5, 0, 4, 4, 1, 3])
    C[0] = T.Shuffle([A[T.Ramp(0, 1, 4)], x], [2])


@T.prim_func
def in_vectorized_loop(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    for j in T.vectorized(8):
        B[j] = T.Shuffle([A[j], A[7 - j]], [1])
'''

LEVELS = pytest.mark.parametrize("opt", [0, 3], ids=["O0", "O3"])


@pytest.fixture(scope="module", params=[0, 3], ids=["O0", "O3"])
def library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("shuffle") / f"shuffle_o{request.param}.so"
    return load(build(parse(SOURCE), path, "llvm", request.param))


@pytest.mark.parametrize("text", [CONCAT, SOURCE], ids=["concat", "shuffles"])
def test_prints_and_parses_back_equal(text: str) -> None:
    mod = parse(text)
    printed = print_module(mod)
    assert structural_equal(parse(printed), mod)
    assert "T.Shuffle([x, y], [0, 1])" in printed or "[5, 0, 4, 4, 1, 3])" in printed


@LEVELS
def test_tvm_llvm_scalar_concat(opt: int, tmp_path: Path) -> None:
    """`buffer[0] = T.Shuffle([x, y], [0, 1])` stores <x, y> into one int32x2 element."""
    interpreted = np.zeros((1, 2), np.int32)
    run_prim_func(parse(CONCAT)["main"], [3, -7, interpreted])
    np.testing.assert_array_equal(interpreted, [[3, -7]])
    so = build(parse(CONCAT), tmp_path / "concat.so", "llvm", opt)
    fn = ctypes.CDLL(str(so)).concat_main
    fn.restype, fn.argtypes = ctypes.c_int32, [ctypes.c_void_p, ctypes.c_int32]
    out = np.zeros((1, 2), np.int32)
    args = [np.array(3, np.int32), np.array(-7, np.int32), out[:, 0]]
    packed = ArgsPacker([0, 0, 1], ["int32", "int32", "int32x2"]).pack(
        args, addresses={2: out.ctypes.data})
    assert fn(ctypes.addressof(packed), 3) == 0
    np.testing.assert_array_equal(out, interpreted)
    ll = emit(parse(CONCAT), "ll", "llvm", opt).decode()
    assert "store <2 x i32>" in ll


def test_two_vectors_of_one_dtype_are_one_shufflevector() -> None:
    ll = emit(parse(SOURCE), "ll", "llvm", 0).decode()
    assert ("shufflevector <4 x float> %" in ll
            and "<8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>" in ll)
    assert "<4 x i32> <i32 3, i32 2, i32 1, i32 0>" in ll  # reverse: one vector


def test_shuffles_match_numpy_and_the_interpreter(library: Any) -> None:
    mod = parse(SOURCE)
    a = np.arange(32, dtype=np.float32) - 10.5
    b, ref = np.zeros(32, np.float32), np.zeros(32, np.float32)
    library["swap_halves"](a, b)
    run_prim_func(mod["swap_halves"], [a, ref])
    expected = a.reshape(4, 2, 4)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(b, expected)
    np.testing.assert_array_equal(ref, expected)

    ai = np.arange(16, dtype=np.int32) * -3 + 5
    r, rref = np.zeros(16, np.int32), np.zeros(16, np.int32)
    library["reverse"](ai, r)
    run_prim_func(mod["reverse"], [ai, rref])
    np.testing.assert_array_equal(r, ai.reshape(4, 4)[:, ::-1].reshape(-1))
    np.testing.assert_array_equal(rref, r)

    a8 = np.arange(8, dtype=np.int64) * 10 - 30
    lanes = np.concatenate([[-5], a8[2:6], [7]])  # x, A[2:6], 7
    outs = [np.zeros(6, np.int64), np.zeros(1, np.int64)]
    refs = [np.zeros(6, np.int64), np.zeros(1, np.int64)]
    library["mixed"](a8, -5, *outs)
    run_prim_func(mod["mixed"], [a8, -5, *refs])
    np.testing.assert_array_equal(outs[0], lanes[[5, 0, 4, 4, 1, 3]])
    np.testing.assert_array_equal(outs[1], [a8[2]])
    for got, ref in zip(outs, refs):
        np.testing.assert_array_equal(got, ref)


def test_a_shuffle_in_a_vectorized_loop_runs_lane_by_lane(library: Any) -> None:
    a = np.arange(8, dtype=np.int32) * 7 - 20
    b, ref = np.zeros(8, np.int32), np.zeros(8, np.int32)
    library["in_vectorized_loop"](a, b)
    run_prim_func(parse(SOURCE)["in_vectorized_loop"], [a, ref])
    np.testing.assert_array_equal(b, a[::-1])
    np.testing.assert_array_equal(ref, b)
