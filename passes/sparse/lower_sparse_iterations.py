"""lower-sparse-iterations: sparse iterations onto loops and blocks, sparse buffers onto flat
storage (SparseTIR's sparse-iteration and sparse-buffer lowering, in one step).

Each variable of a sparse iteration (or each fused run of them) becomes a loop. A dense or
detached axis loops over its length; an attached axis loops over the positions stored under its
parent's position, `indptr[p+1] - indptr[p]` iterations (a data-dependent extent) starting at
`indptr[p]` (or `p * nnz_cols` for ELL). A loop whose extent depends on an enclosing loop opens
a nested block, whose iteration-variable domain may then use the outer block's variables. A
fused run loops once over the positions of its last axis; the parents' positions come back by
an `upper_bound` search in their `indptr`.

Accesses: a sparse buffer becomes a plain buffer of its storage shape (one dimension per axis
group). An index that is the variable iterating the very axis of that buffer dimension, under
the same parent, uses the iteration's position directly (not for a detached axis, which stores
every coordinate); any other coordinate finds its position by a `lower_bound` search in the
axis's `indices` (a ragged dense axis by offset), and a read of a coordinate that is not
stored gives 0; a write there fails with a message (the interpreter's error) when the function
checks its arrays, and is skipped otherwise.

The reduction's `init` becomes its own loop nest over the spatial variables that follow the
first reduction variable, placed right before that variable's loop, as the interpreter runs it.
"""

from __future__ import annotations

from dataclasses import field

from tirc.ir.analysis.block_regions import infer_regions
from tirc.ir.attrs import SPARSE_TENSORS
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import (
    BufferLoad,
    IntImm,
    Let,
    PrimExpr,
    Var,
    binop,
    const,
    if_then_else,
)
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.sparse import (
    Axis,
    AxisKind,
    SparseBuffer,
    SparseIteration,
    axis_groups,
    is_detached,
    iterated_parent,
    num_positions,
    row_range,
    storage_shape,
)
from tirc.ir.sparse.printing import function_axes
from tirc.ir.sparse.search import lower_bound, upper_bound
from tirc.ir.sparse.signature import sparse_tensor_info
from tirc.ir.stmt import (
    AssertStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    LetStmt,
    Stmt,
    inside_root_block,
    seq,
)
from tirc.ir.visitor import Mutator, any_node, post_order_visit, substitute
from tirc.passes.pass_base import PassContext, PrimFuncPass, option


@dataclass
class Place:
    """Where one iteration variable is, in terms of block variables: its position in its
    axis's storage and its coordinate."""

    pos: PrimExpr
    coord: PrimExpr


@dataclass
class Level:
    """One loop of the lowered nest: the variables it iterates (one, or a fused run)."""

    members: tuple[int, ...]
    loop_var: Var
    block_var: Var
    extent: PrimExpr
    kind: IterKind
    places: dict[int, Place] = field(default_factory=dict)


def _uses(e: PrimExpr, vars_: set[Var]) -> bool:
    return any_node(e, lambda n: isinstance(n, Var) and n in vars_)


