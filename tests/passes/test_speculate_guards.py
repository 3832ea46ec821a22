"""speculate-guards: a partial tile that updates every row of its accumulator, on clamped
loads, computes what the guarded tile does, for every count of rows left in the last tile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build, lower
from tirc.frontend import parse
from tirc.ir.printer import print_module
from tirc.runtime import load

ROWS = '''
@T.prim_func
def rows(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 64), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    for i0 in T.parallel((n + 7) // 8):
        acc = T.decl_buffer((32,), "float32", scope="local")
        for i1 in range(8):
            for j in range(4):
                if i0 * 8 + i1 < n:
                    acc[i1 * 4 + j] = T.float32(0)
        for k in range(16):
            for i1 in T.unroll(8):
                for j in range(4):
                    if i0 * 8 + i1 < n:
                        acc[i1 * 4 + j] = acc[i1 * 4 + j] + A[i0 * 8 + i1, k * 4 + j]
        for i1 in range(8):
            for j in range(4):
                if i0 * 8 + i1 < n:
                    B[i0 * 8 + i1, j] = acc[i1 * 4 + j]
'''

MATMUL = '''
@T.prim_func
def mm(a: T.handle, w: T.Buffer((64, 48), "float32"), c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 64), "float32")
    C = T.match_buffer(c, (n, 48), "float32")
    for i, j, k in T.grid(n, 48, 64):
        with T.block("mm"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * w[vk, vj]
'''


@pytest.mark.parametrize("opt", [0, 3])
def test_rows_left_in_the_last_tile_equal_numpy(tmp_path: Path, opt: int) -> None:
    if opt:
        assert "T.min(" in print_module(lower(parse(ROWS), "llvm", opt))
    lib = load(build(parse(ROWS), tmp_path / "rows.so", "llvm", opt))
    rng = np.random.default_rng(0)
    for n in (0, 1, 3, 4, 5, 7, 8, 9, 12, 13, 15, 16, 21):
        a = rng.standard_normal((n, 64)).astype("float32")
        b = np.full((n, 4), np.nan, "float32")
        lib.rows(a, b)
        expected = a.reshape(n, 16, 4).sum(axis=1)
        np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)


def test_the_default_matmul_tail_is_speculated_and_right(tmp_path: Path) -> None:
    """The default schedule's register tile over a symbolic row count: its tail tile runs
    unguarded when most rows are left, and every row count gives numpy's product."""
    text = print_module(lower(parse(MATMUL), "llvm", 3))
    assert "T.min(" in text  # the load of A at the last row left, in the speculated tail
    lib = load(build(parse(MATMUL), tmp_path / "mm.so", "llvm", 3))
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 48)).astype("float32")
    for n in range(0, 20):
        a = rng.standard_normal((n, 64)).astype("float32")
        c = np.full((n, 48), np.nan, "float32")
        lib.mm(a, w, c)
        np.testing.assert_allclose(c, a @ w, rtol=1e-4, atol=1e-4)


def test_left_out_below_o2_and_when_disabled() -> None:
    for text in (print_module(lower(parse(MATMUL), "llvm", 1)),
                 print_module(lower(parse(MATMUL), "llvm", 3, disabled=["speculate-guards"]))):
        assert "T.min(" not in text


EVENS = '''
@T.prim_func
def evens(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 64), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    for i0 in T.parallel((n + 7) // 8):
        acc = T.decl_buffer((16,), "float32", scope="local")
        for i1, j in T.grid(4, 4):
            if i0 * 8 + i1 * 2 < n:
                acc[i1 * 4 + j] = T.float32(0)
        for k in range(16):
            for i1 in T.unroll(4):
                for j in range(4):
                    if i0 * 8 + i1 * 2 < n:
                        acc[i1 * 4 + j] = acc[i1 * 4 + j] + A[i0 * 8 + i1 * 2, k * 4 + j]
        for i1, j in T.grid(4, 4):
            if i0 * 8 + i1 * 2 < n:
                B[i0 * 8 + i1 * 2, j] = acc[i1 * 4 + j]
'''


def test_a_row_not_one_loop_clamps_the_flat_index(tmp_path: Path) -> None:
    """Rows `2 * i1` of the tile: no single row variable to clamp, so each load's index is
    clamped into its buffer instead, under a check that the buffer is not empty."""
    text = print_module(lower(parse(EVENS), "llvm", 3))
    assert "n * 64 >= 1" in text and "A_1[n * 64 - 1]" in text  # the last element read past n
    lib = load(build(parse(EVENS), tmp_path / "evens.so", "llvm", 3))
    rng = np.random.default_rng(2)
    for n in (0, 1, 5, 6, 7, 8, 13, 14, 15, 16):
        a = rng.standard_normal((n, 64)).astype("float32")
        b = np.full((n, 4), np.nan, "float32")
        lib.evens(a, b)
        expected = np.full((n, 4), np.nan, "float32")
        expected[::2] = a[::2].reshape(-1, 16, 4).sum(axis=1)
        np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)


BAND = '''
@T.prim_func
def band(a: T.handle, b: T.handle, m: T.int32):
    n = T.int32()
    A = T.match_buffer(a, (n, 64), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    for i0 in T.parallel((n + 7) // 8):
        acc = T.decl_buffer((32,), "float32", scope="local")
        for i1, j in T.grid(8, 4):
            if i0 * 8 + i1 < n and i0 * 8 + i1 >= m:
                acc[i1 * 4 + j] = T.float32(0)
        for k in range(16):
            for i1 in T.unroll(8):
                for j in range(4):
                    if i0 * 8 + i1 < n and i0 * 8 + i1 >= m:
                        acc[i1 * 4 + j] = acc[i1 * 4 + j] + A[i0 * 8 + i1, k * 4 + j]
        for i1, j in T.grid(8, 4):
            if i0 * 8 + i1 < n and i0 * 8 + i1 >= m:
                B[i0 * 8 + i1, j] = acc[i1 * 4 + j]
'''


def test_rows_cut_from_both_ends(tmp_path: Path) -> None:
    """Rows `m <= r < n`: speculated where more than half of a tile's rows are in the band,
    the rows outside it reading a row inside (clamped from below and above)."""
    text = print_module(lower(parse(BAND), "llvm", 3))
    assert "T.max(T.min(" in text or "T.min(T.max(" in text
    lib = load(build(parse(BAND), tmp_path / "band.so", "llvm", 3))
    rng = np.random.default_rng(3)
    for n, m in ((0, 0), (1, 0), (7, 0), (7, 2), (8, 3), (13, 5), (16, 7), (21, 10), (21, 21)):
        a = rng.standard_normal((n, 64)).astype("float32")
        b = np.full((n, 4), np.nan, "float32")
        lib.band(a, b, m)
        expected = np.full((n, 4), np.nan, "float32")
        expected[m:] = a[m:].reshape(-1, 16, 4).sum(axis=1)
        np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)
