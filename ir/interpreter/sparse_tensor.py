"""Sparse matrices as graph values in the reference interpreter (`R.SparseTensor`).

A graph function's sparse parameter takes a SciPy CSR or BSR matrix (duck-typed: SciPy is not
imported) or a dict with `data`, `indptr`, `indices` and `shape`; it becomes a SparseValue
after the checks a compiled library makes (dtypes as the struct info says, no conversion;
`indptr` from 0, nondecreasing, ending at nnz; indices in range and strictly increasing per
row). `R.sparse.matmul` runs on it with NumPy; `R.call_tir` hands its arrays to the loop
function's sparse parameter (tirc.ir.sparse.signature.tensor_slots).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tirc.ir.graph import SparseTensorSInfo
from tirc.ir.interpreter.values import InterpreterError, np_dtype
from tirc.ir.lean_dataclass import dataclass


@dataclass(frozen=True)
class SparseValue:
    """A checked sparse matrix: its arrays, logical shape and block shape (() for CSR)."""

    data: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    shape: tuple[int, int]
    block: tuple[int, ...] = ()

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    def to_dense(self) -> np.ndarray:
        """The matrix as a dense array (for references and messages)."""
        bm, bn = self.block or (1, 1)
        out = np.zeros((self.shape[0] // bm, bm, self.shape[1] // bn, bn), self.data.dtype)
        rows = np.repeat(np.arange(self.indptr.size - 1), np.diff(self.indptr))
        blocks = self.data.reshape(self.nnz, bm, bn)
        out[rows, :, self.indices, :] = blocks
        return out.reshape(self.shape)


def sparse_value(value: Any, sinfo: SparseTensorSInfo, what: str) -> SparseValue:
    """`value` (SciPy matrix or dict) as a SparseValue of `sinfo`'s format, checked."""
    if isinstance(value, SparseValue):
        arrays = (value.data, value.indptr, value.indices, value.shape, value.block)
    elif isinstance(value, dict):
        try:
            data, indptr, indices, shape = (value[k] for k in ("data", "indptr", "indices",
                                                                "shape"))
        except KeyError as exc:
            raise InterpreterError(f"{what}: a sparse tensor dict needs {exc}") from None
        arrays = (data, indptr, indices, shape, tuple(np.shape(data)[1:]))
    elif getattr(value, "format", None) in ("csr", "bsr"):
        block = tuple(value.blocksize) if value.format == "bsr" else ()
        arrays = (value.data, value.indptr, value.indices, value.shape, block)
    else:
        raise InterpreterError(f"{what}: expected a {sinfo.format.upper()} matrix (SciPy or a "
                               f"dict of its arrays), got {type(value).__name__}")
    data, indptr, indices, shape, block = arrays
    data, indptr, indices = np.asarray(data), np.asarray(indptr), np.asarray(indices)
    if tuple(block) != tuple(sinfo.block) and (block or sinfo.block):
        raise InterpreterError(f"{what}: blocks of {tuple(block)}, the type says "
                               f"{tuple(sinfo.block)}")
    if data.dtype != np_dtype(sinfo.dtype):
        raise InterpreterError(f"{what}: data has dtype {data.dtype}, expected {sinfo.dtype}")
    idt = np_dtype(sinfo.index_dtype)
    for name, arr in (("indptr", indptr), ("indices", indices)):
        if arr.ndim != 1 or arr.dtype != idt:
            raise InterpreterError(f"{what}: {name} must be one-dimensional {idt}, got "
                                   f"{arr.dtype}{list(arr.shape)}")
    m, n = (int(d) for d in shape)
    bm, bn = block or (1, 1)
    if m % bm or n % bn:
        raise InterpreterError(f"{what}: shape {(m, n)} is not a multiple of the blocks")
    _check_structure(what, indptr, indices, m // bm, n // bn)
    if data.shape != (indices.size, *block):
        raise InterpreterError(f"{what}: data has shape {data.shape}, expected "
                               f"{(indices.size, *block)}")
    return SparseValue(np.ascontiguousarray(data), indptr, indices, (m, n), tuple(block))


def _check_structure(what: str, indptr: np.ndarray, indices: np.ndarray, rows: int,
                     cols: int) -> None:
    nnz = indices.size
    if indptr.size != rows + 1:
        raise InterpreterError(f"{what}: indptr has {indptr.size} entries, expected {rows + 1}")
    if int(indptr[0]) != 0 or int(indptr[-1]) != nnz:
        raise InterpreterError(f"{what}: indptr must start at 0 and end at nnz ({nnz})")
    steps = np.diff(indptr)
    if steps.size and int(steps.min()) < 0:
        raise InterpreterError(f"{what}: indptr decreases at row {int(np.argmax(steps < 0))}")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= cols):
        raise InterpreterError(f"{what}: an index is outside [0, {cols})")
    row_of = np.repeat(np.arange(rows), steps)
    same_row = row_of[1:] == row_of[:-1]
    if np.any(same_row & (np.diff(indices) <= 0)):
        raise InterpreterError(f"{what}: indices are not strictly increasing within a row")


def sparse_matmul(a: SparseValue, b: np.ndarray, out_dtype: str | None = None) -> np.ndarray:
    """`R.sparse.matmul`: the stored elements of `a` times `b`, accumulated in the result
    dtype in storage order."""
    dt = np.dtype(out_dtype) if out_dtype is not None else a.data.dtype
    bm, bn = a.block or (1, 1)
    b = np.asarray(b)
    vector = b.ndim == 1
    bb = (b[:, None] if vector else b).astype(dt)
    feats = bb.shape[1]
    out = np.zeros((a.shape[0] // bm, bm, feats), dt)
    blocks = a.data.reshape(a.nnz, bm, bn).astype(dt)
    rhs = bb.reshape(a.shape[1] // bn, bn, feats)
    rows = np.repeat(np.arange(a.indptr.size - 1), np.diff(a.indptr))
    np.add.at(out, rows, np.einsum("qij,qjf->qif", blocks, rhs[a.indices]))
    result = out.reshape(a.shape[0], feats)
    return result[:, 0] if vector else result
