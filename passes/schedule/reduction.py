"""Reduction primitives: decompose_reduction and rfactor.

decompose_reduction(block, loop) takes a reduction block's init out into its own block
`<name>_init`, under copies (`i_init`, ...) of the spatial loops from `loop` down, placed just
before `loop`; the reduction block becomes `<name>_update`, as in TVM. Both primitives refuse a
block whose init would run more than once in the loops they take it out of (a binding such as
`k % 4` reaches the reduction's minimum twice; see `check_init_once`). The init block keeps
the conjuncts of the predicate over the loops it stays under, and guards its bindings to their
domains where a split's tail guard it leaves behind bounded them (`hoisted_predicate`).

rfactor(loop, factor_axis) splits a reduction along reduction loop `loop`: a block `<name>_rf`
accumulates partial states into `X_rf` for each state buffer X, with one more dimension (at
`factor_axis`) indexed by the loop, seeded with the reducer's identity; the original block then
merges the partial states over that dimension into X, in its own loop nest after the first.
When the block's predicate involves its reduction loops (a split with a guarded tail), a seed
block `<name>_rf_seed` first sets every partial state to the identity, since the rf block's
init runs only where the predicate holds at the first reduction point. The
reducers (reducers.py) are `X[s] = X[s] op v` with op one of +, *, max, min, and the online
softmax merge (running maximum, sum and accumulator), whose split is split-KV attention.
Outer loops that also hold other blocks (a row loop a norm's stages share) stay around both
nests, provided they feed no reduction variable.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

from tirc.ir.analysis.block_regions import infer_regions
from tirc.ir.analysis.regions import and_all, conjuncts, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.arith.construct import fold
from tirc.ir.arith.linear import to_linear
from tirc.ir.buffer import Buffer, Range
from tirc.ir.dtype import HANDLE
from tirc.ir.expr import BinOp, BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.printer import print_node
from tirc.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    IterKind,
    IterVar,
    MatchBufferRegion,
    Stmt,
)
from tirc.ir.structural import same_expr
from tirc.ir.visitor import Mutator, post_order_visit, substitute
from tirc.passes.schedule.dependence import bind_outer_loops, child_sites, scope_path
from tirc.passes.schedule.domain_guards import domain_guards, first_point_guards
from tirc.passes.schedule.reducers import match_reduction
from tirc.passes.schedule.scope import add_alloc, scope_block_name, unique_buffer_name
from tirc.passes.schedule.state import BlockRV, ScheduleError, ScheduleState
from tirc.passes.schedule.tree import insert_after, insert_before, loop_path, loops_in_scope


def init_substitution(blk: Block, spatial_map: dict[Any, Any]
                      ) -> tuple[dict[Any, Any], tuple[MatchBufferRegion, ...]]:
    """What a block's init needs when it moves into a block of its own: `spatial_map` (the
    spatial variables renamed) plus every reduction variable at its domain's minimum, since
    the init runs only there (`B[vk] = 0` initialises `B[kmin]`); and the block's match
    buffers that the init uses, their regions substituted."""
    var_map = dict(spatial_map)
    for iv in blk.iter_vars:
        if iv.kind != IterKind.SPATIAL and iv.var not in var_map:
            var_map[iv.var] = iv.dom.min
    used: set[int] = set()
    assert blk.init is not None
    post_order_visit(blk.init, lambda n: used.add(id(n.buffer))
                     if isinstance(n, (BufferLoad, BufferStore)) else None)
    matches = tuple(substitute(m, var_map) for m in blk.match_buffers if id(m.buffer) in used)
    return var_map, matches


ENUMERATE_LIMIT = 4096  # loop points checked one by one when the bindings are not mixed radix


def check_init_once(prim: str, blk: Block, br: BlockRealize, loops: list[For]) -> None:
    """Refuse to move the init of `blk` out of `loops` unless it runs there exactly once per
    spatial point, at the first iteration.

    `T.init` runs wherever every reduction variable is at its domain's minimum: once, first,
    when the bindings are that minimum plus a mixed-radix sum of the loops (`k`, or
    `k_0 * 4 + k_1` after a split), which is checked on the expressions; otherwise point by
    point when the loops are few and constant. A binding such as `k % 4` or `k * k // 2`
    reaches the minimum again, and a loop that feeds no variable repeats the reduction, both
    re-running the init inside the loops (TVM: not an affine binding), so hoisting it would
    change the result."""
    pairs = [(iv, v) for iv, v in zip(blk.iter_vars, br.iter_values)
             if iv.kind != IterKind.SPATIAL]
    spatial = [v for iv, v in zip(blk.iter_vars, br.iter_values) if iv.kind == IterKind.SPATIAL]
    idle = [x for x in loops if not uses_any(list(br.iter_values), {x.loop_var})
            and not (isinstance(x.extent, IntImm) and x.extent.value == 1)]
    if idle:
        raise ScheduleError(f"{prim}: loop {idle[0].loop_var.name} feeds no variable of block "
                            f"\"{blk.name}\", which repeats its reduction (and init) in it")
    if _mixed_radix(pairs, br, {x.loop_var: x for x in loops}):
        return
    used = [x for x in loops if uses_any([v for _, v in pairs], {x.loop_var})]
    if _init_once_by_points(pairs, used, spatial, br):
        return
    raise ScheduleError(f"{prim}: the reduction variables of block \"{blk.name}\" do not "
                        "visit their domain's minimum once, first, as the loops run "
                        f"(bindings {', '.join(print_node(v) for _, v in pairs)}): its init runs "
                        "again inside the loops")


def _mixed_radix(pairs: list[tuple[IterVar, PrimExpr]], br: BlockRealize,
                 loops: dict[Var, For]) -> bool:
    """Each reduction binding is its minimum plus `sum(stride * (loop - loop.min))` over loops
    of its own, with strides 1, e0, e0*e1, ... (the extents e constant but the last): one to
    one, at the minimum only at the loops' first point; the predicate only bounds the loops
    from above, so the first point runs whenever any does."""
    taken: set[Var] = set()
    for iv, value in pairs:
        lin = to_linear(value)
        offset = lin.const
        stride: int | None = 1
        for atom, coef in sorted(lin.terms.items(), key=lambda t: (t[1], not _unit(loops, t[0]))):
            loop = loops.get(atom)  # type: ignore[call-overload]
            if loop is None or atom in taken or not isinstance(loop.min, IntImm) or \
                    stride is None or coef != stride:
                return False
            taken.add(atom)  # type: ignore[arg-type]
            offset += coef * loop.min.value
            stride = coef * loop.extent.value if isinstance(loop.extent, IntImm) else None
        if not isinstance(iv.dom.min, IntImm) or offset != iv.dom.min.value:
            return False
    return all(_bounds_from_above(c, taken) for c in conjuncts(br.predicate)
               if uses_any(c, taken))


def _unit(loops: dict[Var, For], atom: object) -> bool:
    """The loop of `atom` runs once: ordered before the other loops of the same stride, so
    `k_0 + k_1` with k_1 of extent 1 (a split by 1) reads as mixed radix whatever k_0's."""
    loop = loops.get(atom)  # type: ignore[call-overload]
    return loop is not None and isinstance(loop.extent, IntImm) and loop.extent.value == 1


