"""Loop primitives: split, fuse, reorder, and the loop kinds (parallel, vectorize, unroll,
bind), plus annotate and add_unit_loop. Each checks its preconditions and says precisely why
it cannot apply."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from tirc.ir.analysis.regions import uses_any
from tirc.ir.arith import Analyzer, simplify
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT32
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, cast, const, is_const_int
from tirc.ir.stmt import BlockRealize, BufferStore, For, ForKind, IfThenElse, SeqStmt, Stmt
from tirc.ir.visitor import Mutator, any_node, post_order_visit, substitute
from tirc.passes.schedule.cross_thread import check_cross_thread, feeds_reduction
from tirc.passes.schedule.dependence import (
    bind_outer_loops,
    check_distinct_instances,
    check_init_first,
    check_iter_kinds,
    check_loop_used,
    check_not_carried,
    child_sites,
)
from tirc.passes.schedule.state import LoopRV, ScheduleError, ScheduleState
from tirc.passes.schedule.tree import (
    Path,
    block_paths,
    children,
    loop_path,
    simplify_bindings,
    walk,
)

THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
               "threadIdx.z", "vthread", "vthread.x", "vthread.y", "vthread.z")


def outer_analyzer(path: Path) -> Analyzer:
    """An analyzer that knows the ranges of the loops above the last node of `path`."""
    an = Analyzer()
    bind_outer_loops(an, path[:-1])
    return an


def add_predicate(body: Stmt, cond: PrimExpr) -> Stmt:
    """`body` with `cond` and-ed into the predicate of every block directly under it."""
    if isinstance(body, BlockRealize):
        pred = cond if is_const_int(body.predicate, 1) else binop("and", body.predicate, cond)
        return dataclasses.replace(body, predicate=pred)
    if isinstance(body, SeqStmt):
        return SeqStmt(tuple(add_predicate(k, cond) for k in body.seq), span=body.span)
    if isinstance(body, IfThenElse):
        return dataclasses.replace(
            body, then_case=add_predicate(body.then_case, cond),
            else_case=None if body.else_case is None else add_predicate(body.else_case, cond))
    kids = children(body)
    if not kids:
        return body
    return dataclasses.replace(body, body=add_predicate(kids[0], cond))  # type: ignore[call-arg]


def _fmt_factors(factors: list[Any]) -> str:
    return "[" + ", ".join(str(f) for f in factors) + "]"


class _UnitIters(Mutator):
    """Block bindings with the variables of unit loops replaced by the loops' starts (TVM's
    bindings when preserve_unit_iters is False)."""

    def __init__(self, units: dict[Var, PrimExpr]) -> None:
        self.units = units

    def visit_BlockRealize(self, br: BlockRealize) -> Any:
        br = self.generic_visit(br)
        values = substitute(br.iter_values, self.units)
        if values is br.iter_values:
            return br
        return dataclasses.replace(br, iter_values=tuple(simplify(v) for v in values))


def drop_unit_iters(path: Path, body: Stmt) -> Stmt:
    """`body` (to be placed at the end of `path`) with unit loops, above it or inside it,
    gone from its block bindings."""
    units = {x.loop_var: x.min for x in list(path[:-1]) + [q[-1] for q in walk(body)]
             if isinstance(x, For) and is_const_int(x.extent, 1)}
    return _UnitIters(units).visit(body) if units else body


def _check_flag(prim: str, name: str, value: Any) -> None:
    """A diagnostic unless `value` is a bool (TVM's flags are True or False)."""
    if not isinstance(value, bool):
        raise ScheduleError(f"{prim}: {name} must be True or False")


def split(s: ScheduleState, loop: Any, factors: Any, preserve_unit_iters: bool = True,
          disable_predication: bool = False) -> list[LoopRV]:
    """Split a loop into nested loops of the given extents; one factor may be None
    (inferred). Factors whose product exceeds the extent guard the tail with `T.where`, unless
    `disable_predication` (TVM's promise that the tail never runs past the extent). Every
    factor makes a loop, unit ones too; with `preserve_unit_iters=False` the bindings don't
    mention unit loops (TVM's meaning)."""
    path, lp = s.loop(loop, "split")
    _check_flag("split", "preserve_unit_iters", preserve_unit_iters)
    _check_flag("split", "disable_predication", disable_predication)
    if not isinstance(factors, (list, tuple)) or not factors:
        raise ScheduleError("split: factors must be a non-empty list such as [None, 32]")
    facs = list(factors)
    for f in facs:
        if f is not None and (isinstance(f, bool) or not isinstance(f, int)):
            raise ScheduleError(f"split: factor {f!r} is not an integer or None")
        if isinstance(f, int) and f <= 0:
            raise ScheduleError(f"split: factor {f} is not positive")
    if facs.count(None) > 1:
        raise ScheduleError(f"split: at most one factor may be None, got {_fmt_factors(facs)}")
    an = outer_analyzer(path)
    extent = an.simplify(lp.extent)
    dt = lp.loop_var.dtype
    known = math.prod(f for f in facs if f is not None)
    guard = False
    if isinstance(extent, IntImm):
        if None in facs:
            facs[facs.index(None)] = -(-extent.value // known)
        total = math.prod(facs)
        if total < extent.value:
            raise ScheduleError(f"split: factors {_fmt_factors(facs)} do not multiply to the "
                                f"loop extent {extent.value}")
        guard = total != extent.value
        extents: list[PrimExpr] = [const(f, dt) for f in facs]
    else:
        if None not in facs:
            if not an.can_prove(binop("eq", extent, const(known, dt))):
                raise ScheduleError(f"split: loop {lp.loop_var.name} has the symbolic extent "
                                    f"{_text(extent)}; one factor must be None")
            extents = [const(f, dt) for f in facs]
        else:
            k = facs.index(None)
            inferred = an.simplify(binop("floordiv", extent + (known - 1), known))
            extents = [inferred if f is None else const(f, dt) for f in facs]
            guard = not an.can_prove(binop("eq", binop("floormod", extent, known), 0))
            facs[k] = inferred
    names = [f"{lp.loop_var.name}_{k}" for k in range(len(extents))]
    new_vars = [Var(n, dt) for n in names]
    fused: PrimExpr = const(0, dt)
    for v, e in zip(new_vars, extents):
        fused = binop("add", binop("mul", fused, e), v)
    fused = an.simplify(fused)
    value = fused if is_const_int(lp.min, 0) else binop("add", lp.min, fused)
    body = substitute(lp.body, {lp.loop_var: value})
    if guard and not disable_predication:
        _check_no_loads_in_predicates(lp)
        body = add_predicate(body, binop("lt", fused, extent))
    for v, e in reversed(list(zip(new_vars, extents))):
        body = For(v, const(0, dt), e, ForKind.SERIAL, body, span=lp.span)
    if not preserve_unit_iters:
        body = drop_unit_iters(path, body)
    s.replace(path, simplify_bindings(body, an), "split")
    return [LoopRV(v) for v in new_vars]


def _check_no_loads_in_predicates(lp: For) -> None:
    """A guarded tail runs the loop past its extent with the guard in each block's predicate,
    but compiled code evaluates all of a predicate (`and` does not short-circuit): one that
    loads from a buffer at an index over the loop (compute_at's guards on a gathered index)
    would read out of bounds in the tail."""
    def load_over_loop(n: Any) -> bool:
        return isinstance(n, BufferLoad) and uses_any(n.indices, {lp.loop_var})

    for path in walk(lp.body):
        node = path[-1]
        if isinstance(node, BlockRealize) and \
                not any(isinstance(x, BlockRealize) for x in path[:-1]) and \
                any_node(node.predicate, load_over_loop):
            raise ScheduleError(
                f"split: the predicate of block \"{node.block.name}\" loads from a buffer at an "
                f"index over loop {lp.loop_var.name}; the guarded tail of a split that does not "
                f"divide the extent would read it out of bounds")


def _text(e: PrimExpr) -> str:
    from tirc.ir.printer import print_node

    return print_node(e)


def fuse(s: ScheduleState, *loops: Any, preserve_unit_iters: bool = True) -> LoopRV:
    """Fuse perfectly nested loops (given outer to inner) into one; with
    `preserve_unit_iters=False` the bindings don't mention unit loops (TVM's meaning)."""
    _check_flag("fuse", "preserve_unit_iters", preserve_unit_iters)
    if not loops:
        raise ScheduleError("fuse: needs at least one loop")
    found = [s.loop(lp, "fuse") for lp in loops]
    fors = [f for _, f in found]
    if len({id(f) for f in fors}) != len(fors):
        raise ScheduleError("fuse: a loop is given twice")
    for (_, outer), (_, inner) in zip(found, found[1:]):
        if outer.body is not inner:
            raise ScheduleError(
                f"fuse: loop {inner.loop_var.name} is not the only statement in loop "
                f"{outer.loop_var.name} (fused loops must be perfectly nested, outer to inner)")
    vars_ = {f.loop_var for f in fors}
    for f in fors:
        if uses_any((f.min, f.extent), vars_):
            raise ScheduleError(f"fuse: the range of loop {f.loop_var.name} depends on "
                                f"another fused loop")
    path = found[0][0]
    an = outer_analyzer(path)
    dt = fors[0].loop_var.dtype
    fused_var = Var("_".join(f.loop_var.name for f in fors) + "_fused", dt)
    mapping: dict[Any, PrimExpr] = {}
    inner: PrimExpr = const(1, dt)
    for k in range(len(fors) - 1, -1, -1):
        f = fors[k]
        digit: PrimExpr = binop("floordiv", fused_var, inner) if not is_const_int(inner, 1) \
            else fused_var
        if k > 0:
            digit = binop("floormod", digit, f.extent)
        if digit.dtype != f.loop_var.dtype:
            digit = cast(f.loop_var.dtype, digit)  # the fused loop has the first one's dtype
        mapping[f.loop_var] = digit if is_const_int(f.min, 0) else binop("add", f.min, digit)
        inner = an.simplify(binop("mul", inner, f.extent))
    body = substitute(fors[-1].body, mapping)
    new = For(fused_var, const(0, dt), inner, ForKind.SERIAL, body, span=fors[0].span)
    if not preserve_unit_iters:
        new = drop_unit_iters(path, new)
    s.replace(path, simplify_bindings(new, an), "fuse")
    return LoopRV(fused_var)


def reorder(s: ScheduleState, *loops: Any) -> None:
    """Reorder loops of one perfectly nested chain; loops not named keep their places."""
    if not loops:
        return
    found = [s.loop(lp, "reorder") for lp in loops]
    fors = [f for _, f in found]
    for k, f in enumerate(fors):
        if any(g is f for g in fors[:k]):
            raise ScheduleError(f"reorder: loop {f.loop_var.name} is given twice")
    by_depth = sorted(found, key=lambda pf: len(pf[0]))
    position = {id(f): k for k, f in enumerate(fors)}
    for (_, f_out), (p_in, f_in) in zip(by_depth, by_depth[1:]):
        if not any(x is f_out for x in p_in):
            a, b = sorted((f_out, f_in), key=lambda f: position[id(f)])
            raise ScheduleError(f"reorder: loops {a.loop_var.name} and {b.loop_var.name} are "
                                f"not in the same loop nest")
    top_path, top = by_depth[0]
    bottom_path, bottom = by_depth[-1]
    chain = list(bottom_path[len(top_path) - 1:])
    for node, nxt in zip(chain, chain[1:]):
        if not isinstance(node, For) or node.body is not nxt:
            where = node.loop_var.name if isinstance(node, For) else "a block"
            raise ScheduleError(f"reorder: loop {where} holds more than one statement; the "
                                f"loops to reorder must be perfectly nested")
    chain_vars = {f.loop_var for f in chain if isinstance(f, For)}
    for f in chain:
        assert isinstance(f, For)
        if uses_any((f.min, f.extent), chain_vars):
            raise ScheduleError(f"reorder: the range of loop {f.loop_var.name} depends on "
                                f"another loop of the nest")
    sites = child_sites(bottom_path)
    for f in fors:
        check_iter_kinds("reorder", sites, f, allow_reduce=True)
    an = outer_analyzer(top_path)
    check_not_carried("reorder", sites, top, fors, an)
    given = {id(f) for f in fors}
    order = iter(fors)
    new_chain = [next(order) if id(f) in given else f for f in chain]
    check_init_first("reorder", sites, [g for f, g in zip(chain, new_chain) if f is not g])
    body = bottom.body
    for f in reversed(new_chain):
        assert isinstance(f, For)
        body = dataclasses.replace(f, body=body)
    with s.undo_on_error():
        s.replace(top_path, body, "reorder")
        for f in new_chain:  # a parallel loop moved outward has more loops inside it
            assert isinstance(f, For)
            path = loop_path(s.body, f.loop_var)
            assert path is not None
            recheck_parallel_loop(path, "reorder")


def _check_independent(s: ScheduleState, path: Path, lp: For, prim: str) -> None:
    sites = child_sites(path)
    check_iter_kinds(prim, sites, lp, allow_reduce=False)
    an = outer_analyzer(path)
    check_distinct_instances(prim, sites, lp, an)
    if prim in ("parallel", "vectorize") and not is_const_int(lp.extent, 1):
        check_loop_used(prim, sites, lp,
                        lambda buf: prim == "vectorize" or not _parallel_private(path, buf))
    check_not_carried(prim, sites, lp, [lp], an, within=True)


def recheck_parallel_loops(s: ScheduleState, block: str, prim: str) -> None:
    """After `prim` moved `block` under loops that are already parallel or vectorized, each
    such loop of its scope still runs independent iterations (`recheck_parallel_loop`)."""
    for path in block_paths(s.body, block):
        scope = max((k for k, x in enumerate(path[:-1]) if isinstance(x, BlockRealize)),
                    default=-1)
        for k, node in enumerate(path[:-1]):
            if k > scope and isinstance(node, For):
                recheck_parallel_loop(path[:k + 1], prim)


def recheck_parallel_loop(lpath: Path, prim: str) -> None:
    """The loop ending `lpath`, if parallel or vectorized, still runs independent iterations
    after `prim` changed what is under it: no dependence across them, no instance run by two
    of them. Iterations may recompute overlapping elements (compute_at under a parallel loop,
    TVM's usual schedule) only of buffers private to each iteration of a parallel loop
    (ir/parallel_private.py); of any other buffer two threads would write the same element
    while another reads it."""
    node = lpath[-1]
    if not isinstance(node, For) or node.kind not in (ForKind.PARALLEL, ForKind.VECTORIZED):
        return
    kind = "parallel" if node.kind == ForKind.PARALLEL else "vectorized"
    label = f"{prim} under {kind} loop {node.loop_var.name}"
    sites = child_sites(lpath)
    check_iter_kinds(label, sites, node, allow_reduce=False)
    an = outer_analyzer(lpath)

    def shared(buf: Buffer) -> bool:
        return kind == "vectorized" or not _parallel_private(lpath, buf)

    check_distinct_instances(label, sites, node, an, shared)
    if not is_const_int(node.extent, 1):
        check_loop_used(label, sites, node, shared)
    check_not_carried(label, sites, node, [node], an, within=True)


def _parallel_private(path: Path, buf: Buffer) -> bool:
    """Whether `buf` would have a copy per iteration of the loop ending `path` once it is
    parallel (ir/parallel_private.py): its allocating block has no loop around the loop, and
    every use of it in that block lies inside the loop."""
    lp = path[-1]
    for k in range(len(path) - 2, -1, -1):
        node = path[k]
        if isinstance(node, For):
            return False
        if isinstance(node, BlockRealize) and buf in node.block.alloc_buffers:
            return _uses(node.block, buf) == _uses(lp, buf)
    return False


def _uses(node: Any, buf: Buffer) -> int:
    """How many loads and stores under `node` access `buf`'s storage."""
    count = 0

    def visit(n: Any) -> None:
        nonlocal count
        if isinstance(n, (BufferLoad, BufferStore)) and n.buffer.data is buf.data:
            count += 1

    post_order_visit(node, visit)
    return count


def _set_kind(s: ScheduleState, loop: Any, kind: ForKind, prim: str,
              thread: str | None = None) -> None:
    path, lp = s.loop(loop, prim)
    if kind != ForKind.UNROLLED:
        _check_independent(s, path, lp, prim)
    s.replace(path, dataclasses.replace(lp, kind=kind, thread_tag=thread), prim)


def parallel(s: ScheduleState, loop: Any) -> None:
    """Run the loop's iterations on parallel threads (checked: no loop-carried dependence, and
    no two iterations run the same instance of a block writing storage they share)."""
    _set_kind(s, loop, ForKind.PARALLEL, "parallel")


def vectorize(s: ScheduleState, loop: Any) -> None:
    """Make the loop a vector loop (checked like parallel)."""
    _set_kind(s, loop, ForKind.VECTORIZED, "vectorize")


def unroll(s: ScheduleState, loop: Any) -> None:
    _set_kind(s, loop, ForKind.UNROLLED, "unroll")


def bind(s: ScheduleState, loop: Any, thread_axis: Any) -> None:
    """Bind the loop to a GPU thread axis (checked like parallel). A loop that feeds a
    reduction may be bound to threadIdx: a cross-thread reduction (cross_thread.py)."""
    if thread_axis not in THREAD_TAGS:
        raise ScheduleError(f"bind: unknown thread axis {thread_axis!r} (expected one of "
                            f"{', '.join(THREAD_TAGS)})")
    path, lp = s.loop(loop, "bind")
    if feeds_reduction(path, lp):
        check_cross_thread("bind", path, lp, thread_axis)
        s.replace(path, dataclasses.replace(lp, kind=ForKind.THREAD_BINDING,
                                            thread_tag=thread_axis), "bind")
        return
    _set_kind(s, loop, ForKind.THREAD_BINDING, "bind", thread_axis)


def annotate(s: ScheduleState, block_or_loop: Any, ann_key: Any, ann_val: Any) -> None:
    """Set an annotation on a block (`T.block_attr`) or loop (`annotations=`)."""
    if not isinstance(ann_key, str):
        raise ScheduleError("annotate: the annotation key must be a string")
    if not _constant(ann_val):
        raise ScheduleError("annotate: the annotation value must be a constant (a number, a "
                            "string, or a list of them)")
    if isinstance(block_or_loop, LoopRV):
        path, lp = s.loop(block_or_loop, "annotate")
        anns = {**lp.annotations, ann_key: ann_val}
        s.replace(path, dataclasses.replace(lp, annotations=anns), "annotate")
        return
    path, br, blk = s.block(block_or_loop, "annotate")
    anns = {**blk.annotations, ann_key: ann_val}
    s.replace(path, dataclasses.replace(br, block=dataclasses.replace(blk, annotations=anns)),
              "annotate")


def _constant(v: Any) -> bool:
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_constant(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _constant(x) for k, x in v.items())
    return False


def unannotate(s: ScheduleState, block_or_loop: Any, ann_key: Any) -> None:
    """Remove an annotation (which must be there, as in TVM) from a block or loop."""
    if isinstance(block_or_loop, LoopRV):
        path, lp = s.loop(block_or_loop, "unannotate")
        if ann_key not in lp.annotations:
            raise ScheduleError(f"unannotate: loop {lp.loop_var.name} has no annotation "
                                f"{ann_key!r}")
        anns = {k: v for k, v in lp.annotations.items() if k != ann_key}
        s.replace(path, dataclasses.replace(lp, annotations=anns), "unannotate")
        return
    path, br, blk = s.block(block_or_loop, "unannotate")
    if ann_key not in blk.annotations:
        raise ScheduleError(f"unannotate: block \"{blk.name}\" has no annotation {ann_key!r}")
    anns = {k: v for k, v in blk.annotations.items() if k != ann_key}
    s.replace(path, dataclasses.replace(br, block=dataclasses.replace(blk, annotations=anns)),
              "unannotate")



def add_unit_loop(s: ScheduleState, block_or_loop: Any) -> LoopRV:
    """A loop of one iteration around a block or loop (TVM's add_unit_loop): something to
    bind to a GPU axis when a block has no loop of its own."""
    prim = "add_unit_loop"
    if isinstance(block_or_loop, LoopRV):
        path, node = s.loop(block_or_loop, prim)
    else:
        path, node, _ = s.block(block_or_loop, prim)
    dt = node.loop_var.dtype if isinstance(node, For) else INT32
    v = Var("u", dt)
    s.replace(path, For(v, const(0, dt), const(1, dt), ForKind.SERIAL, node, span=node.span),
              prim)
    return LoopRV(v)
