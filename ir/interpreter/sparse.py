"""The reference interpreter's sparse form: it runs sparse iterations and sparse buffer
accesses directly, by coordinates, so it is an oracle independent of how they are lowered.

An access `A[i, j]` to a sparse buffer finds the element stored at coordinates (i, j): per
storage group, the root coordinate is its position, and each attached axis finds its position
under its parent's by searching its `indices` (or, for a ragged dense axis, by offset). A read
of a coordinate that is not stored is a structural zero (0); a write there is an error. The one
exception is an index that is the variable iterating that very axis, right after the variable
iterating its parent: it names the element the iteration stands on, by position (so padded
formats such as ELL, whose padding repeats a coordinate, read their padding, not a search).
A sparse iteration enumerates its axes as iteration/SparseIteration documents.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from tirc.ir.buffer import Buffer
from tirc.ir.interpreter.values import Env, Fn, InterpreterError, np_dtype
from tirc.ir.span import Span
from tirc.ir.sparse.axis import Axis, AxisKind
from tirc.ir.sparse.buffer import SparseBuffer, axis_groups, is_detached, storage_shape
from tirc.ir.sparse.iteration import SparseIteration, iterated_parent
from tirc.ir.stmt import IterKind

if TYPE_CHECKING:
    from tirc.ir.interpreter.buffer import BufferAccess

Run = Callable[[Env], None]
ABSENT = -1


class AxisReader:
    """Reads an axis's `indptr`/`indices` arrays and positions from an environment."""

    def __init__(self, axis: Axis, slot_of: Callable[[Any], int],
                 compile_expr: Callable[[Any], Fn]) -> None:
        self.axis = axis
        self.indptr = slot_of(axis.indptr.data) if axis.indptr is not None else None
        self.indices = slot_of(axis.indices.data) if axis.indices is not None else None
        self.nnz = compile_expr(axis.nnz) if axis.kind == AxisKind.SPARSE_FIXED else None
        self.length = compile_expr(axis.length)
        self.checked: weakref.ref[np.ndarray] | None = None  # the indices found in order

    def row(self, env: Env, parent_pos: int) -> tuple[int, int]:
        """The positions [begin, end) under `parent_pos`."""
        if self.nnz is not None:
            w = int(self.nnz(env))
            return parent_pos * w, (parent_pos + 1) * w
        ptr = env[self.indptr]
        return int(ptr[parent_pos]), int(ptr[parent_pos + 1])

    def coordinate(self, env: Env, pos: int, begin: int) -> int:
        if self.indices is None:
            return pos - begin
        return int(env[self.indices][pos])

    def find(self, env: Env, parent_pos: int, coord: int) -> int:
        """The position of `coord` under `parent_pos`, or ABSENT."""
        begin, end = self.row(env, parent_pos)
        if self.indices is None:
            return begin + coord if 0 <= coord < end - begin else ABSENT
        idx = env[self.indices]
        self.check_order(env, idx)
        k = begin + int(np.searchsorted(idx[begin:end], coord))
        return k if k < end and int(idx[k]) == coord else ABSENT

    def check_order(self, env: Env, idx: np.ndarray) -> None:
        """Once per indices array (at its first search): each row's indices strictly increase
        (ELL rows, whose padding may repeat: never decrease), as the compiled code checks on
        entry for an axis it searches."""
        if self.checked is not None and self.checked() is idx:
            return
        steps = np.diff(idx)
        bad = steps <= 0 if self.nnz is None else steps < 0
        if self.nnz is None:
            ptr = env[self.indptr]
            starts = ptr[(ptr > 0) & (ptr < idx.size)]
            bad[starts - 1] = False  # the step from one row into the next
        elif int(self.nnz(env)) > 0:
            w = int(self.nnz(env))
            bad[w - 1::w] = False
        if bad.any():
            p = int(np.argmax(bad)) + 1
            row = int(np.searchsorted(env[self.indptr], p, side="right")) - 1 \
                if self.nnz is None else p // int(self.nnz(env))
            what = "strictly increasing" if self.nnz is None else "nondecreasing"
            raise InterpreterError(f"axis {self.axis.name}: indices are not {what} within row "
                                   f"{row} (its elements are found by binary search)")
        self.checked = weakref.ref(idx)


# The variables of the sparse iterations being compiled: var -> (axis, position slot, the
# variable iterating its parent or None, the variable). Filled by compile_iteration before its
# body, so an iteration nested in another sees the enclosing one's variables.
ITERATING: dict[int, tuple[Axis, int, Any, Any]] = {}


