"""The conversion of a CSR matrix into a decomposed format, run before a decomposed call.

A function scheduled with `decompose_format` takes the new format's arrays besides the CSR
ones; its metadata `sparse_plan` names them and the library's generated conversion functions
(tirc.passes.sparse.bucket_plan / block_plan), which this module calls in order: sizes first,
then the arrays they size.

- "buckets" (hyb / ell): `counts` gives each bucket's row count; `fill` writes the row maps,
  coordinates and values (an operand) or masks (a sparse output: 0 at padding) of every
  bucket.
- "bsr": `counts` gives the block row pointers (so the number of blocks), `fill` the block
  columns, `values` the blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Call = Callable[..., Any]


def planned_names(plan: dict[str, Any]) -> set[str]:
    """The parameters the plan supplies (arrays and sizes)."""
    if plan.get("kind", "buckets") == "bsr":
        return {plan["block_indptr"], plan["block_indices"], plan["block_vals"],
                *plan["sizes"]}
    return {*plan["rows"], *plan["cols"], *plan["vals"], *plan.get("masks", ()),
            *plan["sizes"]}


def run_plan(plan: dict[str, Any], functions: dict[str, Any], csr: tuple[np.ndarray, ...],
             shape: tuple[int, int]) -> dict[str, Any]:
    """The plan's parameters, by name, for the CSR arrays `(data, indptr, indices)` of a
    matrix of `shape` (elements)."""
    if plan.get("kind", "buckets") == "bsr":
        return _bsr(plan, functions, csr, shape)
    return _buckets(plan, functions, csr, shape)


def _buckets(plan: dict[str, Any], functions: dict[str, Any], csr: tuple[np.ndarray, ...],
             shape: tuple[int, int]) -> dict[str, Any]:
    data, indptr, indices = csr
    m, n = shape
    widths = plan["widths"]
    total = len(widths) * plan.get("parts", 1)
    counts = np.zeros(total, np.int32)
    functions[plan["counts"]].raw(indptr, indices, counts, m, indices.size, n)
    out: dict[str, Any] = {}
    arrays: list[np.ndarray] = []
    with_values = bool(plan["vals"])
    masks = plan.get("masks", ())
    for q in range(total):
        n_q, w = int(counts[q]), widths[q % len(widths)]
        group = [np.zeros(n_q, np.int32), np.zeros(n_q * w, indices.dtype)]
        if with_values:
            group.append(np.zeros(n_q * w, data.dtype))
            out[plan["vals"][q]] = group[2]
        elif masks:
            group.append(np.zeros(n_q * w, np.int8))
            out[masks[q]] = group[2]
        arrays += group
        out.update({plan["rows"][q]: group[0], plan["cols"][q]: group[1],
                    plan["sizes"][q]: n_q})
    values = (data,) if with_values else ()
    functions[plan["fill"]].raw(indptr, indices, *values, *arrays, m, indices.size, n,
                                *(int(c) for c in counts))
    return out


def _bsr(plan: dict[str, Any], functions: dict[str, Any], csr: tuple[np.ndarray, ...],
         shape: tuple[int, int]) -> dict[str, Any]:
    data, indptr, indices = csr
    m, n = shape
    bm, bn = plan["block"]
    mb, nb = -(-m // bm), -(-n // bn)
    nnz = indices.size
    block_indptr = np.zeros(mb + 1, np.int32)
    functions[plan["counts"]].raw(indptr, indices, block_indptr, m, nnz, n, mb, nb)
    nnzb = int(block_indptr[-1])
    block_indices = np.zeros(nnzb, np.int32)
    functions[plan["fill"]].raw(indptr, indices, block_indptr, block_indices, m, nnz, n, mb,
                                nb, nnzb)
    blocks = np.zeros((nnzb, bm, bn), data.dtype)
    functions[plan["values"]].raw(data, indptr, indices, blocks, block_indptr, block_indices,
                                  m, n, nnz, mb, nb, nnzb)
    sizes = dict(zip(plan["sizes"], (mb, nb, nnzb)))
    return {plan["block_indptr"]: block_indptr, plan["block_indices"]: block_indices,
            plan["block_vals"]: blocks, **sizes}
