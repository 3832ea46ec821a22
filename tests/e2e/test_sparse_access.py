"""Every way of reaching a sparse element, compiled and interpreted: a coordinate found by a
lower_bound search, fused iteration (upper_bound), ragged dense axes, ELL (sparse_fixed), and
float16 storage with float32 accumulation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from tirc.frontend import parse

from tests.sparse_support import compile_library, interpret, lowered, matrices

KERNELS = '''
@T.prim_func
def dense_iter(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle, indices: T.handle,
               m: T.int32, n: T.int32, nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.dense_fixed(n)
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (J_detach,), "float32")
    C = T.match_sparse_buffer(c, (I,), "float32")
    with T.sp_iter([I, J_detach], "SR", "mv") as [i, j]:
        with T.init():
            C[i] = T.float32(0)
        C[i] = C[i] + A[i, j] * B[j]


@T.prim_func
def scale_fused(a: T.handle, b: T.handle, indptr: T.handle, indices: T.handle, m: T.int32,
                n: T.int32, nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (I, J), "float32")
    with T.sp_iter([T.fuse(I, J)], "SS", "scale") as [i, j]:
        B[i, j] = A[i, j] * T.float32(2) + T.cast(i, "float32")


@T.prim_func
def segment_sum(a: T.handle, b: T.handle, indptr: T.handle, m: T.int32, nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.dense_variable(I, (1000, nnz), indptr, "int32")
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (I,), "float32")
    with T.sp_iter([I, J], "SR", "segment_sum") as [i, j]:
        with T.init():
            B[i] = T.float32(0)
        B[i] = B[i] + A[i, j]


@T.prim_func
def ell_spmm(a: T.handle, b: T.handle, c: T.handle, indices: T.handle, m: T.int32, n: T.int32,
             width: T.int32, feat: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_fixed(I, (n, width), indices, "int32")
    J_detach = T.dense_fixed(n)
    K = T.dense_fixed(feat)
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (J_detach, K), "float32")
    C = T.match_sparse_buffer(c, (I, K), "float32")
    with T.sp_iter([I, J, K], "SRS", "ell") as [i, j, k]:
        with T.init():
            C[i, k] = T.float32(0)
        C[i, k] = C[i, k] + A[i, j] * B[j, k]


@T.prim_func
def spmm_f16(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle, indices: T.handle,
             m: T.int32, n: T.int32, feat: T.int32, nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.dense_fixed(n)
    K = T.dense_fixed(feat)
    A = T.match_sparse_buffer(a, (I, J), "float16")
    B = T.match_sparse_buffer(b, (J_detach, K), "float16")
    C = T.match_sparse_buffer(c, (I, K), "float32")
    with T.sp_iter([I, J, K], "SRS", "spmm") as [i, j, k]:
        with T.init():
            C[i, k] = T.float32(0)
        C[i, k] = C[i, k] + T.cast(A[i, j], "float32") * T.cast(B[j, k], "float32")
'''

# A row softmax over the stored elements: intermediates in sparse buffers the function
# allocates, and iterations over a row's elements nested in the iteration over the rows.
KERNELS += '''

@T.prim_func
def row_softmax(a: T.handle, b: T.handle, indptr: T.handle, indices: T.handle, m: T.int32,
                n: T.int32, nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (I, J), "float32")
    top = T.alloc_sparse_buffer((I,), "float32")
    total = T.alloc_sparse_buffer((I,), "float32", "global")
    with T.sp_iter([I], "S", "rows") as [i]:
        with T.sp_iter([J], "R", "row_max") as [j]:
            with T.init():
                top[i] = T.min_value("float32")
            top[i] = T.max(top[i], A[i, j])
        with T.sp_iter([J], "R", "row_sum") as [j]:
            with T.init():
                total[i] = T.float32(0)
            total[i] = total[i] + T.exp(A[i, j] - top[i])
        with T.sp_iter([J], "S", "row_div") as [j]:
            B[i, j] = T.exp(A[i, j] - top[i]) / total[i]
'''

# Scatter a CSR matrix into a given BSR structure of 2 x 2 blocks: every store finds its block
# by search, and a store to a block the structure lacks is an error.
KERNELS += '''

@T.prim_func
def to_blocks(a: T.handle, b: T.handle, indptr: T.handle, indices: T.handle,
              bindptr: T.handle, bindices: T.handle, m: T.int32, n: T.int32, nnz: T.int32,
              nnzb: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    IB = T.dense_fixed((m + 1) // 2)
    JB = T.sparse_variable(IB, ((n + 1) // 2, nnzb), (bindptr, bindices), "int32")
    BI = T.dense_fixed(2)
    BJ = T.dense_fixed(2)
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (IB, JB, BI, BJ), "float32")
    with T.sp_iter([I, J], "SS", "scatter") as [i, j]:
        B[i // 2, j // 2, i % 2, j % 2] = A[i, j]
'''

# Two hops over a graph: for each node, each neighbour j, each neighbour k of j (the second
# copy of the adjacency, attached to the dense node axis and run under j's coordinate).
KERNELS += '''

@T.prim_func
def two_hop(x: T.handle, y: T.handle, indptr: T.handle, indices: T.handle, indptr2: T.handle,
            indices2: T.handle, n: T.int32, nnz: T.int32, feat: T.int32):
    I = T.dense_fixed(n)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    N = T.dense_fixed(n)
    K = T.sparse_variable(N, (n, nnz), (indptr2, indices2), "int32")
    F = T.dense_fixed(feat)
    X = T.match_sparse_buffer(x, (N, F), "float32")
    Y = T.match_sparse_buffer(y, (I, F), "float32")
    with T.sp_iter([I, F, J, T.attach(K, J)], "SSRR", "two_hop") as [i, f, j, k]:
        with T.init():
            Y[i, f] = T.float32(0)
        Y[i, f] = Y[i, f] + X[k, f]
'''

# SpMM with the dense operand over the attached axis itself, (J, K): J is stored detached
# (every coordinate), so B[j, k] reads row j's coordinate, not the position j stands on.
KERNELS += '''

@T.prim_func
def spmm_implicit_detach(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle,
                         indices: T.handle, m: T.int32, n: T.int32, feat: T.int32,
                         nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    K = T.dense_fixed(feat)
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (J, K), "float32")
    C = T.match_sparse_buffer(c, (I, K), "float32")
    with T.sp_iter([I, J, K], "SRS", "spmm") as [i, j, k]:
        with T.init():
            C[i, k] = T.float32(0)
        C[i, k] = C[i, k] + A[i, j] * B[j, k]
'''

# BSR SpMM whose 2 x 2 blocks are stored column-major, as an Axe layout of the storage
# (cuSPARSE's column block direction).
KERNELS += '''

@T.prim_func
def bsr_colmajor(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle, indices: T.handle,
                 mb: T.int32, nb: T.int32, nnzb: T.int32, feat: T.int32):
    I = T.dense_fixed(mb)
    J = T.sparse_variable(I, (nb, nnzb), (indptr, indices), "int32")
    J_detach = T.dense_fixed(nb)
    BI = T.dense_fixed(2)
    BJ = T.dense_fixed(2)
    F = T.dense_fixed(feat)
    A = T.match_sparse_buffer(a, (I, J, BI, BJ), "float32", layout="S[(nnzb, 2, 2):(4, 1, 2)]")
    B = T.match_sparse_buffer(b, (J_detach, BJ, F), "float32")
    C = T.match_sparse_buffer(c, (I, BI, F), "float32")
    with T.sp_iter([I, BI, J, BJ, F], "SSRRS", "bsr_colmajor") as [i, bi, j, bj, f]:
        with T.init():
            C[i, bi, f] = T.float32(0)
        C[i, bi, f] = C[i, bi, f] + A[i, j, bi, bj] * B[j, bj, f]
'''

MATRICES = matrices()


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("access")
    (d / "k.tir").write_text(KERNELS)
    return compile_library(d / "k.tir", d / "k.so")


@pytest.fixture(scope="module")
def mods():
    mod = parse(KERNELS)
    return mod, lowered(mod, "lower-sparse-iterations")


def _all_agree(mods, lib, name: str, args: list, out: int, want: np.ndarray,
               tol: float = 1e-5) -> None:
    mod, low = mods
    sparse_form = interpret(mod, name, args)[out]
    np.testing.assert_allclose(sparse_form, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(interpret(low, name, args)[out], sparse_form)
    copies = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    getattr(lib, name).raw(*copies)
    np.testing.assert_allclose(copies[out], want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(MATRICES))
def test_search_fuse_and_ragged_access(mods, lib, name: str) -> None:
    a = MATRICES[name]
    m, n = a.shape
    rows = np.repeat(np.arange(m), np.diff(a.indptr))
    b = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
    _all_agree(mods, lib, "dense_iter", [a.data, b, np.zeros(m, np.float32), a.indptr,
                                         a.indices, m, n, a.nnz], 2,
               a.toarray().astype(np.float64) @ b)
    _all_agree(mods, lib, "scale_fused", [a.data, np.zeros(a.nnz, np.float32), a.indptr,
                                          a.indices, m, n, a.nnz], 1, a.data * 2.0 + rows)
    _all_agree(mods, lib, "segment_sum", [a.data, np.zeros(m, np.float32), a.indptr, m,
                                          a.nnz], 1,
               np.add.reduceat(np.append(a.data, 0).astype(np.float64), a.indptr[:-1])
               * (np.diff(a.indptr) > 0))


@pytest.mark.parametrize("name", ["karate", "power_law", "empty_rows"])
def test_an_attached_axis_left_detached_is_read_by_coordinate(mods, lib, name: str) -> None:
    a = MATRICES[name]
    m, n = a.shape
    b = np.random.default_rng(5).uniform(-1, 1, (n, 3)).astype(np.float32)
    want = a.toarray().astype(np.float64) @ b
    _all_agree(mods, lib, "spmm_implicit_detach", [a.data, b, np.zeros((m, 3), np.float32),
                                                   a.indptr, a.indices, m, n, 3, a.nnz], 2, want)
    # b is stored densely, so it is a plain array of the SciPy call
    np.testing.assert_allclose(lib.spmm_implicit_detach(a, b), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["karate", "power_law", "empty_rows"])
def test_ell_with_padding(mods, lib, name: str) -> None:
    a = MATRICES[name]
    m, n = a.shape
    width = int(np.diff(a.indptr).max())
    indices = np.zeros((m, width), np.int32)
    data = np.zeros((m, width), np.float32)
    for r in range(m):
        cols = a.indices[a.indptr[r]:a.indptr[r + 1]]
        k = len(cols)
        pad = np.setdiff1d(np.arange(n), cols)[:width - k]  # distinct, sorted, zero-valued
        order = np.argsort(np.concatenate([cols, pad]))
        indices[r] = np.concatenate([cols, pad])[order]
        data[r] = np.concatenate([a.data[a.indptr[r]:a.indptr[r + 1]],
                                  np.zeros(width - k, np.float32)])[order]
    b = np.random.default_rng(1).uniform(-1, 1, (n, 3)).astype(np.float32)
    _all_agree(mods, lib, "ell_spmm", [data.ravel(), b, np.zeros((m, 3), np.float32),
                                       indices.ravel(), m, n, width, 3], 2,
               a.toarray().astype(np.float64) @ b)


def test_float16_storage_float32_accumulation(mods, lib) -> None:
    a = MATRICES["les_miserables"]
    m, n = a.shape
    a16 = a.data.astype(np.float16)
    b16 = np.random.default_rng(2).uniform(-1, 1, (n, 8)).astype(np.float16)
    dense = np.zeros((m, n))
    rows = np.repeat(np.arange(m), np.diff(a.indptr))
    dense[rows, a.indices] = a16.astype(np.float64)
    want = dense @ b16.astype(np.float64)
    _all_agree(mods, lib, "spmm_f16", [a16, b16, np.zeros((m, 8), np.float32), a.indptr,
                                       a.indices, m, n, 8, a.nnz], 2, want, tol=1e-5)
    import scipy.sparse as sp

    got = lib.spmm_f16(sp.csr_matrix((a16, a.indices, a.indptr), shape=a.shape), b16)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)



def test_unsorted_indices_of_a_searched_axis_are_refused(lib) -> None:
    """dense_iter finds A's elements by binary search over each row's indices: a compiled
    call with a row out of order fails with the message instead of missing elements."""
    from tirc.runtime.errors import TircError

    indptr = np.array([0, 3, 3, 5], np.int32)
    indices = np.array([0, 2, 1, 1, 3], np.int32)  # row 0 out of order
    data = np.ones(5, np.float32)
    b = np.ones(4, np.float32)
    with pytest.raises(TircError, match="dense_iter: axis J: indices are not strictly "
                       "increasing within a row"):
        lib.dense_iter.raw(data, b, np.zeros(3, np.float32), indptr, indices, 3, 4, 5)
    out = np.zeros(3, np.float32)
    lib.dense_iter.raw(data, b, out, indptr, np.array([0, 1, 2, 1, 3], np.int32), 3, 4, 5)
    np.testing.assert_array_equal(out, [3, 0, 2])


@pytest.mark.parametrize("name", ["karate", "power_law", "empty_rows", "no_nonzeros"])
def test_nested_iterations_over_allocated_sparse_buffers(mods, lib, name: str) -> None:
    """row_softmax: each inner iteration runs over the elements of the outer one's row."""
    a = MATRICES[name]
    m, n = a.shape
    want = np.zeros(a.nnz)
    for r in range(m):
        row = a.data[a.indptr[r]:a.indptr[r + 1]].astype(np.float64)
        if row.size:
            e = np.exp(row - row.max())
            want[a.indptr[r]:a.indptr[r + 1]] = e / e.sum()
    _all_agree(mods, lib, "row_softmax", [a.data, np.zeros(a.nnz, np.float32), a.indptr,
                                          a.indices, m, n, a.nnz], 1, want, tol=1e-6)


