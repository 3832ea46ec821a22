"""compute_at and reverse_compute_at: move a block under a loop of another block's nest.

compute_at moves a producer under a loop of its consumers: per iteration of the loop, the
consumers under it need some region of each buffer the producer writes (their read regions,
relaxed over the loops inside the target loop). reverse_compute_at moves a consumer under a
loop of its producers: per iteration, they wrote some region of each buffer it reads.

The moved block's iteration domain is solved from its own region of each such buffer (its
regions of one buffer united, reduction variables widened to their whole range), dimension by
dimension, as TVM's SolveBlockVarDomain: a window `[a*v + b, a*v + b + w]` (a point, a stride,
a range), or the floor division or modulo of one by a constant; a dimension indexed by several
variables is solved for the one of largest stride, the others widened to their whole range.
compute_at keeps the instances whose writes meet the needed region (united over buffers);
reverse_compute_at keeps those whose reads all lie inside what was produced (intersected), and
checks that the iterations then run every instance exactly once, and that a reduction
producer completes its elements within one iteration (TVM's ProducerNotComplete). A variable
the regions don't constrain keeps the values it took per iteration of the loops it stays under.

New loops `ax0, ax1, ...` range over the solved domain, with TVM's predicate where they may
pass the variable's former range (`i_0 * 4 + ax0 - 1 >= 0`); the block's own predicate is
kept, rewritten over its iteration variables when it used the loops that go (a split's tail
guard `i_0 * 32 + i_1 < 100` becomes `vi < 100`, dropped when the domain implies it). The
nest goes where `index` says (TVM's: -1 just before the first consumer under the loop, -2
just after the last producer). Where the needed region's bounds read a buffer (a gathered
read, `T6[Idx[vi, vj] % 4, vk]`), the moved producer also takes its consumers' guards over the
loops down to the target (a split's tail `ko * 3 + ki < 4`): in an iteration they skip, those
bounds would read past the index buffer.

The move is refused when a block under the loop writes what a producer moving in reads, or
reads what a consumer moving in writes (a read before a write in program order, which the
loop would reorder), and when a parallel or vectorized loop above the new place would then
run dependent iterations or the same instance twice in storage its iterations share
(`recheck_parallel_loops`): computing overlapping regions per iteration is fine serially, and
under a parallel loop only in a buffer private to each iteration.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.analysis.regions import (
    Bounds,
    and_all,
    conjuncts,
    const_diff,
    extent_upper_bound,
    intersect_bounds,
    loop_bounds,
    prove_le,
    relax,
    relax_region,
    union_bounds,
    uses_any,
)
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import Linear, from_linear, is_index_dtype, to_linear
from tirc.ir.buffer import Buffer
from tirc.ir.expr import (
    BinOp,
    BufferLoad,
    IntImm,
    PrimExpr,
    Var,
    binop,
    cast,
    const,
    is_const_int,
)
from tirc.ir.printer import print_node
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import BlockRealize, For, ForKind, IterKind, IterVar, SeqStmt, Stmt, seq
from tirc.ir.structural import same_expr
from tirc.ir.visitor import post_order_visit, substitute
from tirc.passes.schedule.dependence import (
    BlockSite,
    bind_outer_loops,
    consumers,
    producers,
    scope_path,
    scope_sites,
)
from tirc.passes.schedule.domain_solve import solve_domains, without_clamps
from tirc.passes.schedule.loops import recheck_parallel_loops
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.schedule.tiling import check_exactly_once, div_extent_bound, min_bound
from tirc.passes.schedule.tree import Path, loop_path, loops_in_scope, simplify_bindings


def compute_at(s: ScheduleState, block: Any, loop: Any,
               preserve_unit_loops: bool = False, index: Any = -1) -> None:
    """Move producer `block` under `loop`, computing per iteration what consumers need.
    `index` places it among the loop's statements (-1: just before the first consumer,
    -2: just after the last producer, else that position), as in TVM."""
    _move(s, block, loop, preserve_unit_loops, index, reverse=False)


def reverse_compute_at(s: ScheduleState, block: Any, loop: Any,
                       preserve_unit_loops: bool = False, index: Any = -1) -> None:
    """Move consumer `block` under `loop`, consuming per iteration what producers made."""
    _move(s, block, loop, preserve_unit_loops, index, reverse=True)


def _move(s: ScheduleState, block: Any, loop: Any, preserve_unit_loops: Any, index: Any,
          reverse: bool) -> None:
    """compute_at (reverse: reverse_compute_at) of `block` under `loop`."""
    prim = "reverse_compute_at" if reverse else "compute_at"
    bpath, br, blk = s.block(block, prim)
    lpath, lp = s.loop(loop, prim)
    name, lname = blk.name, lp.loop_var.name
    if not isinstance(preserve_unit_loops, bool):
        raise ScheduleError(f"{prim}: preserve_unit_loops must be True or False")
    if isinstance(index, bool) or not isinstance(index, int):
        raise ScheduleError(f"{prim}: index must be an integer (-1, -2 or a position)")
    sp_b, sp_l = scope_path(bpath), scope_path(lpath)
    if (sp_b[-1] if sp_b else None) is not (sp_l[-1] if sp_l else None):
        raise ScheduleError(f"{prim}: block \"{name}\" and loop {lname} are not in the same "
                            f"block scope")
    if any(x is lp for x in bpath):
        raise ScheduleError(f"{prim}: block \"{name}\" is already under loop {lname}")
    for iv in blk.iter_vars:
        if iv.kind == IterKind.OPAQUE:
            raise ScheduleError(f"{prim}: block \"{name}\" has the opaque iteration variable "
                                f"{iv.var.name}")
    sites = scope_sites(s.body, bpath)
    me = next(x for x in sites if x.block is blk)
    _check_complete_or_reduction(prim, me, sites)
    if not reverse:
        for r in blk.writes:
            if s.is_param_buffer(r.buffer):
                raise ScheduleError(f"{prim}: block \"{name}\" writes {r.buffer.name}, an output "
                                    f"of function \"{s.name}\"; only blocks computing "
                                    f"intermediate buffers can move")
    partners = producers(me, sites) if reverse else consumers(me, sites)
    role = "producer" if reverse else "consumer"
    if not partners:
        raise ScheduleError(f"{prim}: block \"{name}\" has no {role} block")
    for p in partners:
        if not any(x is lp for x in p.path):
            raise ScheduleError(f"{prim}: {role} block \"{p.name}\" of block \"{name}\" is not "
                                f"under loop {lname}")
    _check_no_anti_dependence(prim, me, sites, lp, reverse)
    kids = list(lp.body.seq) if isinstance(lp.body, SeqStmt) else [lp.body]
    pos = _insertion_point(prim, kids, me, sites, index, lname)
    an = Analyzer()
    bind_outer_loops(an, lpath)
    if reverse:
        _check_producers_complete(prim, partners, lp, an)
    need = _needed_regions(me, partners, lp, an, reverse)
    own = [x for x in loops_in_scope(bpath) if not any(x is y for y in lpath)]
    new_loops = [x for x in loops_in_scope(lpath) + [lp] if not any(x is y for y in bpath)]
    idle = [] if reverse else _consumers_run(partners, lp, need)
    nest = _new_nest(prim, br, need, own, new_loops, lpath, an, preserve_unit_loops, reverse,
                     idle)
    with s.undo_on_error():
        s.replace(bpath, None, prim)
        new_lpath = loop_path(s.body, lp.loop_var)
        assert new_lpath is not None
        cur = new_lpath[-1]
        assert isinstance(cur, For)
        cur_kids = list(cur.body.seq) if isinstance(cur.body, SeqStmt) else [cur.body]
        body = seq(*cur_kids[:pos], simplify_bindings(nest, an), *cur_kids[pos:])
        s.replace(new_lpath, dataclasses.replace(cur, body=body), prim)
        recheck_parallel_loops(s, name, prim)


def _check_complete_or_reduction(prim: str, me: BlockSite, sites: list[BlockSite]) -> None:
    """TVM's precondition: the block is complete (spatial variables only, not reading what it
    writes) or a reduction (an init, reduction variables not indexing its outputs), and the
    only writer of its outputs in the scope. Only then may it run a different number of
    times (compute_at recomputes overlapping regions) without changing results."""
    blk = me.block
    reads, writes = me.regions()
    reduce_vars = {iv.var for iv in blk.iter_vars if iv.kind == IterKind.REDUCE}
    mine = {w.buffer for w in writes}
    if reduce_vars and blk.init is None:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" has reduction variables but no init "
                            f"(after decompose_reduction, move the block before decomposing): "
                            f"it is neither a complete nor a reduction block")
    if not reduce_vars and blk.init is None and any(r.buffer in mine for r in reads):
        raise ScheduleError(f"{prim}: block \"{blk.name}\" reads a buffer it writes without "
                            f"being a reduction (no init): it is neither a complete nor a "
                            f"reduction block")
    for w in writes:
        if uses_any(tuple(w.region), reduce_vars):
            raise ScheduleError(f"{prim}: block \"{blk.name}\" indexes {w.buffer.name} with a "
                                f"reduction variable: it is not a reduction block")
        other = next((x for x in sites if x.block is not blk and w.buffer in x.writes()), None)
        if other is not None:
            raise ScheduleError(f"{prim}: block \"{blk.name}\" is not the only writer of "
                                f"{w.buffer.name} (block \"{other.name}\" writes it too)")


def _check_no_anti_dependence(prim: str, me: BlockSite, sites: list[BlockSite], lp: For,
                              reverse: bool) -> None:
    """No block under the loop writes what a producer moving in reads, or reads what a
    consumer moving in writes. The loop runs after the producer and before the consumer, so
    such a block writes after the producer read (reads before the consumer wrote) in program
    order; inside the loop the moved block would see (clobber) it in some iterations. In a
    program whose blocks only read what earlier ones wrote, there is no such block."""
    mine = set(me.writes()) if reverse else set(me.reads())
    for x in sites:
        if x.block is me.block or not any(y is lp for y in x.path):
            continue
        both = sorted(b.name for b in mine & set(x.reads() if reverse else x.writes()))
        if not both:
            continue
        lname = lp.loop_var.name
        if reverse:
            raise ScheduleError(f"{prim}: block \"{x.name}\" under loop {lname} reads {both[0]} "
                                f"before block \"{me.name}\" writes it; inside the loop, "
                                f"\"{me.name}\" would overwrite what it reads")
        raise ScheduleError(f"{prim}: block \"{x.name}\" under loop {lname} writes {both[0]} "
                            f"after block \"{me.name}\" reads it; inside the loop, "
                            f"\"{me.name}\" would read what it writes")


def _contains(kid: Stmt, site: BlockSite) -> bool:
    """Whether the statement `kid` holds the site's block."""
    return any(x is kid for x in site.path)