def enclosing(axis: Axis) -> tuple[Any, int] | None:
    """The variable of an enclosing sparse iteration that iterates `axis`, and its position
    slot (the innermost such, the one compiled last)."""
    found = None
    for entry in ITERATING.values():
        if entry[0] is axis:
            found = (entry[3], entry[1])
    return found


def _direct(buf: SparseBuffer, indices: tuple[Any, ...] | None) -> list[int | None]:
    """Per buffer axis, the position slot to read directly, or None to search."""
    out: list[int | None] = [None] * len(buf.axes)
    if indices is None:
        return out
    for group in axis_groups(buf.axes):
        prev: Any = None
        for k in group:
            found = ITERATING.get(id(indices[k]))
            # a detached axis stores every coordinate: its storage index is the coordinate
            if found is None or found[0] is not buf.axes[k] or is_detached(buf.axes, k) or \
                    (k != group[0] and (prev is None or found[2] is not prev)):
                prev = None
                continue
            out[k] = found[1]
            prev = indices[k]
    return out


def storage_buffer(buf: SparseBuffer) -> Buffer:
    """`buf` as a plain buffer of its storage shape (with its layout, if any): what the
    layout maps to memory."""
    return Buffer(name=buf.name, shape=storage_shape(buf.axes), dtype=buf.dtype,
                  data=buf.data, layout=buf.layout, span=buf.span)


def offset_fn(acc: BufferAccess, buf: SparseBuffer, index_fns: list[Fn],
              span: Span | None, indices: tuple[Any, ...] | None = None) -> Fn:
    """The flat storage offset of `buf[coords]`, or ABSENT for a structural zero: the
    storage coordinates (a position per axis group) in row-major order, or through the
    buffer's layout."""
    groups = axis_groups(buf.axes)
    readers = [[AxisReader(buf.axes[k], acc.slot_of, acc.compile_expr) for k in g] for g in groups]
    dim_fns = [acc.compile_expr(d) for d in storage_shape(buf.axes)]
    name = buf.name
    direct = _direct(buf, indices)
    layout = acc.layout_map_fn(storage_buffer(buf)) if buf.layout is not None else None

    def offset(env: Env) -> int:
        off = 0
        coords: list[int] = []
        for group, rs in zip(groups, readers):
            pos = ABSENT
            for k, r in zip(group, rs):
                if direct[k] is not None and (k == group[0] or pos != ABSENT):
                    pos = env[direct[k]]
                    continue
                coord = int(index_fns[k](env))
                if pos == ABSENT and k == group[0]:
                    length = int(r.length(env))
                    if not 0 <= coord < length:
                        raise InterpreterError(f"sparse buffer {name}: coordinate {coord} of "
                                               f"axis {r.axis.name} is outside [0, {length})",
                                               span)
                    pos = coord
                else:
                    pos = r.find(env, pos, coord)
                    if pos == ABSENT:
                        return ABSENT
            off = off * int(dim_fns[groups.index(group)](env)) + pos
            coords.append(pos)
        if layout is not None:
            cmap = layout(env)
            return int(cmap.offset_of(cmap.place(coords)))
        return off

    return offset


def load_fn(acc: BufferAccess, buf: SparseBuffer, index_fns: list[Fn], span: Span | None,
            indices: tuple[Any, ...] | None = None) -> Fn:
    off = offset_fn(acc, buf, index_fns, span, indices)
    dslot = acc.slot_of(buf.data)
    zero = np_dtype(buf.dtype).type(0)
    as_int = buf.dtype.is_int or buf.dtype.is_bool

    def load(env: Env) -> Any:
        k = off(env)
        if k == ABSENT:
            return int(zero) if as_int else zero
        return env[dslot].item(k) if as_int else env[dslot][k]

    return load


def store_fn(acc: BufferAccess, buf: SparseBuffer, index_fns: list[Fn], value_fn: Fn,
             span: Span | None, indices: tuple[Any, ...] | None = None) -> Run:
    off = offset_fn(acc, buf, index_fns, span, indices)
    dslot = acc.slot_of(buf.data)
    name = buf.name

    def store(env: Env) -> None:
        value = value_fn(env)
        k = off(env)
        if k == ABSENT:
            coords = ", ".join(str(int(f(env))) for f in index_fns)
            raise InterpreterError(f"store to sparse buffer {name} at [{coords}], which is not "
                                   "stored (a structural zero)", span)
        env[dslot][k] = value

    return store