@pytest.mark.parametrize("name", ["karate", "power_law", "empty_rows"])
def test_stores_found_by_search(mods, lib, name: str) -> None:
    """to_blocks writes each element into the block SciPy's BSR form of the matrix holds."""
    a = MATRICES[name]
    m, n = a.shape
    b = a.tobsr(blocksize=(2, 2)) if m % 2 == 0 and n % 2 == 0 else None
    if b is None:
        pad = sp.csr_matrix((a.data, a.indices, a.indptr), shape=(m + m % 2, n + n % 2))
        b = pad.tobsr(blocksize=(2, 2))
    b.sort_indices()
    args = [a.data, np.zeros(b.data.shape, np.float32), a.indptr, a.indices,
            b.indptr.astype(np.int32), b.indices.astype(np.int32), m, n, a.nnz, b.indices.size]
    _all_agree(mods, lib, "to_blocks", args, 1, b.data.astype(np.float64))


def test_a_store_to_an_element_not_stored_is_an_error(mods, lib) -> None:
    from tirc.ir.interpreter.values import InterpreterError
    from tirc.runtime.errors import TircError

    indptr = np.array([0, 1, 2, 2, 3], np.int32)  # (0, 0), (1, 3), (3, 2) of a 4 x 4 matrix
    indices = np.array([0, 3, 2], np.int32)
    blocks = [np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32)]  # (0, 1) is missing
    args = [np.ones(3, np.float32), np.zeros((2, 2, 2), np.float32), indptr, indices,
            *blocks, 4, 4, 3, 2]
    with pytest.raises(InterpreterError, match="store to sparse buffer B at \\[0, 1, 1, 1\\]"):
        interpret(mods[0], "to_blocks", args)
    with pytest.raises(TircError, match="to_blocks: store to sparse buffer B at an element "
                       "that is not stored"):
        lib.to_blocks.raw(*[x.copy() if isinstance(x, np.ndarray) else x for x in args])