def _insertion_point(prim: str, kids: list[Stmt], me: BlockSite, sites: list[BlockSite],
                     index: int, lname: str) -> int:
    """Where the block goes among the loop's statements: after every producer of it and
    before every consumer of it there (TVM's index: -1 the last such place, -2 the first)."""
    prods, cons = producers(me, sites), consumers(me, sites)
    last_p = max((k for k, kid in enumerate(kids) if any(_contains(kid, p) for p in prods)),
                 default=-1)
    first_c = min((k for k, kid in enumerate(kids) if any(_contains(kid, c) for c in cons)),
                  default=len(kids))
    if last_p >= first_c:
        p = next(p for p in prods if _contains(kids[last_p], p))
        c = next(c for c in cons if _contains(kids[first_c], c))
        raise ScheduleError(f"{prim}: under loop {lname}, producer block \"{p.name}\" of block "
                            f"\"{me.name}\" comes after its consumer block \"{c.name}\"; there "
                            f"is no place for block \"{me.name}\" between them")
    if index == -1:
        return first_c
    if index == -2:
        return last_p + 1
    if last_p + 1 <= index <= first_c:
        return index
    raise ScheduleError(f"{prim}: index {index} is not a valid position under loop {lname}: "
                        f"use -1, -2, or {last_p + 1} to {first_c}")


