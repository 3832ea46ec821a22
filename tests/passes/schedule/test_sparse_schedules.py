"""Stage-I sparse schedules: sparse_reorder and sparse_fuse keep meaning (the interpreter on
the sparse form against the scheduled, lowered form) and reject what would change it; loop
primitives after them act on the lowered loops."""

from __future__ import annotations

import numpy as np
import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError

from tests.sparse_support import SDDMM, SPMM, interpret, lowered, matrices

FUSE = '''
@S.schedule("sddmm")
def _(sch):
    sp = sch.get_sparse_iteration("sddmm")
    i, j, k = sch.get_sp_iters(sp)
    sch.sparse_fuse(sp, [i, j])
    b = sch.get_block("sddmm")
    ij, = sch.get_loops(b)
    sch.parallel(ij)
'''

REORDER = '''
@S.schedule("spmm")
def _(sch):
    sp = sch.get_sparse_iteration("spmm")
    i, j, k = sch.get_sp_iters(sp)
    sch.sparse_reorder(sp, [i, k, j])
    b = sch.get_block("spmm_update")
    j, = sch.get_loops(b)
    sch.unroll(j)
'''


def _args(a, feat: int, kind: str) -> list:
    m, n = a.shape
    rng = np.random.default_rng(0)
    if kind == "sddmm":
        return [rng.random((m, feat), np.float32), rng.random((n, feat), np.float32),
                np.zeros(a.nnz, np.float32), a.indptr, a.indices, m, n, feat, a.nnz]
    return [a.data, rng.random((n, feat), np.float32), np.zeros((m, feat), np.float32),
            a.indptr, a.indices, m, n, feat, a.nnz]


@pytest.mark.parametrize("src,sched,name", [(SDDMM, FUSE, "sddmm"), (SPMM, REORDER, "spmm")])
@pytest.mark.parametrize("matrix", ["karate", "empty_rows", "no_nonzeros"])
def test_sparse_schedules_keep_meaning(src: str, sched: str, name: str, matrix: str) -> None:
    a = matrices()[matrix]
    plain = parse(src)
    scheduled = lowered(parse(src + sched))
    out = 2
    want = interpret(plain, name, _args(a, 3, name))[out]
    np.testing.assert_allclose(interpret(scheduled, name, _args(a, 3, name))[out], want,
                               rtol=1e-6)
    assert not scheduled.schedules


def test_fused_loop_is_one_parallel_loop_over_positions() -> None:
    from tirc.ir.printer import print_module

    text = print_module(lowered(parse(SDDMM + FUSE)))
    assert "for i_j in T.parallel(nnz):" in text
    assert "T.call_intrin(\"int32\", \"tirc.upper_bound\", J_indptr.data, vi_j, 0, m + 1)" \
        in text


@pytest.mark.parametrize("body,message", [
    ("sch.sparse_reorder(sp, [j, i, k])", "axis J would come before its parent I"),
    ("sch.sparse_reorder(sp, [i, k])", "give all 3 variables"),
    ("sch.sparse_fuse(sp, [i, k])", "give two or more consecutive variables"),
    ("sch.sparse_fuse(sp, [j, k])", "axis K is not attached to J"),
    ("sch.sparse_reorder(sp, [i, k, k])", "a variable appears twice"),
])
def test_bad_sparse_schedules_are_diagnostics(body: str, message: str) -> None:
    sched = ('\n@S.schedule("spmm")\ndef _(sch):\n    sp = sch.get_sparse_iteration("spmm")\n'
             f'    i, j, k = sch.get_sp_iters(sp)\n    {body}\n')
    with pytest.raises(CompileError, match=message):
        lowered(parse(SPMM + sched))