def bind_argument(buf: SparseBuffer, arg: Any, check_later: list[Callable[[Env], None]],
                  acc: BufferAccess) -> np.ndarray:
    """The storage of a sparse buffer argument: any contiguous array of its storage size
    (checked once every size is bound)."""
    if not isinstance(arg, np.ndarray):
        raise InterpreterError(f"argument {buf.name}: expected a numpy array, "
                               f"got {type(arg).__name__}")
    if arg.dtype != np_dtype(buf.dtype):
        raise InterpreterError(f"argument {buf.name}: expected dtype {buf.dtype}, "
                               f"got {arg.dtype}")
    if not arg.flags.c_contiguous:
        raise InterpreterError(f"argument {buf.name}: sparse storage must be contiguous")
    dims = [acc.compile_expr(d) for d in storage_shape(buf.axes)]
    layout = acc.layout_map_fn(storage_buffer(buf)) if buf.layout is not None else None

    def check(env: Env) -> None:
        want = layout(env).size if layout is not None else math.prod(int(f(env)) for f in dims)
        if arg.size != want:
            raise InterpreterError(f"argument {buf.name}: sparse storage has {arg.size} "
                                   f"elements, the format needs {want}")

    check_later.append(check)
    return arg.reshape(-1)


# ---- sparse iterations --------------------------------------------------------------------


def compile_iteration(sc: Any, it: SparseIteration) -> Run:
    """A closure running `it` (sc: the StmtCompiler, for bodies and expressions)."""
    ex = sc.ex
    ivs = it.sp_iter_vars
    n = len(ivs)
    var_slots = [ex.slots.of(iv.var) for iv in ivs]
    pos_slots = [ex.slots.new(f"{iv.var.name}.pos") for iv in ivs]
    parents = [iterated_parent(it, k) for k in range(n)]
    # An attached axis whose parent this iteration does not iterate, under an iteration that
    # does: its rows are those under the enclosing variable's position.
    outside = [enclosing(iv.axis.parent) if parents[k] is None and iv.axis.parent is not None
               else None for k, iv in enumerate(ivs)]
    readers = [AxisReader(iv.axis, ex.slots.of, ex.compile) for iv in ivs]
    for k, iv in enumerate(ivs):
        q, o = parents[k], outside[k]
        parent_var = ivs[q].var if q is not None else o[0] if o is not None else None
        ITERATING[id(iv.var)] = (iv.axis, pos_slots[k], parent_var, iv.var)
    try:
        body = sc.compile(it.body)
        init = sc.compile(it.init) if it.init is not None else None
    finally:
        for iv in ivs:
            ITERATING.pop(id(iv.var), None)
    first_r = next((k for k, iv in enumerate(ivs) if iv.kind == IterKind.REDUCE), None)
    init_levels = [k for k in range(first_r + 1, n) if ivs[k].kind == IterKind.SPATIAL] \
        if first_r is not None else []

    def points(env: Env, k: int) -> Any:
        """Yield once per (position, coordinate) of level k, binding its slots."""
        r = readers[k]
        q = parents[k]
        if q is None and outside[k] is None:
            for coord in range(int(r.length(env))):
                env[var_slots[k]] = coord
                env[pos_slots[k]] = coord
                yield
            return
        # T.attach: the rows under the parent variable's coordinate, not its position
        parent_slot = (var_slots[q] if ivs[k].attach is not None else pos_slots[q]) \
            if q is not None else outside[k][1]  # type: ignore[index]
        begin, end = r.row(env, env[parent_slot])
        for p in range(begin, end):
            env[pos_slots[k]] = p
            env[var_slots[k]] = r.coordinate(env, p, begin)
            yield

    def run_levels(env: Env, levels: list[int], leaf: Run) -> None:
        if not levels:
            leaf(env)
            return
        for _ in points(env, levels[0]):
            run_levels(env, levels[1:], leaf)

    def with_init_each(env: Env) -> None:
        if init is not None:
            init(env)
        body(env)

    def run(env: Env) -> None:
        if first_r is None:
            run_levels(env, list(range(n)), with_init_each)
            return

        def reduction(env: Env) -> None:
            if init is not None:
                run_levels(env, init_levels, init)
            run_levels(env, list(range(first_r, n)), body)

        run_levels(env, list(range(first_r)), reduction)

    return run


def is_sparse_buffer(buf: Buffer) -> bool:
    return isinstance(buf, SparseBuffer)