def test_the_interpreter_refuses_to_search_an_unsorted_row(mods) -> None:
    from tirc.ir.interpreter.values import InterpreterError

    args = [np.ones(3, np.float32), np.ones(4, np.float32), np.zeros(2, np.float32),
            np.array([0, 2, 3], np.int32), np.array([2, 1, 0], np.int32), 2, 4, 3]
    with pytest.raises(InterpreterError, match="axis J: indices are not strictly increasing "
                       "within row 0"):
        interpret(mods[0], "dense_iter", args)


@pytest.mark.parametrize("name", ["karate", "power_law", "empty_rows"])
def test_attach_runs_an_axis_under_another_ones_coordinate(mods, lib, name: str) -> None:
    """two_hop: T.attach(K, J) visits row j of the second adjacency for each neighbour j."""
    n = MATRICES[name].shape[0]
    a = sp.csr_matrix(MATRICES[name][:, :n])  # square (empty_rows has 3 more columns)
    a.sort_indices()
    pattern = sp.csr_matrix((np.ones(a.nnz), a.indices, a.indptr), shape=a.shape)
    x = np.random.default_rng(3).uniform(-1, 1, (n, 3)).astype(np.float32)
    want = pattern @ (pattern @ x.astype(np.float64))
    ptr, idx = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    _all_agree(mods, lib, "two_hop", [x, np.zeros((n, 3), np.float32), ptr, idx, ptr.copy(),
                                      idx.copy(), n, a.nnz, 3], 1, want, tol=1e-4)


