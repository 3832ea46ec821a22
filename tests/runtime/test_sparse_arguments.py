"""A sparse tensor is one argument of a compiled function: SciPy matrices and dicts of arrays
are accepted, sizes are derived, and every malformed array is a clear error before the call."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from tests.sparse_support import SPARSE_SAMPLES, compile_library, csr32


@pytest.fixture(scope="module")
def spmm(tmp_path_factory: pytest.TempPathFactory):
    return compile_library(SPARSE_SAMPLES / "spmm.tir",
                           tmp_path_factory.mktemp("sp") / "spmm.so").spmm


@pytest.fixture
def a() -> sp.csr_matrix:
    return csr32(sp.random(12, 9, density=0.3, random_state=1), seed=2)


def test_scipy_matrix_and_dict_of_arrays(spmm, a: sp.csr_matrix) -> None:
    b = np.ones((9, 5), np.float32)
    want = a.toarray() @ b
    np.testing.assert_allclose(spmm(a, b), want, rtol=1e-6)
    arrays = {"data": a.data, "indptr": a.indptr, "indices": a.indices, "shape": a.shape}
    np.testing.assert_allclose(spmm(arrays, b), want, rtol=1e-6)
    out = np.zeros((12, 5), np.float32)
    assert spmm(a, b, out) is out  # the output passed is returned (as torch's out=)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_allclose(spmm(a=a, b=b), want, rtol=1e-6)


def _with(a: sp.csr_matrix, **changes: np.ndarray) -> dict:
    arrays = {"data": a.data, "indptr": a.indptr, "indices": a.indices, "shape": a.shape}
    arrays.update(changes)
    return arrays


def test_malformed_arrays_are_clear_errors(spmm, a: sp.csr_matrix) -> None:
    b = np.ones((9, 5), np.float32)
    p, x = a.indptr.copy(), a.indices.copy()
    cases = []
    cases.append((_with(a, indices=x.astype(np.int64)),
                  "indices has dtype int64, the format wants int32"))
    cases.append((_with(a, data=a.data.astype(np.float64)), "data has dtype float64"))
    bad = x.copy()
    bad[2] = 9
    cases.append((_with(a, indices=bad), "indices[2] = 9 is outside [0, 9)"))
    bad = x.copy()
    bad[-1] = -1
    cases.append((_with(a, indices=bad), f"indices[{x.size - 1}] = -1 is outside [0, 9)"))
    row = int(np.argmax(np.diff(p) >= 2))
    bad = x.copy()
    bad[p[row]], bad[p[row] + 1] = bad[p[row] + 1], bad[p[row]]
    cases.append((_with(a, indices=bad), f"indices of row {row} are not strictly increasing"))
    bad = p.copy()
    bad[3] = bad[4] + 1
    cases.append((_with(a, indptr=bad), "indptr decreases at row 3"))
    bad = p.copy()
    bad[0] = 1
    cases.append((_with(a, indptr=bad), "indptr[0] is 1, expected 0"))
    cases.append((_with(a, indptr=p[:-1]), "indptr has 12 entries, expected 13"))
    cases.append((_with(a, data=a.data[:-1]), f"data has {a.nnz - 1} entries, indices {a.nnz}"))
    for value, message in cases:
        with pytest.raises(ValueError, match="spmm: sparse argument a: ") as info:
            spmm(value, b)
        assert message in str(info.value)


def test_wrong_kinds_of_arguments(spmm, a: sp.csr_matrix) -> None:
    b = np.ones((9, 5), np.float32)
    with pytest.raises(TypeError, match="expected a CSR matrix or a dict of its arrays"):
        spmm(a.tocoo(), b)
    with pytest.raises(ValueError, match=r"argument b: expected shape \(9, 5\)|expected shape"):
        spmm(a, np.ones((8, 5), np.float32))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        spmm(a, b, b, b)
    with pytest.raises(TypeError, match="no parameter 'indptr'"):
        spmm(a, b, indptr=a.indptr)


def test_empty_matrix(spmm) -> None:
    a = csr32(sp.csr_matrix((4, 9)))
    assert a.nnz == 0
    np.testing.assert_array_equal(spmm(a, np.ones((9, 3), np.float32)), np.zeros((4, 3)))