def _bounds_from_above(c: PrimExpr, loops: set[Var]) -> bool:
    """`c` is `a < b` or `a <= b`, `a` growing with every loop and `b` using none: true at the
    loops' first point whenever it is true at any."""
    if not (isinstance(c, BinOp) and c.op in ("lt", "le")) or uses_any(c.b, loops):
        return False
    lin = to_linear(c.a)
    return all(coef > 0 for atom, coef in lin.terms.items() if atom in loops) and \
        all(not uses_any(atom, loops) for atom in lin.terms if atom not in loops)


def _init_once_by_points(pairs: list[tuple[IterVar, PrimExpr]], loops: list[For],
                         spatial: list[PrimExpr], br: BlockRealize) -> bool:
    """Every point of the constant `loops` (few of them, outermost first) tried: the
    reduction variables are all at their minima at the first point and never after."""
    if any(uses_any(spatial, {x.loop_var}) for x in loops) or \
            uses_any(br.predicate, {x.loop_var for x in loops}):
        return False
    if not all(isinstance(x.min, IntImm) and isinstance(x.extent, IntImm) for x in loops):
        return False
    ranges = [range(x.min.value, x.min.value + x.extent.value) for x in loops]  # type: ignore[union-attr]
    if math.prod(len(r) for r in ranges) > ENUMERATE_LIMIT:
        return False
    first = True
    for point in itertools.product(*ranges):
        env = {x.loop_var: IntImm(p, x.loop_var.dtype) for x, p in zip(loops, point)}
        at_min = []
        for iv, value in pairs:
            got = fold(substitute(value, env))
            if not isinstance(got, IntImm) or not isinstance(iv.dom.min, IntImm):
                return False
            at_min.append(got.value == iv.dom.min.value)
        if all(at_min) != first:
            return False
        first = False
    return True


