"""Two iterations of one loop that touch the same element, one of them writing.

A `T.parallel` or `T.vectorized` loop promises that its iterations are independent. A write
whose element does not depend on the loop variable is written by every iteration (`B[0] +=
A[i]`); for small loop nests with constant bounds, every element each iteration writes and
reads is computed (tirc.passes.static_check.points) and any element shared by two iterations is
found, with the two iterations as the witness.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var, const
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.structural import structural_equal
from tirc.passes.static_check.points import (
    NotEnumerable,
    enumerate_points,
    evaluate,
    free_vars,
)
from tirc.passes.static_check.sites import Access, Loop

if TYPE_CHECKING:
    import numpy as np  # imported where iterations are enumerated: most compiles never load it


@dataclass(frozen=True)
class Conflict:
    """What two iterations of the loop both touch."""

    text: str


def _element(a: Access, values: list[int] | None = None) -> str:
    if values is None:
        from tirc.ir.printer import print_node

        return f"{a.buffer.name}[{', '.join(print_node(i) for i in a.indices)}]"
    return f"{a.buffer.name}[{', '.join(str(v) for v in values)}]"


def _inner_vars(a: Access, loop: Loop) -> set[Var]:
    """The loop variable and those of the loops inside it, around access `a`."""
    k = next(i for i, lp in enumerate(a.loops) if lp.node is loop.node)
    return {lp.var for lp in a.loops[k:]}


def _same_layout(a: Buffer, b: Buffer) -> bool:
    """Whether equal indices into `a` and `b` (views of one storage) name the same element."""
    return a is b or (a.dtype == b.dtype and a.layout is None and b.layout is None and
                      structural_equal((a.shape, a.strides, a.elem_offset),
                                       (b.shape, b.strides, b.elem_offset)))


def _in_storage(a: Access) -> Access:
    """`a` as an access to its storage: one index, the element's offset from the data
    pointer, under the storage's name (`A.data[7]`)."""
    from tirc.passes.flatten_buffers import flat_offset  # only for views of one storage

    storage = Buffer(f"{a.buffer.data.name}.data", (), a.buffer.dtype, a.buffer.data)
    return replace(a, buffer=storage, indices=(flat_offset(a.buffer, a.indices),))


def _in_bytes(a: Access) -> Access:
    """A storage access (`_in_storage`) at its first byte."""
    size = const(max(1, a.buffer.dtype.bits // 8) * a.buffer.dtype.lanes, a.indices[0].dtype)
    storage = replace(a.buffer, name=f"the bytes of {a.buffer.name}")
    return replace(a, buffer=storage, indices=(a.indices[0] * size,))


def find_conflict(loop: Loop, write: Access, other: Access) -> Conflict | None:
    """Two different iterations of `loop` where `write` writes an element `other` touches
    (through two views of one storage with different layouts, compared by storage offset)."""
    if not _same_layout(write.buffer, other.buffer) and write.buffer.layout is None \
            and other.buffer.layout is None:
        same_size = write.buffer.dtype == other.buffer.dtype
        write, other = _in_storage(write), _in_storage(other)
        if not same_size:
            write, other = _in_bytes(write), _in_bytes(other)
    own = _inner_vars(write, loop)
    if loop.var not in free_vars([*write.indices, *write.guards]) and \
            not (isinstance(loop.extent, IntImm) and loop.extent.value < 2):
        touches = "writes" if other.is_write else "reads"
        if other is write or not (free_vars([*other.indices]) & own):
            return Conflict(f"every iteration of {loop.var.name} writes "
                            f"{_element(write)}" + ("" if other is write else
                                                    f", which every iteration {touches}"))
    try:
        return _by_points(loop, write, other)
    except NotEnumerable:
        return None


def _rows(loop: Loop, a: Access, outer: list[Var]
          ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per iteration that runs `a`: the outer loops' values and the element's indices (one
    row each), and the value of `loop`'s variable."""
    import numpy as np

    exprs: list[PrimExpr] = [*a.indices, *a.guards, loop.var, *outer]
    pts = enumerate_points(exprs, a.loops)
    n = len(pts.valid)
    runs = pts.valid.copy()
    for g in a.guards:
        runs &= np.broadcast_to(evaluate(g, pts.env, n), runs.shape)
    cols = [np.broadcast_to(evaluate(e, pts.env, n), runs.shape) for e in [*outer, *a.indices]]
    rows = np.stack(cols, axis=1)[runs] if cols else np.zeros((int(runs.sum()), 0), np.int64)
    p = np.broadcast_to(evaluate(loop.var, pts.env, n), runs.shape)[runs]
    return rows.astype(np.int64), p, [v.name for v in outer]


def _by_points(loop: Loop, write: Access, other: Access) -> Conflict | None:
    import numpy as np

    k = next(i for i, lp in enumerate(write.loops) if lp.node is loop.node)
    outer_vars = {lp.var for lp in write.loops[:k]}
    used = free_vars([*write.indices, *write.guards, *other.indices, *other.guards])
    outer = [lp.var for lp in write.loops[:k] if lp.var in used and lp.var in outer_vars]
    rw, pw, names = _rows(loop, write, outer)
    ro, po, _ = _rows(loop, other, outer)
    if not len(rw) or not len(ro):
        return None
    rows = np.concatenate([rw, ro])
    p = np.concatenate([pw, po])
    is_w = np.concatenate([np.ones(len(rw), bool), np.zeros(len(ro), bool)])
    _, group = np.unique(rows, axis=0, return_inverse=True)
    group = group.reshape(-1)
    count = int(group.max()) + 1
    lo = np.full(count, np.iinfo(np.int64).max)
    hi = np.full(count, np.iinfo(np.int64).min)
    np.minimum.at(lo, group, p)
    np.maximum.at(hi, group, p)
    has_w = np.zeros(count, bool)
    has_w[group[is_w]] = True
    bad = np.flatnonzero(has_w & (lo != hi))
    if not len(bad):
        return None
    g = int(bad[0])
    members = np.flatnonzero(group == g)
    w = next(int(m) for m in members if is_w[m])
    x = next(int(m) for m in members if p[m] != p[w])
    row = rows[w].tolist()
    at = ", ".join(f"{name} = {v}" for name, v in zip(names, row[:len(names)]))
    where = f" (with {at})" if at else ""
    element = _element(write, row[len(names):])
    var = loop.var.name
    if x < len(rw) or other.is_write:
        return Conflict(f"iterations {var} = {p[w]} and {var} = {p[x]} both write "
                        f"{element}{where}")
    return Conflict(f"iteration {var} = {p[w]} writes {element}, which iteration "
                    f"{var} = {p[x]} reads{where}")