class _Lowering:
    """Lowers the sparse iterations of one function; `flat` maps sparse buffers to their
    storage buffers."""

    def __init__(self, flat: dict[SparseBuffer, Buffer], unstored: str | None = None) -> None:
        self.flat = flat
        self.unstored = unstored  # with a function name: a store to an unstored element fails
        self.searched: set[Axis] = set()  # sparse axes whose indices a lower_bound searches

    # ---- the nest ---------------------------------------------------------------------

    def levels(self, it: SparseIteration, which: list[int], outer: dict[int, Place]
               ) -> list[Level]:
        """Fresh loops for the variables `which` (in order), given the places of the
        variables already bound outside them."""
        ivs = it.sp_iter_vars
        places = dict(outer)
        out: list[Level] = []
        k_iter = iter(which)
        for k in k_iter:
            group = it.fused_group(k)
            members = tuple(q for q in group if q in which) if group else (k,)
            for _ in members[1:]:
                next(k_iter)
            kinds = {ivs[q].kind for q in members}
            name = "_".join(ivs[q].var.name for q in members)
            idt = ivs[members[-1]].axis.idtype
            loop_var = Var(name, idt)
            block_var = Var(f"v{name}", idt)
            if len(members) == 1:
                extent, place = self.single(it, k, places, block_var)
                lv = Level(members, loop_var, block_var, extent, kinds.pop(), {k: place})
            else:
                lv = self.fused(it, members, block_var, loop_var, kinds.pop())
            places.update(lv.places)
            out.append(lv)
        return out

    def single(self, it: SparseIteration, k: int, places: dict[int, Place], v: Var
               ) -> tuple[PrimExpr, Place]:
        iv = it.sp_iter_vars[k]
        axis = iv.axis
        q = iterated_parent(it, k)
        if q is None:
            return axis.length, Place(v, v)
        # T.attach: the rows under the parent variable's coordinate, not its position
        begin, end = row_range(axis, places[q].coord if iv.attach is not None else places[q].pos)
        pos = binop("add", begin, v)
        coord = axis.indices.vload(pos) if axis.is_sparse else v  # type: ignore[union-attr]
        extent = axis.nnz if axis.kind == AxisKind.SPARSE_FIXED else binop("sub", end, begin)
        return extent, Place(pos, coord)  # type: ignore[return-value]

    def fused(self, it: SparseIteration, members: tuple[int, ...], v: Var, loop_var: Var,
              kind: IterKind) -> Level:
        axes = [it.sp_iter_vars[q].axis for q in members]
        places: dict[int, Place] = {}
        pos: PrimExpr = v
        positions: list[PrimExpr] = [v]
        for axis in reversed(axes[1:]):
            parent = axis.parent
            assert parent is not None
            if axis.kind == AxisKind.SPARSE_FIXED:
                pos = binop("floordiv", pos, axis.nnz)
            else:
                assert axis.indptr is not None
                count = binop("add", num_positions(parent), 1)
                pos = binop("sub", upper_bound(axis.indptr, pos, const(0, pos.dtype), count), 1)
            positions.insert(0, pos)
        for q, axis, p in zip(members, axes, positions):
            if axis.parent is None or q == members[0]:
                places[q] = Place(p, p)
            elif axis.is_sparse:
                places[q] = Place(p, axis.indices.vload(p))  # type: ignore[union-attr]
            else:
                begin, _ = row_range(axis, places[members[members.index(q) - 1]].pos)
                places[q] = Place(p, binop("sub", p, begin))
        return Level(members, loop_var, v, num_positions(axes[-1]), kind, places)

    def nest(self, name: str, levels: list[Level], leaf: Stmt) -> Stmt:
        """Loops and blocks over `levels` around `leaf` (written in block variables); a new
        block opens where a loop's extent depends on an enclosing block's variables."""
        segments: list[list[Level]] = []
        bound: set[Var] = set()
        for lv in levels:
            if not segments or _uses(lv.extent, bound):
                segments.append([])
            segments[-1].append(lv)
            bound.add(lv.block_var)
        body = leaf
        for index in range(len(segments) - 1, -1, -1):
            seg = segments[index]
            block_name = name if len(segments) == 1 else f"{name}{index}"
            reads, writes = infer_regions(body, None, set())
            ivs = tuple(IterVar(lv.block_var, Range(IntImm(0, lv.extent.dtype), lv.extent),
                                lv.kind) for lv in seg)
            block = Block(block_name, ivs, reads, writes, body)
            body = BlockRealize(tuple(lv.loop_var for lv in seg), const(True), block)
            for lv in reversed(seg):
                extent = substitute(lv.extent, {o.block_var: o.loop_var for o in seg})
                body = For(lv.loop_var, IntImm(0, lv.extent.dtype), extent, ForKind.SERIAL, body)
        return body

    def lower(self, it: SparseIteration, start: int = 0,
              given: dict[int, Place] | None = None) -> Stmt:
        """The loops and blocks of `it`'s variables from `start` on; `given` places the
        variables before `start` (those of enclosing iterations, see nested). The
        iteration's annotations (`T.iter_attr`) go to its outermost block."""
        out = self.lower_nest(it, start, given)
        if not it.annotations:
            return out

        class _First(Mutator):
            done = False

            def visit_Block(self, b: Block) -> Stmt:
                if self.done:
                    return b
                self.done = True
                return b.replace(annotations={**it.annotations, **b.annotations})

        return _First().visit(out)

    def lower_nest(self, it: SparseIteration, start: int = 0,
                   given: dict[int, Place] | None = None) -> Stmt:
        ivs = it.sp_iter_vars
        n = len(ivs)
        given = given or {}
        first_r = next((k for k in range(start, n) if ivs[k].kind == IterKind.REDUCE), None)
        if first_r is None or it.init is None:
            levels = self.levels(it, list(range(start, n)), given)
            places = {**given, **{k: p for lv in levels for k, p in lv.places.items()}}
            body = self.body(it, it.body if it.init is None else seq(it.init, it.body), places)
            return self.nest(it.name, levels, body)
        outer = self.levels(it, list(range(start, first_r)), given)
        outer_places = {**given, **{k: p for lv in outer for k, p in lv.places.items()}}
        init_vars = [k for k in range(first_r + 1, n) if ivs[k].kind == IterKind.SPATIAL]
        init_levels = self.levels(it, init_vars, outer_places)
        init_places = dict(outer_places)
        for lv in init_levels:
            init_places.update(lv.places)
        init = self.nest(f"{it.name}_init", init_levels, self.body(it, it.init, init_places))
        main_levels = self.levels(it, list(range(first_r, n)), outer_places)
        main_places = dict(outer_places)
        for lv in main_levels:
            main_places.update(lv.places)
        main = self.nest(f"{it.name}_update" if outer else it.name, main_levels,
                         self.body(it, it.body, main_places))
        return self.nest(it.name, outer, seq(init, main)) if outer else seq(init, main)

    # ---- the body -----------------------------------------------------------------------

    def nested(self, it: SparseIteration, s: Stmt, places: dict[int, Place]) -> Stmt:
        """`s` (a part of `it`'s body) with the sparse iterations nested in it lowered inside
        `it`'s: each as one iteration whose first variables are `it`'s, already placed, so an
        axis attached to one `it` iterates runs under its position, and accesses through both
        are direct."""
        lowering = self

        class _Inner(Mutator):
            def visit_SparseIteration(self, inner: SparseIteration) -> Stmt:
                start = len(it.sp_iter_vars)
                merged = inner.replace(
                    sp_iter_vars=it.sp_iter_vars + inner.sp_iter_vars,
                    fused=tuple(tuple(k + start for k in g) for g in inner.fused))
                return lowering.lower(merged, start, places)

        return _Inner().visit(s)

    def body(self, it: SparseIteration, s: Stmt, places: dict[int, Place]) -> Stmt:
        s = self.nested(it, s, places)
        var_index = {iv.var: k for k, iv in enumerate(it.sp_iter_vars)}
        lowering = self

        class _Access(Mutator):
            def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
                e = self.generic_visit(e)
                if not isinstance(e.buffer, SparseBuffer):
                    return e
                idx, found, lets = lowering.translate(it, e.buffer, e.indices, var_index,
                                                      places)
                out = BufferLoad(lowering.flat[e.buffer], idx, e.dtype, span=e.span)
                if found is not None:
                    out = if_then_else(found, out, const(0, e.dtype))
                for var, value in reversed(lets):
                    out = Let(var, value, out, out.dtype)
                return out

            def visit_BufferStore(self, s: BufferStore) -> Stmt:
                s = self.generic_visit(s)
                if not isinstance(s.buffer, SparseBuffer):
                    return s
                idx, found, lets = lowering.translate(it, s.buffer, s.indices, var_index,
                                                      places)
                out: Stmt = BufferStore(lowering.flat[s.buffer], s.value, idx, span=s.span)
                if found is not None:
                    out = IfThenElse(found, out, lowering.unstored_store(s.buffer), span=s.span)
                for var, value in reversed(lets):
                    out = LetStmt(var, value, out, span=s.span)
                return out

        out = _Access().visit(s)
        return substitute(out, {iv.var: places[k].coord for k, iv in
                                enumerate(it.sp_iter_vars) if k in places})

    def unstored_store(self, buf: SparseBuffer) -> Stmt | None:
        """What a store to an element `buf` does not store does: fail with a message (as the
        interpreter does) when the function checks its sparse structure, else nothing."""
        if self.unstored is None:
            return None
        return AssertStmt(const(False), f"{self.unstored}: store to sparse buffer {buf.name} "
                          "at an element that is not stored (a structural zero)",
                          Evaluate(IntImm(0)), span=buf.span)

    def translate(self, it: SparseIteration, buf: SparseBuffer, indices: tuple[PrimExpr, ...],
                  var_index: dict[Var, int], places: dict[int, Place]
                  ) -> tuple[tuple[PrimExpr, ...], PrimExpr | None, list[tuple[Var, PrimExpr]]]:
        """Storage indices of `buf[indices]`, the condition that the element is stored (None:
        always) and the searched positions to bind before the access."""
        coords = {iv.var: places[k].coord for k, iv in enumerate(it.sp_iter_vars)
                  if k in places}
        out: list[PrimExpr] = []
        found: PrimExpr | None = None
        lets: list[tuple[Var, PrimExpr]] = []
        for group in axis_groups(buf.axes):
            pos: PrimExpr | None = None
            prev_var: int | None = None
            for k in group:
                axis = buf.axes[k]
                e = indices[k]
                q = var_index.get(e) if isinstance(e, Var) else None
                # a detached axis stores every coordinate: its storage index is the coordinate
                direct = q is not None and q in places and it.sp_iter_vars[q].axis is axis \
                    and not is_detached(buf.axes, k)
                if k == group[0]:
                    pos = places[q].pos if direct else substitute(e, coords)  # type: ignore
                    prev_var = q if direct else None
                    continue
                assert pos is not None
                if direct and prev_var is not None and iterated_parent(it, q) == prev_var:
                    pos = places[q].pos  # type: ignore[index]
                    prev_var = q
                    continue
                pos, cond, bind = self.search(axis, pos, substitute(e, coords))
                found = cond if found is None else binop("and", found, cond)
                lets.extend(bind)
                prev_var = None
            assert pos is not None
            out.append(pos)
        return tuple(out), found, lets

    def search(self, axis: Axis, parent_pos: PrimExpr, coord: PrimExpr
               ) -> tuple[PrimExpr, PrimExpr, list[tuple[Var, PrimExpr]]]:
        """The position of `coord` under `parent_pos`, the condition that it is stored, and
        the search result to bind (a variable used twice)."""
        begin, end = row_range(axis, parent_pos)
        if not axis.is_sparse:
            ok = binop("and", binop("ge", coord, const(0, coord.dtype)),
                       binop("lt", coord, binop("sub", end, begin)))
            return binop("add", begin, coord), ok, []
        assert axis.indices is not None
        self.searched.add(axis)
        pos = Var(f"{axis.name}_pos", axis.idtype)
        inside = binop("lt", pos, end)
        stored = binop("and", inside, binop("eq", axis.indices.vload(pos), coord))
        return pos, stored, [(pos, lower_bound(axis.indices, coord, begin, end))]