def hoisted_predicate(pred: PrimExpr, dropped: list[For], ivars: list[IterVar],
                      values: list[PrimExpr], an: Analyzer, first_point: bool = True
                      ) -> PrimExpr:
    """The predicate of a block made from one predicated by `pred` and taken out of the
    loops `dropped` (an init, or rfactor's write-back or seed; iteration variables `ivars`
    bound to `values`), which feed none of its variables. The original block ran its init
    at the first point of those loops, and only if it ran there at all, so the new block
    runs where that point exists and the predicate held at it:
    - each dropped loop's extent is positive (a reduction over `n` with n = 0 never ran its
      init, and the output keeps its value at every level);
    - a conjunct over dropped loops holds with them at their minimum (`k < n` becomes
      `0 < n`); one whose loops' minimum is not known there goes, as in TVM.
    `first_point=False` leaves those two out, for rfactor's seed, which only sets partial
    states and may run whether or not that point exists.
    A split's tail guard that mixes them with the bindings' loops
    (`i_0 * 4 + i_1 + i_2 < 10`, `i_2` a unit loop the bindings no longer use) kept those in
    their domains: guards (domain_guards, `an` knowing the loops left) put that bound back
    where it cannot be proven."""
    gone = {x.loop_var for x in dropped}
    keep = [c for c in conjuncts(pred) if not uses_any(c, gone)]
    if len(keep) < len(conjuncts(pred)):
        keep += domain_guards(ivars, values, keep, an)
    keep = [c for c in keep if not (isinstance(c, IntImm) and c.value)]
    if first_point:
        keep += first_point_guards(pred, dropped, keep, an)
    return and_all(keep, pred)


