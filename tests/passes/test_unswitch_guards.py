"""unswitch-guards: the guard-free copy of a tile loop computes what the guarded one does, for
extents that fill the last tile and extents that leave it partial."""

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
    B = T.match_buffer(b, (n,), "float32")
    for i0 in T.parallel((n + 7) // 8):
        for k in range(64):
            for i1 in T.unroll(8):
                if i0 * 8 + i1 < n:
                    B[i0 * 8 + i1] = B[i0 * 8 + i1] + A[i0 * 8 + i1, k]
'''


@pytest.mark.parametrize("opt", [0, 3])
def test_full_and_partial_tiles_equal_numpy(tmp_path: Path, opt: int) -> None:
    lib = load(build(parse(ROWS), tmp_path / "rows.so", "llvm", opt))
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 8, 13, 16, 29):
        a = rng.standard_normal((n, 64)).astype("float32")
        b = rng.standard_normal(n).astype("float32")
        expected = b + a.sum(axis=1)
        lib.rows(a, b)
        np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)


def test_the_fast_copy_is_in_the_o3_pipeline_only() -> None:
    o3 = print_module(lower(parse(ROWS), "llvm", 3))
    o1 = print_module(lower(parse(ROWS), "llvm", 1))
    assert "else:" in o3 and "else:" not in o1
