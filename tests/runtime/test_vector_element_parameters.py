"""A library with a function whose buffer has vector elements (`T.Buffer((4,), "float32x4")`,
as TVM's pointer-rewrite tests write) loads; its other functions run, and calling that one
from Python is a clear TypeError (numpy has no such dtype; C callers pass lanes in DLPack)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.runtime import load

SOURCE = '''
from tvm.script import tir as T

@T.prim_func
def pack(A: T.Buffer((16,), "float32"), B: T.Buffer((4,), "float32x4")):
    for i in range(4):
        B[i] = A[T.Ramp(i * 4, 1, 4)]


@T.prim_func
def double(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = A[i] * T.float32(2)
'''


def test_the_library_loads_and_the_vector_parameter_is_refused_at_the_call(
        tmp_path: Path) -> None:
    lib = load(build(parse(SOURCE), tmp_path / "vec.so", "llvm", 2))
    a = np.arange(4, dtype=np.float32)
    lib["double"](a)
    np.testing.assert_array_equal(a, [0, 2, 4, 6])
    with pytest.raises(TypeError, match="pack: argument B: dtype float32x4 has no numpy "
                                        "equivalent"):
        lib["pack"](np.zeros(16, np.float32), np.zeros((4, 4), np.float32))
