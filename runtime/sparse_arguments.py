"""Sparse tensors as single arguments: `lib.spmm(scipy.sparse.csr_matrix, dense)`.

A function whose metadata lists `sparse_tensors` (written by the sparse lowering) is called
with one argument per sparse tensor in place of its data, `indptr`/`indices` arrays and sizes;
scalar sizes that a dense argument's shape or a sparse tensor determines are left out too.
A sparse argument is a SciPy sparse matrix (CSR for one dense and one sparse axis, BSR for
blocks; duck-typed, SciPy is not imported here), or a dict with `data`, `indptr`, `indices`
and `shape`. Its arrays are checked before the call, each failure a clear error: dtypes
(the format's index dtype, no silent conversion), sizes, `indptr` starting at 0, nondecreasing
and ending at nnz, indices in range and strictly increasing within each row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tirc.runtime.sparse_plan import planned_names, run_plan


@dataclass(frozen=True)
class SparseParam:
    """One sparse tensor of the metadata: its data parameter and axes."""

    name: str
    dtype: str
    axes: list[dict[str, Any]]
    shape: tuple[Any, ...] = ()  # parameters (or ints) given the matrix's shape, if any
    layout: str | None = None    # an Axe layout of the storage: the caller packs it (raw)

    @property
    def sparse_axes(self) -> list[dict[str, Any]]:
        return [a for a in self.axes if a.get("parent") is not None]

    def component_names(self) -> set[str]:
        """Raw parameters this argument supplies besides its data."""
        out = {v for v in self.shape if isinstance(v, str)}
        for a in self.axes:
            for key in ("indptr", "indices", "length", "nnz"):
                v = a.get(key)
                if isinstance(v, str):
                    out.add(v)
        return out


class SparseSignature:
    """Maps a call with sparse arguments onto the raw parameters of the function."""

    def __init__(self, fn_name: str, params: list[dict[str, Any]],
                 tensors: list[dict[str, Any]], plan: dict[str, Any] | None = None) -> None:
        self.fn = fn_name
        self.plan = plan
        self.functions: dict[str, Any] = {}  # the library's functions (for the plan)
        self.raw = params
        planned = planned_names(plan) if plan is not None else set()
        self.tensors = {t["name"]: SparseParam(t["name"], t["dtype"], list(t["axes"]),
                                               tuple(t.get("shape", ())), t.get("layout"))
                        for t in tensors if t["name"] not in planned}
        components: set[str] = set()
        for t in self.tensors.values():
            components |= t.component_names()
        self.shape_dims: dict[str, tuple[str, int]] = {}
        for p in params:
            if p["kind"] == "buffer" and p["name"] not in components:
                for k, d in enumerate(p.get("shape", ())):
                    if isinstance(d, str) and d.isidentifier():
                        self.shape_dims.setdefault(d, (p["name"], k))
        self.derived = {p["name"] for p in params if p["kind"] == "scalar" and
                        (p["name"] in components or p["name"] in self.shape_dims)}
        if plan is not None:
            components |= planned
            self.derived |= set(plan["sizes"])
        self.hidden = (components - set(self.tensors)) | self.derived
        self.names = [p["name"] for p in params if p["name"] not in self.hidden]
        self.outputs = {p["name"] for p in params if p.get("output")}

    def expand(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Raw arguments by parameter name (absent outputs stay absent)."""
        if len(args) > len(self.names):
            raise TypeError(f"{self.fn}() takes {len(self.names)} arguments "
                            f"({', '.join(self.names)}), got {len(args) + len(kwargs)}")
        given = dict(zip(self.names, args))
        for k, v in kwargs.items():
            if k not in self.names:
                raise TypeError(f"{self.fn}() has no parameter '{k}' "
                                f"(parameters: {', '.join(self.names)})")
            if k in given:
                raise TypeError(f"{self.fn}() got argument '{k}' twice")
            given[k] = v
        raw: dict[str, Any] = {}
        scalars: dict[str, int] = {}
        for name, t in self.tensors.items():
            if name not in given:
                what = "output" if name in self.outputs else "argument"
                raise TypeError(f"{self.fn}(): sparse {what} '{name}' must be passed (its "
                                "structure comes from it)")
            raw.update(unpack(self.fn, t, given.pop(name), scalars))
        raw.update(given)
        if self.plan is not None:
            raw.update(self.run_plan(raw, scalars))
        for sym in self.derived:
            if sym in raw:
                continue
            if sym in scalars:
                raw[sym] = scalars[sym]
                continue
            pname, k = self.shape_dims[sym]
            value = raw.get(pname)
            if value is None:
                raise TypeError(f"{self.fn}(): cannot tell {sym} without argument {pname}")
            raw[sym] = int(np.shape(value)[k])
        return raw


    def run_plan(self, raw: dict[str, Any], scalars: dict[str, int]) -> dict[str, Any]:
        """The decomposed format's arrays from the CSR ones, by the library's generated
        conversion functions (tirc.runtime.sparse_plan)."""
        plan = self.plan
        assert plan is not None
        t = self.tensors[plan["tensor"]]
        col = t.sparse_axes[0]
        csr = (raw[t.name], raw[col["indptr"]], raw[col["indices"]])
        cols = col["length"]
        shape = (csr[1].size - 1, cols if isinstance(cols, int) else scalars[cols])
        return run_plan(plan, self.functions, csr, shape)


def _fail(fn: str, t: SparseParam, message: str) -> ValueError:
    return ValueError(f"{fn}: sparse argument {t.name}: {message}")


