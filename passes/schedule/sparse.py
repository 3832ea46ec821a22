"""Stage-I schedule primitives on sparse iterations (SparseTIR's): `get_sparse_iteration`,
`get_sp_iters`, `sparse_reorder`, `sparse_fuse`.

They act while the function still holds sparse iterations. The first loop-level primitive
of a schedule (`get_block`, `split`, ...) lowers the sparse iterations first (the
`lower-sparse-iterations` pass), so one schedule can reorder a sparse iteration and then
parallelise the loops it becomes.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.sparse import SparseIteration, iterated_parent, parent_axis
from tirc.ir.stmt import IterKind, Stmt
from tirc.ir.visitor import Mutator, any_node
from tirc.passes.schedule.state import ScheduleError, ScheduleState


class SparseIterationRV:
    """A sparse iteration, by its name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"SparseIterationRV({self.name!r})"


class SpIterRV:
    """One variable of a sparse iteration, by the iteration's name and the variable's axis."""

    def __init__(self, iteration: str, axis_name: str, axis: Any) -> None:
        self.iteration = iteration
        self.name = axis_name
        self.axis = axis

    def __repr__(self) -> str:
        return f"SpIterRV({self.iteration}.{self.name})"


def has_sparse_iterations(s: ScheduleState) -> bool:
    return any_node(s.body, lambda n: isinstance(n, SparseIteration))


def _find(s: ScheduleState, name: str, prim: str) -> SparseIteration:
    found: list[SparseIteration] = []
    any_node(s.body, lambda n: isinstance(n, SparseIteration) and n.name == name
             and not found.append(n))  # type: ignore[func-returns-value]
    if not found:
        raise ScheduleError(f"{prim}: no sparse iteration \"{name}\" in function \"{s.name}\" "
                            "(or it is already lowered to loops)")
    return found[0]


def _replace(s: ScheduleState, old: SparseIteration, new: SparseIteration) -> None:
    class _Swap(Mutator):
        def visit_SparseIteration(self, it: SparseIteration) -> Stmt:
            return new if it is old else it

    s.set_body(_Swap().visit(s.body))


def _iteration(s: ScheduleState, rv: Any, prim: str) -> SparseIteration:
    if not isinstance(rv, SparseIterationRV):
        raise ScheduleError(f"{prim}: expected a sparse iteration (sch.get_sparse_iteration)")
    return _find(s, rv.name, prim)


def get_sparse_iteration(s: ScheduleState, name: Any) -> SparseIterationRV:
    if not isinstance(name, str):
        raise ScheduleError("get_sparse_iteration: the name must be a string")
    _find(s, name, "get_sparse_iteration")
    return SparseIterationRV(name)


def get_sp_iters(s: ScheduleState, sp: Any) -> list[SpIterRV]:
    it = _iteration(s, sp, "get_sp_iters")
    return [SpIterRV(it.name, iv.axis.name, iv.axis) for iv in it.sp_iter_vars]


def _positions(it: SparseIteration, rvs: Any, prim: str) -> list[int]:
    if not isinstance(rvs, (list, tuple)) or not all(isinstance(r, SpIterRV) for r in rvs):
        raise ScheduleError(f"{prim}: expected a list of iteration variables (sch.get_sp_iters)")
    out = []
    for r in rvs:
        ks = [k for k, iv in enumerate(it.sp_iter_vars) if iv.axis is r.axis]
        if not ks or r.iteration != it.name:
            raise ScheduleError(f"{prim}: {r.name} is not a variable of \"{it.name}\"")
        out.append(ks[0])
    if len(set(out)) != len(out):
        raise ScheduleError(f"{prim}: a variable appears twice")
    return out