@dataclass(frozen=True)
class LowerSparseIterations(PrimFuncPass):
    """Sparse iterations -> loops and blocks; sparse buffers -> flat storage buffers."""

    name = "lower-sparse-iterations"
    description = "sparse iterations -> loops with data-dependent extents; sparse buffers -> flat"

    check_arrays: bool | None = option(
        None, config="sparse.check_arrays",
        doc="check the axis arrays (indptr 0..nnz, nondecreasing; indices in range, sorted "
            "where searched) on entry, and fail a store to an element that is not stored; "
            "default: on for CPU targets, off for GPU ones (the runtime checks before the copy)")

    def checks_arrays(self, ctx: PassContext) -> bool:
        """Whether the lowered function checks its axis arrays on entry, for `ctx`'s target."""
        if self.check_arrays is not None:
            return self.check_arrays
        return not getattr(ctx.target, "is_gpu", False)

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return lower_sparse(func, self.checks_arrays(ctx))


def sparse_array_checks(ctx: PassContext) -> bool:
    """Whether sparse lowering checks axis arrays under `ctx`, as the pass would decide (a
    schedule lowers sparse iterations itself before its first loop primitive)."""
    pass_ = LowerSparseIterations().configured(ctx)
    assert isinstance(pass_, LowerSparseIterations)
    return pass_.checks_arrays(ctx)