def _bind(fn: str, t: SparseParam, scalars: dict[str, int], key: Any, value: int,
          what: str) -> None:
    if isinstance(key, int):
        if key != value:
            raise _fail(fn, t, f"{what} is {value}, the format fixes it at {key}")
        return
    if key is None:
        return
    old = scalars.get(key)
    if old is not None and old != value:
        raise _fail(fn, t, f"{what} is {value}, but {key} = {old} already")
    scalars[key] = value


def unpack(fn: str, t: SparseParam, value: Any, scalars: dict[str, int]) -> dict[str, Any]:
    """The raw arrays of one sparse argument, checked; binds its sizes into `scalars`."""
    fmt = getattr(value, "format", None)
    axes = t.axes
    kinds = [a["kind"] for a in axes]
    sparse = t.sparse_axes
    if t.layout is not None:
        raise _fail(fn, t, f"its storage has the layout {t.layout}, which a SciPy matrix's "
                           "arrays are not in; call the raw function with the storage packed "
                           "in that layout")
    if len(sparse) != 1 or sparse[0]["kind"] != "sparse_variable" or kinds[0] != "dense_fixed" \
            or kinds[1] != "sparse_variable" or any(k != "dense_fixed" for k in kinds[2:]):
        raise _fail(fn, t, f"format ({', '.join(kinds)}) takes no SciPy matrix; call the "
                           "raw function with its arrays")
    if isinstance(value, dict):
        data, indptr, indices = value["data"], value["indptr"], value["indices"]
        value_shape = tuple(value["shape"])
        blocks = tuple(np.shape(data)[1:])
        shape = tuple(d // b for d, b in zip(value_shape, blocks)) if blocks else value_shape
    elif fmt == "csr" and len(axes) == 2:
        data, indptr, indices, shape, blocks = value.data, value.indptr, value.indices, \
            value.shape, ()
        value_shape = tuple(shape)
    elif fmt == "bsr" and len(axes) == 4:
        data, indptr, indices = value.data, value.indptr, value.indices
        blocks = tuple(value.blocksize)
        shape = (value.shape[0] // blocks[0], value.shape[1] // blocks[1])
        value_shape = tuple(value.shape)
    else:
        want = "a CSR matrix" if len(axes) == 2 else f"a BSR matrix ({len(axes)} axes)"
        raise TypeError(f"{fn}: sparse argument {t.name}: expected {want} or a dict of its "
                        f"arrays, got {type(value).__name__}")
    row, col = axes[0], axes[1]
    idt = np.dtype(col["idtype"])
    for what, arr in (("indptr", indptr), ("indices", indices)):
        if not isinstance(arr, np.ndarray) or arr.ndim != 1:
            raise _fail(fn, t, f"{what} must be a one-dimensional array")
        if arr.dtype != idt:
            raise _fail(fn, t, f"{what} has dtype {arr.dtype}, the format wants {idt} "
                               f"(convert with .astype(np.{idt}))")
    data = np.asarray(data)
    if str(data.dtype) != t.dtype:
        raise _fail(fn, t, f"data has dtype {data.dtype}, expected {t.dtype}")
    m, n = int(shape[0]), int(shape[1])
    nnz = int(indices.size)
    if indptr.size != m + 1:
        raise _fail(fn, t, f"indptr has {indptr.size} entries, expected {m + 1} (rows + 1)")
    if len(blocks) != len(axes) - 2:
        raise _fail(fn, t, f"data has {data.ndim} dimensions, expected {len(axes) - 1}")
    if data.shape[0] != nnz:
        raise _fail(fn, t, f"data has {data.shape[0]} entries, indices {nnz}")
    if m + 1 and int(indptr[0]) != 0:
        raise _fail(fn, t, f"indptr[0] is {int(indptr[0])}, expected 0")
    steps = np.diff(indptr)
    if steps.size and int(steps.min()) < 0:
        r = int(np.argmax(steps < 0))
        raise _fail(fn, t, f"indptr decreases at row {r} ({int(indptr[r])} > "
                           f"{int(indptr[r + 1])})")
    if int(indptr[-1]) != nnz:
        raise _fail(fn, t, f"indptr ends at {int(indptr[-1])}, but there are {nnz} indices")
    if nnz:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= n:
            bad = int(np.argmax((indices < 0) | (indices >= n)))
            raise _fail(fn, t, f"indices[{bad}] = {int(indices[bad])} is outside [0, {n})")
        rises = np.diff(indices) > 0
        row_start = np.zeros(nnz, bool)
        row_start[indptr[1:-1][indptr[1:-1] < nnz]] = True
        bad_steps = ~rises & ~row_start[1:]
        if bad_steps.any():
            q = int(np.argmax(bad_steps)) + 1
            r = int(np.searchsorted(indptr, q, side="right")) - 1
            raise _fail(fn, t, f"indices of row {r} are not strictly increasing at position "
                               f"{q} (sort them, e.g. with .sort_indices(), and sum "
                               "duplicates)")
    _bind(fn, t, scalars, row.get("length"), m, "the number of rows")
    _bind(fn, t, scalars, col.get("length"), n, "the number of columns")
    _bind(fn, t, scalars, col.get("nnz"), nnz, "nnz")
    for key, size, what in zip(t.shape, value_shape, ("rows", "columns")):
        _bind(fn, t, scalars, key, int(size), f"the number of {what}")
    for axis, size in zip(axes[2:], blocks):
        _bind(fn, t, scalars, axis.get("length"), int(size), f"block size of {axis['name']}")
    if not data.flags.c_contiguous:
        raise _fail(fn, t, "data must be C-contiguous")
    return {t.name: data, col["indptr"]: indptr, col["indices"]: indices}
