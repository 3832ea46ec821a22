"""Parameters that declare strides (`T.match_buffer(a, (n, 4), strides=(s0, 1))`) take numpy
views with those strides: the loader passes the view's element strides in the DLTensor (the
entry binds `s0` from them), checks constant ones, and refuses strides that are not whole,
non-negative element counts; a parameter without strides still wants a compact array."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.ir.interpreter import run_prim_func
from tirc.runtime import load

SOURCE = '''
@T.prim_func
def symbolic(a: T.handle, b: T.handle):
    n = T.int32()
    s0 = T.int32()
    A = T.match_buffer(a, (n, 4), "float32", strides=(s0, 1))
    B = T.match_buffer(b, (n, 4), "float32")
    for i, j in T.grid(n, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)


@T.prim_func
def constant(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (4, 4), "float32", strides=(8, 1))
    B = T.match_buffer(b, (4, 4), "float32")
    for i, j in T.grid(4, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
'''


@pytest.fixture(scope="module", params=[0, 3])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("strided") / f"strided{request.param}.so"
    return load(build(parse(SOURCE), Path(out), "llvm", request.param))


def test_a_view_with_a_symbolic_row_stride(lib: Any) -> None:
    big = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    b = np.zeros((5, 4), np.float32)
    lib.symbolic(big[:, :4], b)
    np.testing.assert_array_equal(b, big[:, :4] + 1)
    compact = np.ascontiguousarray(big[:, 2:6])
    lib.symbolic(compact, b)
    np.testing.assert_array_equal(b, compact + 1)


def test_every_other_row(lib: Any) -> None:
    big = np.arange(80, dtype=np.float32).reshape(10, 8)
    b = np.zeros((5, 4), np.float32)
    lib.symbolic(big[::2, 1:5], b)
    np.testing.assert_array_equal(b, big[::2, 1:5] + 1)


def test_the_interpreter_agrees() -> None:
    big = np.arange(40, dtype=np.float32).reshape(5, 8)
    b = np.zeros((5, 4), np.float32)
    run_prim_func(parse(SOURCE)["symbolic"], [big[:, :4], b])
    np.testing.assert_array_equal(b, big[:, :4] + 1)


def test_a_constant_stride_is_checked(lib: Any) -> None:
    big = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.zeros((4, 4), np.float32)
    lib.constant(big[:, 4:], b)
    np.testing.assert_array_equal(b, big[:, 4:] * 2)
    with pytest.raises(ValueError, match=r"^constant: argument a: expected strides \(8, 1\) "
                                         r"elements, got \(4, 1\)$"):
        lib.constant(np.zeros((4, 4), np.float32), b)


def test_reversed_or_unaligned_strides_are_refused(lib: Any) -> None:
    b = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match=r"strides \(16, -4\) bytes are not non-negative "
                                         r"multiples of the element size \(4 bytes\)"):
        lib.symbolic(np.zeros((4, 4), np.float32)[:, ::-1], b)


def test_an_undeclared_stride_still_wants_a_compact_array(lib: Any) -> None:
    a = np.zeros((4, 8), np.float32)[:, :4]
    with pytest.raises(ValueError, match="argument b: expected a compact row-major"):
        lib.symbolic(np.zeros((4, 4), np.float32), a)


def test_an_empty_or_one_row_contiguous_array_is_compact(lib: Any) -> None:
    """numpy gives an empty array strides (0, 0) and keeps a one-row slice's row stride;
    both are C-contiguous, so compact (TVM passes them without strides): the library and
    the interpreter take them, the interpreter binding the same strides."""
    empty = np.zeros((0, 4), np.float32)
    lib.symbolic(empty, np.zeros((0, 4), np.float32))
    run_prim_func(parse(SOURCE)["symbolic"], [empty, np.zeros((0, 4), np.float32)])
    row = np.arange(32, dtype=np.float32).reshape(4, 8)[2:3, :4]
    for run in (lib.symbolic, lambda a, b: run_prim_func(parse(SOURCE)["symbolic"], [a, b])):
        b = np.zeros((1, 4), np.float32)
        run(row, b)
        np.testing.assert_array_equal(b, row + 1)