def array_checks(func: PrimFunc, body: Stmt, searched: frozenset[Axis] = frozenset()
                 ) -> Stmt:
    """`body` after checks of every axis array the function takes: `indptr` starts at 0, never
    decreases and ends at nnz; every index is inside its axis; the indices of an axis in
    `searched` (found by a binary search) strictly increase within each row. A compiled call
    with malformed arrays then fails with the message instead of reading out of bounds or
    missing a stored element. An axis nothing searches may list its coordinates in any order
    (a paged KV cache's pages are in sequence order, not page-id order)."""
    name = str(func.attrs.get("global_symbol", func.name))
    params = set(func.buffer_map.values())
    checks: list[Stmt] = []
    for axis in function_axes(func):
        if axis.parent is None:
            continue
        count = num_positions(axis.parent)
        ptr, idx = axis.indptr, axis.indices
        if ptr is not None and ptr in params and axis.nnz is not None:
            r = Var("r", count.dtype)
            ok = binop("le", ptr.vload(r), ptr.vload(binop("add", r, 1)))
            checks.append(For(r, IntImm(0, count.dtype), count, ForKind.SERIAL, AssertStmt(
                ok, f"{name}: axis {axis.name}: indptr decreases", Evaluate(IntImm(0)))))
            ends = binop("and", binop("eq", ptr.vload(IntImm(0, count.dtype)),
                                      const(0, ptr.dtype)),
                         binop("eq", ptr.vload(count), axis.nnz))
            checks.insert(len(checks) - 1, AssertStmt(
                ends, f"{name}: axis {axis.name}: indptr must start at 0 and end at nnz",
                Evaluate(IntImm(0))))
        if idx is not None and idx in params:
            total = num_positions(axis)
            p = Var("p", total.dtype)
            inside = binop("and", binop("ge", idx.vload(p), const(0, idx.dtype)),
                           binop("lt", idx.vload(p), axis.length))
            checks.append(For(p, IntImm(0, total.dtype), total, ForKind.SERIAL, AssertStmt(
                inside, f"{name}: axis {axis.name}: an index is outside [0, length)",
                Evaluate(IntImm(0)))))
            if axis in searched:
                checks.append(_increasing_check(name, axis))
    for check in reversed(checks):  # an assert scopes over what follows, as it prints
        body = check.replace(body=body) if isinstance(check, AssertStmt) else seq(check, body)
    return body


