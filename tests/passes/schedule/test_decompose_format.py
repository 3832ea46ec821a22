"""decompose_format: a CSR operand becomes ELL buckets. The generated conversion routine runs
in the interpreter (every nonzero lands exactly once, in the bucket its row length picks), the
decomposed iteration agrees with the CSR one in the sparse-form and lowered interpreters, and
the compiled library converts and computes when called with the CSR matrix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError

from tests.sparse_support import SDDMM, SPMM, compile_library, interpret, lowered, matrices

HYB = '''
@S.schedule("spmm")
def _(sch):
    sp = sch.get_sparse_iteration("spmm")
    sch.decompose_format(sp, "hyb", buckets=(1, 2, 4))
'''
ELL = HYB.replace('"hyb", buckets=(1, 2, 4)', '"ell", width=3')
WIDTHS = {"hyb": (1, 2, 4), "ell": (3,)}


def _plan(mod, a, widths):
    m = a.shape[0]
    counts = interpret(mod, "spmm_plan_counts", [a.indptr, np.zeros(len(widths), np.int32),
                                                 m])[1]
    arrays = []
    for b, w in enumerate(widths):
        n = int(counts[b])
        arrays += [np.zeros(n, np.int32), np.zeros(n * w, np.int32), np.zeros(n * w,
                                                                            np.float32)]
    filled = interpret(mod, "spmm_plan_fill", [a.indptr, a.indices, a.data, *arrays, m, a.nnz,
                                               *(int(c) for c in counts)])
    return counts, filled[3:3 + len(arrays)]


@pytest.mark.parametrize("fmt", ["hyb", "ell"])
@pytest.mark.parametrize("name", ["karate", "power_law", "empty_rows", "no_nonzeros"])
def test_decomposed_spmm_keeps_meaning(fmt: str, name: str) -> None:
    a = matrices()[name]
    widths = WIDTHS[fmt]
    decomposed = lowered(parse(SPMM + (HYB if fmt == "hyb" else ELL)), "apply-schedules")
    counts, arrays = _plan(decomposed, a, widths)
    lengths = np.diff(a.indptr)
    seen = []
    for b, w in enumerate(widths):
        rows, cols, vals = arrays[3 * b:3 * b + 3]
        lo = widths[b - 1] if b else 0
        if b < len(widths) - 1:
            assert sorted(rows) == list(np.nonzero((lengths > lo) & (lengths <= w))[0])
        for r, row in enumerate(rows):
            for t in range(w):
                if vals[r * w + t] != 0:
                    seen.append((int(row), int(cols[r * w + t]), float(vals[r * w + t])))
    coo = a.tocoo()
    assert sorted(seen) == sorted(zip(coo.row.tolist(), coo.col.tolist(),
                                      coo.data.astype(float).tolist()))
    m, n = a.shape
    feat = 3
    b_ = np.random.default_rng(0).random((n, feat), np.float32)
    base = [a.data, b_, np.zeros((m, feat), np.float32), a.indptr, a.indices, m, n, feat, a.nnz]
    want = interpret(parse(SPMM), "spmm", base)[2]
    args = base + list(arrays) + [int(c) for c in counts]
    np.testing.assert_allclose(interpret(decomposed, "spmm", args)[2], want, rtol=1e-6,
                               atol=1e-6)
    low = lowered(decomposed, "lower-sparse-iterations")
    np.testing.assert_allclose(interpret(low, "spmm", args)[2], want, rtol=1e-6, atol=1e-6)


def test_compiled_library_plans_from_the_csr_matrix(tmp_path: Path) -> None:
    (tmp_path / "hyb.tir").write_text(SPMM + HYB)
    lib = compile_library(tmp_path / "hyb.tir", tmp_path / "hyb.so")
    for a in matrices().values():
        b = np.random.default_rng(1).random((a.shape[1], 4), np.float32)
        np.testing.assert_allclose(lib.spmm(a, b), a.toarray() @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("src,call,message", [
    (SDDMM, 'sch.decompose_format(sp, "hyb")', "the CSR axis must be a reduction"),
    (SPMM, 'sch.decompose_format(sp, "coo")', "unsupported format 'coo'"),
    (SPMM, 'sch.decompose_format(sp, "ell")', "\"ell\" needs width="),
    (SPMM, 'sch.decompose_format(sp, "hyb", buckets=(4, 2))', "increasing positive widths"),
])
def test_bad_decompositions_are_diagnostics(src: str, call: str, message: str) -> None:
    name = "sddmm" if src is SDDMM else "spmm"
    sched = (f'\n@S.schedule("{name}")\ndef _(sch):\n    sp = sch.get_sparse_iteration('
             f'"{name}")\n    {call}\n')
    with pytest.raises(CompileError, match=message):
        lowered(parse(src + sched))
