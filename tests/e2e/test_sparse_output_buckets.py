"""A sparse output (SDDMM: the CSR matrix is the output's structure; and one that adds into
its own values) over every format `decompose_format` makes for one (hyb, hyb with column
partitions, ell; bsr refuses), compiled at -O0 and -O3 with the default schedule and with
explicit parallel loops over a bucket's slots or its chunked rows, against NumPy. A bucket pads
short rows by repeating a coordinate; a padded entry that wrote would race with the real one in
a parallel loop (and add twice into an accumulating output), so each function runs 20 times on
a matrix with many padded, empty and chunked rows (once on each other matrix)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from tests.sparse_support import SDDMM, SDDMM_ACCUMULATE, compile_library, csr32, matrices

REPEATS = 20

# name: (decompose_format call, loop primitives after it ({f}: the function's name))
VARIANTS = {
    "hyb": ('"hyb", buckets=(1, 2, 4)', ""),
    "hyb_parts": ('"hyb", buckets=(1, 4), col_parts=3', ""),
    "ell": ('"ell", width=3', ""),
    "accumulate": ('"hyb", buckets=(1, 4), col_parts=2', ""),  # SDDMM_ACCUMULATE
    "ell_slots": ('"ell", width=4', '''
    blk = sch.get_block("{f}_b0")
    i, j = sch.get_loops(blk)
    sch.reorder(j, i)
    sch.parallel(j)'''),
    "hyb_chunks": ('"hyb", buckets=(1, 4), col_parts=2', '''
    blk = sch.get_block("{f}_p1_b1")
    i, j = sch.get_loops(blk)
    fused = sch.fuse(i, j)
    sch.parallel(fused)'''),
}


def _program() -> str:
    """One module with an SDDMM per variant, each with its schedule."""
    parts: list[str] = []
    for variant, (call, loops) in VARIANTS.items():
        f = f"sddmm_{variant}"
        src = SDDMM_ACCUMULATE if variant == "accumulate" else SDDMM
        parts.append(src.replace("def sddmm(", f"def {f}(").replace('"SSR", "sddmm"',
                                                                  f'"SSR", "{f}"'))
        parts.append(f'''
@S.schedule("{f}")
def _(sch):
    sp = sch.get_sparse_iteration("{f}")
    sch.decompose_format(sp, {call}){loops.format(f=f)}
''')
    return "\n".join(parts)


def _padded_rows(m: int = 300, n: int = 50, seed: int = 7) -> sp.csr_matrix:
    """Row lengths 0 to 11: empty rows, rows every bucket pads, rows longer than the last
    width (cut into chunks, the last one padded)."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((m, n))
    for r, length in enumerate(rng.integers(0, 12, m)):
        dense[r, rng.choice(n, length, replace=False)] = 1
    return csr32(dense, seed=seed)


def _cases() -> dict[str, sp.csr_matrix]:
    return {**matrices(), "padded_rows": _padded_rows()}


@pytest.fixture(scope="module", params=["-O0", "-O3"])
def library(request: Any, tmp_path_factory: Any) -> Any:
    folder = tmp_path_factory.mktemp(f"sddmm{request.param}")
    (folder / "d.tir").write_text(_program())
    return compile_library(folder / "d.tir", folder / "d.so", request.param)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_sparse_output_buckets_agree_with_numpy(library: Any, variant: str) -> None:
    fn = getattr(library, f"sddmm_{variant}")
    for name, a in _cases().items():
        m, n = a.shape
        rng = np.random.default_rng(3)
        x, y = rng.random((m, 16), np.float32), rng.random((n, 16), np.float32)
        rows = np.repeat(np.arange(m), np.diff(a.indptr))
        want = np.einsum("ek,ek->e", x[rows], y[a.indices])
        if variant == "accumulate":
            want = want + a.data
        for _ in range(REPEATS if name == "padded_rows" else 1):
            out = a.copy()
            if variant != "accumulate":
                out.data[:] = np.nan
            fn(x, y, out)
            np.testing.assert_allclose(out.data, want, rtol=1e-5, err_msg=name)


def test_the_padded_matrix_pads_and_chunks() -> None:
    """The matrix the repetitions rely on has what a race needs: many padded rows under
    every width, and rows longer than the last one."""
    lengths = np.diff(_padded_rows().indptr)
    assert (lengths == 0).sum() > 10 and (lengths > 4).sum() > 100
    assert all((lengths == k).sum() > 10 for k in (3, 5, 7))