def _inner_dom(site: BlockSite, lp: For) -> dict[Var, Bounds]:
    """Ranges of the loops strictly inside `lp` on the way to the site's block."""
    dom: dict[Var, Bounds] = {}
    inside = False
    for x in site.path[:-1]:
        if x is lp:
            inside = True
            continue
        if inside and isinstance(x, For):
            dom[x.loop_var] = loop_bounds(x.min, x.extent)
    return dom


def _check_producers_complete(prim: str, partners: list[BlockSite], lp: For,
                              an: Analyzer) -> None:
    """A consumer moved under a producer's loop must see complete elements: every reduction
    variable of the producer runs its whole range inside the loop (TVM's ProducerNotComplete)."""
    for p in partners:
        dom = _inner_dom(p, lp)
        for iv, value in zip(p.block.iter_vars, p.realize.iter_values):
            if iv.kind != IterKind.REDUCE:
                continue
            r = relax(value, dom)
            lo, hi = loop_bounds(iv.dom.min, iv.dom.extent)
            # the loops inside cover the whole range (a guarded split may reach past it)
            if r is None or not prove_le(r[0], lo, an) or not prove_le(hi, r[1], an):
                raise ScheduleError(
                    f"{prim}: producer block \"{p.name}\" is a reduction that does not complete "
                    f"its elements within one iteration of loop {lp.loop_var.name} (its "
                    f"reduction variable {iv.var.name} also runs over loops outside it)")