def decompose_reduction(s: ScheduleState, block: Any, loop: Any) -> BlockRV:
    """Move the block's init into a block `<name>_init` before `loop`."""
    prim = "decompose_reduction"
    path, br, blk = s.block(block, prim)
    lpath, lp = s.loop(loop, prim)
    if blk.init is None:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" has no init to decompose")
    scope_loops = loops_in_scope(path)
    if not any(x is lp for x in scope_loops):
        raise ScheduleError(f"{prim}: loop {lp.loop_var.name} is not above block "
                            f"\"{blk.name}\" in its scope")
    k = next(i for i, x in enumerate(scope_loops) if x is lp)
    outer, inner = scope_loops[:k], scope_loops[k:]
    reduce_values = [v for iv, v in zip(blk.iter_vars, br.iter_values)
                     if iv.kind != IterKind.SPATIAL]
    for x in outer:
        if uses_any(reduce_values, {x.loop_var}):
            raise ScheduleError(f"{prim}: reduction loop {x.loop_var.name} is outside loop "
                                f"{lp.loop_var.name}; the init would run once per iteration "
                                f"of it")
    check_init_once(prim, blk, br, inner)
    spatial = [(iv, v) for iv, v in zip(blk.iter_vars, br.iter_values)
               if iv.kind == IterKind.SPATIAL]
    spatial_values = [v for _, v in spatial]
    copied = [x for x in inner if uses_any(spatial_values, {x.loop_var})]
    loop_map: dict[Any, Any] = {x.loop_var: Var(x.loop_var.name + "_init", x.loop_var.dtype)
                                for x in copied}
    var_map, matches = init_substitution(
        blk, {iv.var: Var(iv.var.name + "_init", iv.var.dtype) for iv, _ in spatial})
    ivars = tuple(IterVar(var_map[iv.var], iv.dom, iv.kind) for iv, _ in spatial)
    values = tuple(substitute(v, loop_map) for v in spatial_values)
    copied_ids = {id(x) for x in copied}
    an = Analyzer()
    bind_outer_loops(an, lpath)
    bind_outer_loops(an, copied)
    pred = substitute(hoisted_predicate(br.predicate, [x for x in inner if id(x) not in copied_ids],
                                     list(ivars), [v for _, v in spatial], an), loop_map)
    name = s.unique_block_name(blk.name + "_init")
    writes = tuple(substitute(r, var_map) for r in blk.writes)
    init_blk = dataclasses.replace(blk, name=name, iter_vars=ivars, reads=(), writes=writes,
                                   body=substitute(blk.init, var_map), init=None,
                                   alloc_buffers=(), match_buffers=matches, annotations={})
    nest: Stmt = BlockRealize(values, pred, init_blk, span=br.span)
    for x in reversed(copied):
        nest = dataclasses.replace(x, loop_var=loop_map[x.loop_var], body=nest)
    update = s.unique_block_name(blk.name + "_update")
    s.replace(path, dataclasses.replace(br, block=dataclasses.replace(blk, init=None,
                                                                      name=update)), prim)
    s.rename_block(blk.name, update)
    new_lpath = loop_path(s.body, lp.loop_var)
    assert new_lpath is not None
    s.set_body(insert_before(new_lpath, nest))
    return s.block_rv(name)


# ---- rfactor ---------------------------------------------------------------------------


