"""A loop function's sparse tensor parameters, and how a call's arguments fill its parameters.

`sparse_tensor_info` describes each sparse tensor parameter for the runtime (the metadata
`sparse_tensors`: the data parameter, and per axis its kind and the parameters holding its
arrays and sizes); lower-sparse-iterations keeps it as the `tirc.sparse_tensors` attribute, so
it is known before and after lowering. `sparse_params` reads it back as parameters, for the
matrix formats one SciPy matrix holds: CSR `(I, J)` and BSR `(I, J, BI, BJ)`, `J` a
`sparse_variable` under the dense `I`.

`tensor_slots` is the calling rule of `R.call_tir` (checked by the graph operator, run by the
interpreter, inlined by lower-graph): the arguments fill the function's buffer parameters in
order; when some arguments are sparse tensors, the `indptr`/`indices` parameters of the
function's sparse tensors are not filled positionally but come with the sparse argument that
fills their data parameter.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.attrs import SPARSE_TENSORS
from tirc.ir.dtype import DType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.sparse.buffer import SparseBuffer, is_dense


def sparse_tensor_info(func: PrimFunc) -> tuple[dict[str, object], ...]:
    """The runtime description of each sparse tensor parameter of a function in sparse form:
    its data parameter and, per axis, its kind and the parameters that hold its arrays and
    sizes (a size is a parameter's name or an integer). Tuples, not lists: it is an attribute,
    which prints and parses back equal."""
    handle_of = {b: p for p, b in func.buffer_map.items()}

    def name_of(e: PrimExpr | None) -> str | int | None:
        if isinstance(e, IntImm):
            return e.value
        if isinstance(e, Var):
            return e.name
        return None

    out: list[dict[str, object]] = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        # stored densely (every attached axis detached, as B over (J, K)): a plain array
        if not isinstance(buf, SparseBuffer) or is_dense(buf):
            continue
        axes = []
        for axis in buf.axes:
            entry: dict[str, object] = {"name": axis.name, "kind": axis.kind.value,
                                        "length": name_of(axis.length),
                                        "idtype": str(axis.idtype)}
            if axis.parent is not None:
                entry["parent"] = axis.parent.name
                entry["nnz"] = name_of(axis.nnz)
            for what in ("indptr", "indices"):
                arr = getattr(axis, what)
                if arr is not None:
                    entry[what] = handle_of[arr].name if arr in handle_of else arr.name
            axes.append(entry)
        entry = {"name": p.name, "buffer": buf.name, "dtype": str(buf.dtype),
                 "axes": tuple(axes)}
        if buf.layout is not None:
            entry["layout"] = str(buf.layout)
        out.append(entry)
    return tuple(out)


@dataclass(frozen=True)
class SparseParam:
    """One CSR or BSR matrix parameter: its parameters and sizes, in the function's terms."""

    data: Var
    indptr: Var
    indices: Var
    rows: PrimExpr        # rows of I (block rows for BSR)
    cols: PrimExpr        # columns of J (block columns for BSR)
    nnz: PrimExpr         # stored elements (blocks)
    block: tuple[PrimExpr, ...]
    dtype: DType
    index_dtype: DType

    @property
    def format(self) -> str:
        return "bsr" if self.block else "csr"


def _matrix_axes(axes: list[dict[str, object]]) -> bool:
    kinds = [a["kind"] for a in axes]
    return len(axes) in (2, 4) and kinds[0] == "dense_fixed" and kinds[1] == "sparse_variable" \
        and axes[1].get("parent") == axes[0]["name"] and all(k == "dense_fixed"
                                                                 for k in kinds[2:])


def sparse_params(func: PrimFunc) -> dict[Var, SparseParam]:
    """The function's CSR/BSR matrix parameters by their data parameter (sparse or lowered
    form; other sparse formats are left out: they are called with their arrays)."""
    info = func.attrs.get(SPARSE_TENSORS)
    if info is None:
        info = sparse_tensor_info(func)
    by_name = {p.name: p for p in func.params}

    def size(v: object) -> PrimExpr | None:
        if isinstance(v, int):
            return IntImm(v, DType("int", 32))
        return by_name.get(v) if isinstance(v, str) else None

    out: dict[Var, SparseParam] = {}
    for t in info:
        axes = list(t["axes"])
        data = by_name.get(t["name"])
        if data is None or not _matrix_axes(axes):
            continue
        row, col = axes[0], axes[1]
        indptr, indices = by_name.get(col.get("indptr")), by_name.get(col.get("indices"))
        sizes = [size(row.get("length")), size(col.get("length")), size(col.get("nnz"))]
        block = [size(a.get("length")) for a in axes[2:]]
        if indptr is None or indices is None or any(s is None for s in sizes + block):
            continue
        out[data] = SparseParam(data, indptr, indices, *sizes, tuple(block),  # type: ignore[arg-type]
                                DType.parse(str(t["dtype"])), DType.parse(str(col["idtype"])))
    return out


class CallMismatch(ValueError):
    """Arguments that cannot fill a function's parameters (the message says why)."""


def tensor_slots(func: PrimFunc, sparse_args: Sequence[bool]
                 ) -> list[tuple[Var, SparseParam | None]]:
    """The buffer parameter each argument fills, with its sparse tensor when the argument is
    one (see the module docstring); CallMismatch when the arguments do not fit."""
    handles = [p for p in func.params if p in func.buffer_map]
    if not any(sparse_args):
        if len(handles) != len(sparse_args):
            raise CallMismatch(f"{func.name} takes {len(handles)} tensors, got "
                               f"{len(sparse_args)}")
        return [(h, None) for h in handles]
    params = sparse_params(func)
    arrays = {v for sp in params.values() for v in (sp.indptr, sp.indices)}
    slots = [h for h in handles if h not in arrays]
    if len(slots) != len(sparse_args):
        raise CallMismatch(f"{func.name} takes {len(slots)} tensors when called with sparse "
                           f"tensors, got {len(sparse_args)}")
    out: list[tuple[Var, SparseParam | None]] = []
    for k, (h, sparse) in enumerate(zip(slots, sparse_args)):
        sp = params.get(h)
        if sparse and sp is None:
            raise CallMismatch(f"argument {k} is a sparse tensor, but parameter '{h.name}' of "
                               f"{func.name} is not a CSR or BSR matrix")
        if not sparse and sp is not None:
            raise CallMismatch(f"parameter '{h.name}' of {func.name} is a sparse matrix: "
                               f"argument {k} must be an R.SparseTensor")
        out.append((h, sp))
    return out
