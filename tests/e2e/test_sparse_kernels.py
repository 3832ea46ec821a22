"""SpMM, SDDMM and BSR SpMM on real and synthetic matrices: the sparse-form interpreter, the
lowered and scheduled interpreter, compiled libraries at -O0 and -O3 (called with SciPy
matrices) and a dense NumPy reference all agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from tests.sparse_support import (
    SPARSE_SAMPLES,
    compile_library,
    interpret,
    load_sample,
    lowered,
    matrices,
)

MATRICES = matrices()
FEAT = 4


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], object]:
    out = tmp_path_factory.mktemp("sparse_so")
    return {(name, opt): compile_library(SPARSE_SAMPLES / f"{name}.tir",
                                         out / f"{name}{opt}.so", opt)
            for name in ("spmm", "sddmm", "bsr_spmm") for opt in ("-O0", "-O3")}


def _spmm_args(a: sp.csr_matrix, b: np.ndarray) -> list:
    m, n = a.shape
    c = np.full((m, b.shape[1]), np.nan, np.float32)
    return [a.data, b, c, a.indptr, a.indices, m, n, b.shape[1], a.nnz]


@pytest.mark.parametrize("name", sorted(MATRICES))
def test_spmm_interpreters_library_and_numpy_agree(libs: dict, name: str) -> None:
    a = MATRICES[name]
    b = np.random.default_rng(1).uniform(-1, 1, (a.shape[1], FEAT)).astype(np.float32)
    want = a.toarray().astype(np.float64) @ b
    mod = load_sample("spmm")
    sparse_form = interpret(mod, "spmm", _spmm_args(a, b))[2]
    lowered_form = interpret(lowered(mod), "spmm", _spmm_args(a, b))[2]
    np.testing.assert_allclose(sparse_form, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(lowered_form, sparse_form)
    for opt in ("-O0", "-O3"):
        got = libs[("spmm", opt)].spmm(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("feat", [FEAT, 37])
@pytest.mark.parametrize("name", sorted(MATRICES))
def test_sddmm_interpreters_library_and_numpy_agree(libs: dict, name: str, feat: int) -> None:
    """Also at 37 features: the CPU schedule sums the features in 16 vector lanes, the last
    16 of them guarded (4 features leave 12 lanes that only the rfactor seed initialises)."""
    pattern = MATRICES[name]
    rng = np.random.default_rng(2)
    m, n = pattern.shape
    x = rng.uniform(-1, 1, (m, feat)).astype(np.float32)
    y = rng.uniform(-1, 1, (n, feat)).astype(np.float32)
    rows = np.repeat(np.arange(m), np.diff(pattern.indptr))
    want = np.einsum("ek,ek->e", x[rows].astype(np.float64), y[pattern.indices])
    args = [x, y, np.full(pattern.nnz, np.nan, np.float32), pattern.indptr, pattern.indices,
            m, n, feat, pattern.nnz]
    mod = load_sample("sddmm")
    sparse_form = interpret(mod, "sddmm", args)[2]
    np.testing.assert_allclose(sparse_form, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(interpret(lowered(mod), "sddmm", args)[2], sparse_form,
                               rtol=1e-6, atol=1e-6)
    for opt in ("-O0", "-O3"):
        out = pattern.copy()
        out.data[:] = np.nan
        # the output filled is returned: the sparse matrix's values, in place
        filled = libs[("sddmm", opt)].sddmm(x, y, out)
        assert filled.shape == out.data.shape and (
            filled.size == 0 or np.shares_memory(filled, out.data))
        np.testing.assert_allclose(out.data, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["karate", "poisson_fem", "empty_rows", "no_nonzeros"])
def test_bsr_spmm_agrees_with_numpy(libs: dict, name: str) -> None:
    base = MATRICES[name]
    rows, cols = (-(-d // 2) * 2 for d in base.shape)
    padded = sp.csr_matrix((base.data, base.indices, base.indptr), shape=base.shape)
    padded.resize((rows, cols))
    a = sp.bsr_matrix(padded, blocksize=(2, 2))
    a.sort_indices()
    a.indices = a.indices.astype(np.int32)
    a.indptr = a.indptr.astype(np.int32)
    nb, mb = rows // 2, cols // 2
    b = np.random.default_rng(3).uniform(-1, 1, (mb, 2, FEAT)).astype(np.float32)
    want = (a.toarray().astype(np.float64) @ b.reshape(cols, FEAT)).reshape(nb, 2, FEAT)
    args = [np.ascontiguousarray(a.data), b, np.full((nb, 2, FEAT), np.nan,
            np.float32), a.indptr, a.indices, nb, mb, a.indices.size, 2, FEAT]
    mod = load_sample("bsr_spmm")
    sparse_form = interpret(mod, "bsr_spmm", args)[2]
    np.testing.assert_allclose(sparse_form, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(interpret(lowered(mod), "bsr_spmm", args)[2], sparse_form)
    for opt in ("-O0", "-O3"):
        got = libs[("bsr_spmm", opt)].bsr_spmm(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_samples_print_and_parse_back() -> None:
    from tirc.frontend import parse
    from tirc.ir import structural_equal
    from tirc.ir.printer import print_module

    for path in sorted(Path(SPARSE_SAMPLES).glob("*.tir")):
        mod = load_sample(path.stem)
        text = print_module(mod)
        again = parse(text)
        assert print_module(again) == text
        for name, f in mod.functions.items():
            assert structural_equal(f, again.functions[name]), (path, name)


def _with_long_rows() -> sp.csr_matrix:
    """Rows longer than the widest bucket in every column partition (cut into chunks)."""
    rng = np.random.default_rng(5)
    dense = (rng.uniform(size=(40, 300)) < 0.05).astype(np.float32)
    dense[3, :] = 1
    dense[17, ::2] = 1
    a = sp.csr_matrix(dense * rng.uniform(0.5, 1.5, dense.shape).astype(np.float32))
    a.indices, a.indptr = a.indices.astype(np.int32), a.indptr.astype(np.int32)
    return a


DECOMPOSED = {**MATRICES, "long_rows": _with_long_rows()}


@pytest.fixture(scope="module")
def hyb_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("hyb_so")
    return {name: compile_library(SPARSE_SAMPLES / f"{name}.tir", out / f"{name}.so", "-O3")
            for name in ("spmm_hyb", "spmm_hyb_c4")}


@pytest.mark.parametrize("feat", [FEAT, 37])
@pytest.mark.parametrize("name", sorted(DECOMPOSED))
def test_decomposed_spmm_samples_agree_with_numpy(hyb_libs: dict, name: str, feat: int) -> None:
    """The hyb samples (ELL buckets by row length; 4 column partitions of 10 widths each),
    called with the CSR matrix, equal the dense product, with and without a vector tail."""
    a = DECOMPOSED[name]
    b = np.random.default_rng(6).uniform(-1, 1, (a.shape[1], feat)).astype(np.float32)
    want = a.toarray().astype(np.float64) @ b
    for sample, lib in hyb_libs.items():
        got = lib.spmm(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=sample)