class _ToPartial(Mutator):
    """Accesses of the state buffers redirected to their partial-state buffers, the factor
    index inserted at `axis`."""

    def __init__(self, rf_of: dict[Buffer, Buffer], axis: int, index: PrimExpr) -> None:
        super().__init__()
        self.rf_of, self.axis, self.index = rf_of, axis, index

    def at(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return indices[:self.axis] + (self.index,) + indices[self.axis:]

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        e = self.generic_visit(e)
        if e.buffer in self.rf_of:
            return BufferLoad(self.rf_of[e.buffer], self.at(e.indices), e.dtype, span=e.span)
        return e

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        s = self.generic_visit(s)
        if s.buffer in self.rf_of:
            return BufferStore(self.rf_of[s.buffer], s.value, self.at(s.indices), span=s.span)
        return s


def reduction_pattern(prim: str, blk: Any) -> tuple[Buffer, tuple[PrimExpr, ...], str,
                                                      PrimExpr, PrimExpr]:
    """(buffer, indices, combiner, rhs, init value) of `X[s] = X[s] op rhs` with an init."""
    body, init = blk.body, blk.init
    bad = ScheduleError(f"{prim}: block \"{blk.name}\" is not a reduction X[...] = "
                        f"X[...] op value with op one of +, *, max, min and an init")
    if not (isinstance(body, BufferStore) and isinstance(init, BufferStore)
            and init.buffer is body.buffer and same_expr(init.indices, body.indices)):
        raise bad
    v = body.value
    if not (isinstance(v, BinOp) and v.op in ("add", "mul", "max", "min")):
        raise bad
    for mine, other in ((v.a, v.b), (v.b, v.a)):
        if isinstance(mine, BufferLoad) and mine.buffer is body.buffer and \
                same_expr(mine.indices, body.indices):
            return body.buffer, body.indices, v.op, other, init.value
    raise bad


def rfactor(s: ScheduleState, loop: Any, factor_axis: Any = 0) -> BlockRV:
    """Factor a reduction along `loop` into partial-state buffers; returns the rf block."""
    prim = "rfactor"
    lpath, lp = s.loop(loop, prim)
    sites = child_sites(lpath)
    if len(sites) != 1:
        raise ScheduleError(f"{prim}: loop {lp.loop_var.name} must have exactly one block "
                            f"under it, it has {len(sites)}")
    site = sites[0]
    br, blk = site.realize, site.block
    red = match_reduction(blk)
    if red is None:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" is not a reduction X[...] = "
                            "X[...] op value with op one of +, *, max, min, or an online "
                            "softmax merge (whose init, if any, sets its state)")
    lv = lp.loop_var
    spatial = [(iv, v) for iv, v in zip(blk.iter_vars, br.iter_values)
               if iv.kind == IterKind.SPATIAL]
    reduce = [(iv, v) for iv, v in zip(blk.iter_vars, br.iter_values)
              if iv.kind == IterKind.REDUCE]
    if len(spatial) + len(reduce) != len(blk.iter_vars):
        raise ScheduleError(f"{prim}: block \"{blk.name}\" has an opaque iteration variable")
    if uses_any([v for _, v in spatial], {lv}) or not uses_any([v for _, v in reduce], {lv}):
        raise ScheduleError(f"{prim}: loop {lv.name} is not a reduction loop of block "
                            f"\"{blk.name}\"")
    loops = loops_in_scope(site.path)
    # The nest to factor: the loops from the outermost one that holds this block alone. Loops
    # above it, shared with other blocks, stay around both the rf nest and the write-back.
    lone = [k for k, x in enumerate(loops)
            if len(child_sites(site.path[:site.path.index(x) + 1])) == 1]
    if not lone or not any(x is lp for x in loops[lone[0]:]):
        raise ScheduleError(f"{prim}: loop {lv.name} holds blocks other than \"{blk.name}\"")
    shared, loops = loops[:lone[0]], loops[lone[0]:]
    top = loops[0]
    for x in shared:
        if uses_any([v for _, v in reduce], {x.loop_var}):
            raise ScheduleError(f"{prim}: reduction loop {x.loop_var.name} of block "
                                f"\"{blk.name}\" also holds other blocks")
    rank = min(b.ndim for b in red.states)
    if isinstance(factor_axis, bool) or not isinstance(factor_axis, int) or \
            not -(rank + 1) <= factor_axis <= rank:
        what = f"buffer {red.states[0].name}" if len(red.states) == 1 else \
            f"state ({', '.join(b.name for b in red.states)})"
        raise ScheduleError(f"{prim}: factor_axis {factor_axis!r} is out of range for the "
                            f"{rank}-d {what}")
    axis = factor_axis % (rank + 1)
    red_values = [v for _, v in reduce]
    sp_values = [v for _, v in spatial]
    red_loops = [x for x in loops if uses_any(red_values, {x.loop_var})]
    for x in red_loops:
        if uses_any(sp_values, {x.loop_var}):
            raise ScheduleError(f"{prim}: loop {x.loop_var.name} is bound to both spatial and "
                                f"reduction variables of block \"{blk.name}\"")
    if blk.init is not None:  # the partial states start once each, so must the init
        check_init_once(prim, blk, br, red_loops)
    # The partial-state buffers and the rf block.
    rf_of: dict[Buffer, Buffer] = {}
    for buf in red.states:
        rf_name = unique_buffer_name(s, f"{buf.name}_rf")
        rf_of[buf] = Buffer(name=rf_name, shape=buf.shape[:axis] + (lp.extent,) +
                            buf.shape[axis:], dtype=buf.dtype, data=Var(rf_name, HANDLE),
                            scope=buf.scope)
    sp_map = {iv.var: Var(iv.var.name, iv.var.dtype) for iv, _ in spatial}
    loop_iv = {x.loop_var: Var(f"v{x.loop_var.name}", x.loop_var.dtype) for x in red_loops}
    red_map = {iv.var: substitute(v, loop_iv) for iv, v in reduce}
    rf_ivars = [IterVar(sp_map[iv.var], iv.dom, IterKind.SPATIAL) for iv, _ in spatial]
    rf_values: list[PrimExpr] = list(sp_values)
    for x in red_loops:
        kind = IterKind.SPATIAL if x is lp else IterKind.REDUCE
        rf_ivars.append(IterVar(loop_iv[x.loop_var], Range(x.min, x.extent), kind))
        rf_values.append(x.loop_var)
    full_map = {**sp_map, **red_map}
    to_rf = _ToPartial(rf_of, axis, loop_iv[lv])
    rf_body = to_rf.visit(substitute(blk.body, full_map))
    rf_init = to_rf.visit(substitute(red.identity, full_map))
    inferred, rf_writes = infer_regions(rf_body, rf_init, set(blk.alloc_buffers))
    rf_bufs = set(rf_of.values())
    rf_reads = tuple(r for r in inferred if r.buffer in rf_bufs) + tuple(
        substitute(r, full_map) for r in blk.reads if r.buffer not in rf_of)
    rf_block_name = s.unique_block_name(f"{blk.name}_rf")
    rf_blk = dataclasses.replace(blk, name=rf_block_name, iter_vars=tuple(rf_ivars),
                                 reads=rf_reads, writes=rf_writes, body=rf_body, init=rf_init)
    rf_realize = BlockRealize(tuple(rf_values), br.predicate, rf_blk, span=br.span)
    # The write-back nest: copies of the spatial loops and of `loop`, merging the partials.
    kept = [x for x in loops if x is lp or uses_any(sp_values, {x.loop_var})]
    wb_loops = {x.loop_var: Var(x.loop_var.name, x.loop_var.dtype) for x in kept}
    wb_sp = {iv.var: Var(iv.var.name, iv.var.dtype) for iv, _ in spatial}
    v_rf = Var(f"v{lv.name}", lv.dtype)
    wb_ivars = [IterVar(wb_sp[iv.var], iv.dom, IterKind.SPATIAL) for iv, _ in spatial]
    wb_ivars.append(IterVar(v_rf, Range(lp.min, lp.extent), IterKind.REDUCE))
    wb_values = [substitute(v, wb_loops) for v in sp_values] + [wb_loops[lv]]
    partial = _ToPartial(rf_of, axis, v_rf)
    wb_body = substitute(red.merge(partial.visit), wb_sp)
    wb_init = substitute(blk.init, wb_sp) if blk.init is not None else None
    inferred, wb_writes = infer_regions(wb_body, wb_init, set())
    wb_reads = tuple(r for r in inferred if r.buffer in rf_bufs)
    kept_ids = {id(x) for x in kept}
    an = Analyzer()
    bind_outer_loops(an, shared + kept)
    wb_pred = hoisted_predicate(br.predicate, [x for x in loops if id(x) not in kept_ids] + [lp],
                                wb_ivars[:-1], sp_values, an)
    wb_blk = dataclasses.replace(blk, iter_vars=tuple(wb_ivars), reads=wb_reads,
                                 writes=wb_writes, body=wb_body, init=wb_init,
                                 alloc_buffers=())
    wb: Stmt = BlockRealize(tuple(wb_values), substitute(wb_pred, wb_loops), wb_blk,
                            span=br.span)
    for x in reversed(kept):
        wb = For(wb_loops[x.loop_var], x.min, x.extent, x.kind, wb, x.thread_tag,
                 dict(x.annotations), span=x.span)
    seed, anchor = _seed_nest(s, blk, br, red, rf_of, axis, loops, kept, spatial, lp,
                              red_loops)
    s.replace(site.path, rf_realize, prim)
    top_path = loop_path(s.body, top.loop_var)
    assert top_path is not None
    s.set_body(insert_after(top_path, wb))
    if seed is not None:
        anchor_path = loop_path(s.body, anchor)
        assert anchor_path is not None
        s.set_body(insert_before(anchor_path, seed))
    for rf in rf_of.values():
        add_alloc(s, scope_block_name(scope_path(top_path)), rf, prim)
    return s.block_rv(rf_block_name)