def _needed_regions(me: BlockSite, partners: list[BlockSite], lp: For, an: Analyzer,
                    reverse: bool) -> dict[Buffer, list[Bounds | None]]:
    """Per buffer the block writes (reads, when reverse), the region the partners under the
    loop read (write) in one iteration of it, relaxed over the loops inside it."""
    mine = set(me.reads()) if reverse else set(me.writes())
    need: dict[Buffer, list[list[Bounds | None]]] = {}
    for p in partners:
        dom = _inner_dom(p, lp)
        bmap = {iv.var: v for iv, v in zip(p.block.iter_vars, p.realize.iter_values)}
        reads, writes = p.regions()
        for r in (writes if reverse else reads):
            if r.buffer in mine:
                region = substitute(r.region, bmap)
                need.setdefault(r.buffer, []).append(relax_region(region, dom, an))
    out: dict[Buffer, list[Bounds | None]] = {}
    for buf, regs in need.items():
        dims: list[Bounds | None] = []
        for k in range(buf.ndim):
            items = [r[k] for r in regs]
            dims.append(None if any(b is None for b in items)
                        else union_bounds([b for b in items if b is not None], an))
        out[buf] = dims
    return out


def _consumers_run(partners: list[BlockSite], lp: For,
                   need: dict[Buffer, list[Bounds | None]]) -> list[PrimExpr]:
    """When the needed region's bounds read a buffer (a gather, `T6[A11[vi, vj] % m, vk]`):
    the condition, over the loops down to `lp`, under which some consumer runs in the
    iteration (their predicates' terms over those loops: a split's tail guard). The producer
    runs under it too; in an iteration no consumer runs, its bounds would read past the index
    buffer (`A11[vi, 4]` of 4 columns). Empty when the bounds read nothing or a consumer always
    runs."""
    if not any(_reads_buffer(b) for dims in need.values() for d in dims if d for b in d):
        return []
    alternatives: list[PrimExpr] = []
    for p in partners:
        inner = set(_inner_dom(p, lp))
        terms = [c for c in conjuncts(p.realize.predicate) if not is_const_int(c)
                 and not used_vars(c) & inner]
        if not terms:
            return []
        alternatives.append(and_all(terms, p.realize.predicate))
    out = alternatives[0]
    for a in alternatives[1:]:
        out = binop("or", out, a)
    return [out]


def _reads_buffer(e: PrimExpr) -> bool:
    """Whether `e` loads from a buffer."""
    found: list[bool] = []
    post_order_visit(e, lambda n: found.append(True) if isinstance(n, BufferLoad) else None)
    return bool(found)