def _increasing_check(name: str, axis: Axis) -> Stmt:
    """A loop over the axis's rows asserting that each row's indices strictly increase (an
    ELL row, `sparse_fixed`, may repeat its last index as padding: never decrease)."""
    assert axis.parent is not None and axis.indices is not None
    rows = num_positions(axis.parent)
    r = Var("r", rows.dtype)
    begin, end = row_range(axis, r)
    p = Var("p", begin.dtype)
    idx = axis.indices
    strict = axis.kind == AxisKind.SPARSE_VARIABLE
    step = binop("lt" if strict else "le", idx.vload(binop("sub", p, 1)), idx.vload(p))
    what = "strictly increasing" if strict else "nondecreasing"
    extent = binop("max", binop("sub", end, binop("add", begin, 1)), const(0, begin.dtype))
    inner = For(p, binop("add", begin, 1), extent, ForKind.SERIAL, AssertStmt(
        step, f"{name}: axis {axis.name}: indices are not {what} within a row (its elements "
        "are found by binary search)", Evaluate(IntImm(0))))
    return For(r, IntImm(0, rows.dtype), rows, ForKind.SERIAL, inner)


def lower_sparse(func: PrimFunc, check_arrays: bool = True) -> PrimFunc:
    """`func` with its sparse iterations and buffers lowered (unchanged if it has none); with
    `check_arrays`, the body first checks the axis arrays (array_checks)."""
    if not function_axes(func) and not any_node(func.body,
                                                lambda n: isinstance(n, SparseIteration)):
        return func
    flat: dict[SparseBuffer, Buffer] = {}
    allocated: list[Buffer] = []
    post_order_visit(func.body, lambda n: allocated.extend(n.alloc_buffers)
                     if isinstance(n, Block) else None)
    for buf in (*func.buffer_map.values(), *allocated):
        if isinstance(buf, SparseBuffer):
            flat[buf] = Buffer(name=buf.name, shape=storage_shape(buf.axes), dtype=buf.dtype,
                               data=buf.data, layout=buf.layout, span=buf.span)
    name = str(func.attrs.get("global_symbol", func.name))
    lowering = _Lowering(flat, name if check_arrays else None)

    class _Iterations(Mutator):
        def visit_SparseIteration(self, it: SparseIteration) -> Stmt:
            return lowering.lower(it)

        def visit_Block(self, b: Block) -> Stmt:
            b = self.generic_visit(b)
            if not any(isinstance(x, SparseBuffer) for x in b.alloc_buffers):
                return b
            return b.replace(alloc_buffers=tuple(flat.get(x, x)  # type: ignore[call-overload]
                                                 for x in b.alloc_buffers))

    body = _Iterations().visit(func.body)
    if check_arrays:
        searched = frozenset(lowering.searched)
        # the checks are asserts that scope over what follows: the root block keeps them to
        # this function's body wherever it is inlined (lower-graph)
        body = inside_root_block(body, lambda b: array_checks(func, b, searched))
    attrs = dict(func.attrs)
    info = sparse_tensor_info(func)
    if info:
        attrs[SPARSE_TENSORS] = info
    attrs.pop("sparse_tir_level", None)
    bmap = {p: flat.get(b, b) for p, b in func.buffer_map.items()}  # type: ignore[arg-type]
    return func.replace(buffer_map=bmap, body=body, attrs=attrs)  # type: ignore[return-value]
