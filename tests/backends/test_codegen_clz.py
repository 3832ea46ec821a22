"""`T.clz` is an int32 for any integer operand, as TVM declares it (`call_intrin("int32",
"tir.clz", x)`): the leading zero bits of the operand in its own width. TVM's
force_narrow_index_to_i32 program stores `T.clz(i)` of an int64 loop variable into an int32
buffer (tirc refused it: "cannot store a value of dtype int64"). Compiled at -O0..-O3, scalar
and vectorized, against numpy and the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.ir import dtype
from tirc.ir.interpreter import run_prim_func
from tirc.ir.printer import print_module
from tirc.runtime import load

SOURCE = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def clz_of_index(B: T.Buffer((T.int64(4),), "int32")):
        for i in T.serial(T.int64(4)):
            B[i] = T.clz(i)

    @T.prim_func
    def clz_widths(A8: T.Buffer((16,), "int8"), A16: T.Buffer((16,), "uint16"),
                   A64: T.Buffer((16,), "int64"), B: T.Buffer((3, 16), "int32")):
        for i in range(4):
            for j in T.vectorized(4):
                B[0, i * 4 + j] = T.clz(A8[i * 4 + j])
                B[1, i * 4 + j] = T.clz(A16[i * 4 + j])
                B[2, i * 4 + j] = T.clz(A64[i * 4 + j])
'''


def numpy_clz(a: np.ndarray) -> np.ndarray:
    """Leading zero bits of each element in its dtype's width (the width for zero)."""
    bits = a.dtype.itemsize * 8
    return np.array([bits - (int(v) & ((1 << bits) - 1)).bit_length() for v in a], np.int32)


def arguments() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    a8 = rng.integers(-128, 128, 16).astype(np.int8)
    a16 = rng.integers(0, 1 << 16, 16).astype(np.uint16)
    a64 = (rng.integers(0, 1 << 62, 16) >> rng.integers(0, 62, 16)).astype(np.int64)
    a8[0], a16[0], a64[0] = 0, 0, 0
    return [a8, a16, a64, np.full((3, 16), -1, np.int32)]


def test_clz_is_int32_for_any_operand() -> None:
    mod = parse(SOURCE)
    text = print_module(mod)
    assert "B[i] = T.clz(i)" in text
    store = mod["clz_of_index"].body.body
    assert store.value.dtype == dtype("int32")
    assert print_module(parse(text)) == text


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_clz_matches_numpy_and_the_interpreter(level: int, tmp_path: Path) -> None:
    mod = parse(SOURCE)
    lib = load(build(mod, tmp_path / f"clz_o{level}.so", "llvm", level))
    index = np.zeros(4, np.int32)
    lib["clz_of_index"](index)
    np.testing.assert_array_equal(index, [64, 63, 62, 62])
    want = arguments()
    run_prim_func(mod["clz_widths"], want)
    got = arguments()
    lib["clz_widths"](*got)
    np.testing.assert_array_equal(want[3], np.stack([numpy_clz(a) for a in want[:3]]))
    np.testing.assert_array_equal(got[3], want[3])
    reference = np.zeros(4, np.int32)
    run_prim_func(mod["clz_of_index"], [reference])
    np.testing.assert_array_equal(reference, index)