def _seed_nest(s: ScheduleState, blk: Block, br: BlockRealize, red: Any,
               rf_of: dict[Buffer, Buffer], axis: int, loops: list[For], kept: list[For],
               spatial: list[tuple[IterVar, PrimExpr]], lp: For, red_loops: list[For]
               ) -> tuple[Stmt | None, Var | None]:
    """A nest `<name>_rf_seed` setting the partial states to the reducer's identity, placed
    just before the outermost reduction loop of the rf nest (its anchor, returned with it),
    for a block whose predicate involves its reduction loops (a split with a guarded tail):
    the rf block's init runs only where the predicate holds at the first reduction point, so
    a partial state the predicate never reaches there (lane 5 of 16 when 5 elements are
    reduced) would be merged uninitialised. (None, None) when the predicate needs no seed."""
    red_vars = {x.loop_var for x in red_loops}
    conds = conjuncts(br.predicate)
    if not any(uses_any(c, red_vars) for c in conds):
        return None, None
    first = next(k for k, x in enumerate(loops) if x.loop_var in red_vars)
    inner_ids = {id(x) for x in loops[first:]}
    copied = [x for x in kept if id(x) in inner_ids]
    loop_map = {x.loop_var: Var(x.loop_var.name + "_seed", x.loop_var.dtype) for x in copied}
    sp_map = {iv.var: Var(iv.var.name, iv.var.dtype) for iv, _ in spatial}
    v_lane = Var(f"v{lp.loop_var.name}", lp.loop_var.dtype)
    ivars = [IterVar(sp_map[iv.var], iv.dom, IterKind.SPATIAL) for iv, _ in spatial]
    ivars.append(IterVar(v_lane, Range(lp.min, lp.extent), IterKind.SPATIAL))
    values = [substitute(v, loop_map) for _, v in spatial] + [loop_map[lp.loop_var]]
    body = _ToPartial(rf_of, axis, v_lane).visit(substitute(red.identity, sp_map))
    _, writes = infer_regions(body, None, set())
    seed_blk = dataclasses.replace(blk, name=s.unique_block_name(f"{blk.name}_rf_seed"),
                                   iter_vars=tuple(ivars), reads=(), writes=writes, body=body,
                                   init=None, alloc_buffers=(), match_buffers=(),
                                   annotations={})
    dropped = [x for x in loops[first:] if not any(x is c for c in copied)] + [lp]
    an = Analyzer()
    bind_outer_loops(an, loops[:first] + copied)
    pred = hoisted_predicate(br.predicate, dropped, ivars[:-1], [v for _, v in spatial], an,
                             first_point=False)
    nest: Stmt = BlockRealize(tuple(values), substitute(pred, loop_map), seed_blk,
                              span=br.span)
    for x in reversed(copied):
        nest = For(loop_map[x.loop_var], x.min, x.extent, x.kind, nest, x.thread_tag,
                   dict(x.annotations), span=x.span)
    return nest, loops[first].loop_var