@pytest.mark.parametrize("name", ["karate", "power_law", "elasticity_fem"])
def test_sparse_storage_with_a_layout(mods, lib, name: str) -> None:
    """bsr_colmajor reads its blocks through the storage's layout: given the blocks packed
    column-major it computes the product, and the SciPy path refuses the matrix (its arrays
    are row-major blocks)."""
    a = MATRICES[name]
    m, n = a.shape
    bsr = sp.csr_matrix((a.data, a.indices, a.indptr), shape=(m + m % 2, n + n % 2)) \
        .tobsr(blocksize=(2, 2))
    bsr.sort_indices()
    mb, nb = bsr.shape[0] // 2, bsr.shape[1] // 2
    x = np.random.default_rng(4).uniform(-1, 1, (nb, 2, 3)).astype(np.float32)
    want = (bsr.toarray().astype(np.float64) @ x.reshape(-1, 3)).reshape(mb, 2, 3)
    packed = np.ascontiguousarray(bsr.data.transpose(0, 2, 1)).reshape(-1)
    args = [packed, x, np.zeros((mb, 2, 3), np.float32), bsr.indptr.astype(np.int32),
            bsr.indices.astype(np.int32), mb, nb, bsr.indices.size, 3]
    _all_agree(mods, lib, "bsr_colmajor", args, 2, want)
    with pytest.raises(ValueError, match="sparse argument a: its storage has the layout "
                       "S\\[\\(nnzb, 2, 2\\):\\(4, 1, 2\\)\\]"):
        lib.bsr_colmajor(bsr, x)