def _original_range(iv: IterVar, value: PrimExpr, own: list[For], an: Analyzer) -> Bounds:
    """The values the binding took per iteration of the loops the block keeps: relaxed over
    the block's own loops (the ones the move removes), within the variable's domain."""
    dom = {x.loop_var: loop_bounds(x.min, x.extent) for x in own}
    full = (iv.dom.min, an.simplify(loop_bounds(iv.dom.min, iv.dom.extent)[1]))
    r = relax(value, dom)
    if r is None:
        return full
    return intersect_bounds([(an.simplify(r[0]), an.simplify(r[1])), full], an)


def _over_iter_vars(c: PrimExpr, own: set[Var], bindings: list[tuple[Var, Linear]]
                    ) -> PrimExpr | None:
    """A comparison over the removed loops rewritten over iteration variables by subtracting
    multiples of the bindings (`i_0 * 32 + i_1 < 100` with vi = i_0 * 32 + i_1: `vi < 100`)."""
    if not (isinstance(c, BinOp) and c.op in ("lt", "le", "gt", "ge", "eq", "ne")
            and is_index_dtype(c.a.dtype) and c.a.dtype == c.b.dtype):
        return None
    lin = to_linear(c.a)
    lin.add(to_linear(c.b), -1)
    for _ in range(4 * (len(bindings) + 1)):
        step = next(((atom, coef, var, bl) for atom, coef in lin.terms.items()
                     if atom in own for var, bl in bindings
                     if bl.terms.get(atom) and coef % bl.terms[atom] == 0), None)
        if step is None:
            break
        atom, coef, var, bl = step
        k = coef // bl.terms[atom]
        lin.add(bl, -k)
        lin.add_term(var, k)
    if any(uses_any(atom, own) for atom in lin.terms):
        return None
    k = lin.const
    lin.const = 0
    return binop(c.op, from_linear(lin), const(-k, lin.dtype))


def _carried_predicate(prim: str, br: BlockRealize, own: list[For]) -> list[PrimExpr]:
    """The conjuncts of the block's predicate that the move must keep, over its iteration
    variables where they used the loops the move removes (a diagnostic when they can't be)."""
    own_vars = {x.loop_var for x in own}
    bindings = [(iv.var, to_linear(v)) for iv, v in zip(br.block.iter_vars, br.iter_values)
                if is_index_dtype(v.dtype)]
    out: list[PrimExpr] = []
    for c in conjuncts(br.predicate):
        if is_const_int(c, 1):
            continue
        if not uses_any(c, own_vars):
            out.append(c)
            continue
        r = _over_iter_vars(c, own_vars, bindings)
        if r is None:
            raise ScheduleError(f"{prim}: the predicate {print_node(c)} of block "
                                f"\"{br.block.name}\" cannot be written over its iteration "
                                f"variables, so it cannot move with the block")
        out.append(r)
    return out


def _strip(e: PrimExpr, op: str, lvars: set[Var], out: list[PrimExpr]) -> PrimExpr:
    """`e` without clamps (`op`) by bounds that use none of `lvars`; those bounds go to out."""
    while isinstance(e, BinOp) and e.op == op:
        if not uses_any(e.b, lvars):
            out.append(e.b)
            e = e.a
        elif not uses_any(e.a, lvars):
            out.append(e.a)
            e = e.b
        else:
            break
    return e


def _loop_domain(rng: Bounds, bound: Bounds, lvars: set[Var], an: Analyzer
                 ) -> tuple[Bounds, list[PrimExpr], list[PrimExpr]] | None:
    """TVM's choice of loop range for a moved block's variable: the derived range `rng`
    (clamps by fixed bounds taken out), checked against `bound` (what the variable took
    before) with predicates where the loop may pass it; the bound itself when the range
    covers it, or their intersection when that is constant. None: no constant extent."""
    lowers, uppers = [bound[0]], [bound[1]]
    lo, hi = _strip(rng[0], "max", lvars, lowers), _strip(rng[1], "min", lvars, uppers)
    lo, hi = an.simplify(lo), an.simplify(hi)
    if prove_le(lo, bound[0], an) and prove_le(bound[1], hi, an):
        return (an.simplify(bound[0]), an.simplify(bound[1])), [], []
    inter = intersect_bounds([rng, bound], an)
    inter = (an.simplify(inter[0]), an.simplify(inter[1]))
    if const_diff(inter[1], inter[0], an) is not None:
        return inter, [], []
    if const_diff(hi, lo, an) is None:
        return None
    return (lo, hi), lowers, uppers