def sparse_reorder(s: ScheduleState, sp: Any, order: Any) -> None:
    """Iterate the variables in `order` (every variable, each attached axis after its
    parent, fused runs kept together). The meaning is unchanged: a sparse iteration's
    result does not depend on its order, except for where `init` runs, which stays before
    each reduction."""
    it = _iteration(s, sp, "sparse_reorder")
    perm = _positions(it, order, "sparse_reorder")
    if len(perm) != len(it.sp_iter_vars):
        raise ScheduleError(f"sparse_reorder: give all {len(it.sp_iter_vars)} variables")
    ivs = tuple(it.sp_iter_vars[k] for k in perm)
    where = {old: new for new, old in enumerate(perm)}
    fused = tuple(tuple(sorted(where[k] for k in g)) for g in it.fused)
    for g in fused:
        if list(g) != list(range(g[0], g[0] + len(g))):
            raise ScheduleError("sparse_reorder: a fused run must stay together")
    new = it.replace(sp_iter_vars=ivs, fused=fused)
    assert isinstance(new, SparseIteration)
    for k, iv in enumerate(ivs):
        parent = parent_axis(iv)
        if parent is not None and any(o.axis is parent for o in ivs[k + 1:]):
            raise ScheduleError(f"sparse_reorder: axis {iv.axis.name} would come before its "
                                f"parent {parent.name}")
    _check_init(new)
    _replace(s, it, new)


def _check_init(it: SparseIteration) -> None:
    ivs = it.sp_iter_vars
    first_r = next((k for k, iv in enumerate(ivs) if iv.kind == IterKind.REDUCE), None)
    if first_r is None:
        return
    for k in range(first_r + 1, len(ivs)):
        q = iterated_parent(it, k)
        if ivs[k].kind == IterKind.SPATIAL and q is not None and q >= first_r \
                and ivs[q].kind == IterKind.REDUCE:
            raise ScheduleError(f"sparse_reorder: spatial axis {ivs[k].axis.name} would depend "
                                f"on the reduction axis {ivs[q].axis.name}")


def sparse_fuse(s: ScheduleState, sp: Any, iters: Any) -> None:
    """Fuse consecutive variables, each attached to the one before, into one loop over the
    positions of the last (T.fuse)."""
    it = _iteration(s, sp, "sparse_fuse")
    ks = _positions(it, iters, "sparse_fuse")
    if len(ks) < 2 or ks != list(range(ks[0], ks[0] + len(ks))):
        raise ScheduleError("sparse_fuse: give two or more consecutive variables")
    if any(it.sp_iter_vars[k].attach is not None for k in ks):
        raise ScheduleError("sparse_fuse: a variable of T.attach cannot be fused")
    for a, b in zip(ks, ks[1:]):
        if iterated_parent(it, b) != a:
            raise ScheduleError(f"sparse_fuse: axis {it.sp_iter_vars[b].axis.name} is not "
                                f"attached to {it.sp_iter_vars[a].axis.name}")
    if it.sp_iter_vars[ks[0]].axis.parent is not None:
        raise ScheduleError("sparse_fuse: the first variable must iterate a root axis")
    if len({it.sp_iter_vars[k].kind for k in ks}) != 1:
        raise ScheduleError("sparse_fuse: spatial and reduction variables cannot be fused")
    if any(set(ks) & set(g) for g in it.fused):
        raise ScheduleError("sparse_fuse: a variable is already fused")
    fused = tuple(sorted((*it.fused, tuple(ks))))
    new = it.replace(fused=fused)
    assert isinstance(new, SparseIteration)
    _replace(s, it, new)


def decompose_format(s: ScheduleState, sp: Any, fmt: Any, width: Any = None,
                     buckets: Any = None, col_parts: Any = 1, block: Any = None) -> None:
    """See passes/sparse/decompose_format.py."""
    from tirc.passes.sparse.decompose_format import decompose_format as run

    run(s, sp, fmt, width, buckets, col_parts, block)


PRIMITIVES = {
    "decompose_format": decompose_format,
    "get_sparse_iteration": get_sparse_iteration,
    "get_sp_iters": get_sp_iters,
    "sparse_reorder": sparse_reorder,
    "sparse_fuse": sparse_fuse,
}
