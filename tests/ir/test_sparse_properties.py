"""Property tests: for random CSR matrices (shapes, densities, empty rows and columns), the
sparse-form interpreter, the lowered interpreter and NumPy agree on SpMM, SDDMM and a
coordinate-searched read, and the sparse programs print and parse back unchanged."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.printer import print_module

from tests.sparse_support import SDDMM, SPMM, csr32, interpret, lowered

SPMM_MOD = parse(SPMM)
SPMM_LOW = lowered(SPMM_MOD, "lower-sparse-iterations")
SDDMM_MOD = parse(SDDMM)
SDDMM_LOW = lowered(SDDMM_MOD, "lower-sparse-iterations")


@st.composite
def csr_matrices(draw: st.DrawFn) -> sp.csr_matrix:
    m = draw(st.integers(0, 7))
    n = draw(st.integers(1, 7))
    density = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    seed = draw(st.integers(0, 2**16))
    return csr32(sp.random(m, n, density=density, random_state=seed), seed=seed)


@settings(max_examples=25, deadline=None)
@given(csr_matrices(), st.integers(1, 3))
def test_spmm_forms_agree(a: sp.csr_matrix, feat: int) -> None:
    m, n = a.shape
    b = np.random.default_rng(feat).random((n, feat), np.float32)
    args = [a.data, b, np.full((m, feat), np.nan, np.float32), a.indptr, a.indices, m, n,
            feat, a.nnz]
    got = interpret(SPMM_MOD, "spmm", args)[2]
    np.testing.assert_allclose(got, a.toarray() @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(interpret(SPMM_LOW, "spmm", args)[2], got)


@settings(max_examples=25, deadline=None)
@given(csr_matrices(), st.integers(1, 3))
def test_sddmm_forms_agree(a: sp.csr_matrix, feat: int) -> None:
    m, n = a.shape
    rng = np.random.default_rng(feat)
    x, y = rng.random((m, feat), np.float32), rng.random((n, feat), np.float32)
    args = [x, y, np.full(a.nnz, np.nan, np.float32), a.indptr, a.indices, m, n, feat, a.nnz]
    got = interpret(SDDMM_MOD, "sddmm", args)[2]
    rows = np.repeat(np.arange(m), np.diff(a.indptr))
    np.testing.assert_allclose(got, np.einsum("ij,ij->i", x[rows], y[a.indices]), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(interpret(SDDMM_LOW, "sddmm", args)[2], got)


ATTACHED_AXES = ["T.dense_variable(I, (n, nnz), p)", "T.sparse_fixed(I, (n, 3), x)",
                 "T.sparse_variable(I, (n, nnz), (p, x))"]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(ATTACHED_AXES), st.sampled_from(["SS", "SR"]), st.booleans(),
       st.sampled_from(["float32", "float16", "int32"]))
def test_sparse_programs_round_trip(axis: str, kinds: str, fuse: bool, dt: str) -> None:
    axes = "[T.fuse(I, J)]" if fuse and kinds == "SS" else "[I, J]"
    text = f'''
@T.prim_func
def f(a: T.handle, b: T.handle, p: T.handle, x: T.handle, m: T.int32, n: T.int32,
      nnz: T.int32):
    I = T.dense_fixed(m)
    J = {axis}
    A = T.match_sparse_buffer(a, (I, J), "{dt}")
    B = T.match_sparse_buffer(b, (I,), "{dt}")
    with T.sp_iter({axes}, "{kinds}", "it") as [i, j]:
        B[i] = B[i] + A[i, j]
'''
    if "dense_variable" in axis:
        text = text.replace("x: T.handle, ", "")
    elif "sparse_fixed" in axis:
        text = text.replace("p: T.handle, ", "")
    mod = parse(text)
    printed = print_module(mod)
    again = parse(printed)
    assert print_module(again) == printed
    assert structural_equal(mod.functions["f"], again.functions["f"])