def _new_nest(prim: str, br: BlockRealize, need: dict[Buffer, list[Bounds | None]],
              own: list[For], new_loops: list[For], lpath: Path, an: Analyzer,
              preserve_unit_loops: bool, reverse: bool, idle: list[PrimExpr]) -> Stmt:
    """The moved block under new loops `ax0, ax1, ...` over its derived domain (and, from
    `idle`, only in iterations where a consumer runs)."""
    blk = br.block
    doms = solve_domains(prim, blk, need, an, reverse)
    origs = {iv.var: _original_range(iv, v, own, an)
             for iv, v in zip(blk.iter_vars, br.iter_values)}
    ranges = {v: doms.get(v, origs[v]) for v in origs}
    if reverse:
        check_exactly_once(prim, br, ranges, origs, new_loops, an)
    kept = _carried_predicate(prim, br, own)
    loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    guards: list[PrimExpr] = []
    clamped: dict[Var, Bounds] = {}
    lvars = {x.loop_var for x in lpath if isinstance(x, For)}
    for iv in blk.iter_vars:
        dt = iv.var.dtype
        clamped[iv.var] = intersect_bounds([ranges[iv.var], origs[iv.var]], an)
        chosen = _loop_domain(ranges[iv.var], origs[iv.var], lvars, an)
        if chosen is None:
            lo, hi = (an.simplify(x) for x in clamped[iv.var])
            lowers, uppers = [], []
        else:
            (lo, hi), lowers, uppers = chosen
        extent = an.simplify(binop("add", binop("sub", hi, lo), 1))
        unit = is_const_int(extent, 1) and not preserve_unit_loops
        ax = Var(f"ax{len(loops)}", dt)
        lo_v = lo if lo.dtype == dt else cast(dt, lo)  # the binding in the variable's dtype
        if unit:
            value = an.simplify(lo_v)
        elif is_const_int(lo, 0):
            value = ax
        else:
            value = an.simplify(binop("add", lo_v, ax))
        if not isinstance(extent, IntImm) and not uses_any(extent, lvars) and \
                not lowers and not uppers:
            # a symbolic extent the same in every iteration (a whole row of n)
            extent = extent if extent.dtype == dt else cast(dt, extent)
        elif not isinstance(extent, IntImm):
            bound = min_bound(extent_upper_bound(lo, hi, an),
                              div_extent_bound(without_clamps(lo, "max", lvars),
                                               without_clamps(hi, "min", lvars), an))
            if bound is None:
                raise ScheduleError(f"{prim}: the range of {iv.var.name} of block "
                                    f"\"{blk.name}\" has no constant bound")
            guards.append(binop("lt", ax, extent))
            extent = const(bound, dt)
        elif extent.dtype != dt:
            extent = const(extent.value, dt)  # the loop's extent in its variable's dtype
        with an.scope():
            an.bind(ax, (const(0, dt), binop("sub", extent, const(1, dt))))
            for c in [binop("ge", value, x) for x in lowers] + \
                    [binop("lt", value, an.simplify(binop("add", x, 1))) for x in uppers]:
                if not an.can_prove(c) and not any(same_expr(c, g) for g in guards):
                    guards.append(c)
        if not unit:
            loops.append((ax, extent))
        values.append(value)
    with an.scope():
        for v, b in clamped.items():
            an.bind(v, b)
        kept = [c for c in kept if not an.can_prove(c)]
    vmap = {iv.var: val for iv, val in zip(blk.iter_vars, values)}
    pred = and_all(idle + guards + [substitute(c, vmap) for c in kept], br.predicate)
    body: Stmt = BlockRealize(tuple(values), pred, blk, span=br.span)
    for ax, extent in reversed(loops):
        body = For(ax, const(0, ax.dtype), extent, ForKind.SERIAL, body)
    return body
