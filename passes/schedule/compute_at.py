"""compute_at and reverse_compute_at: move a block under a loop of another block's nest.

compute_at moves a producer under a loop of its consumers: per iteration of the loop, the
consumers under it need some region of each buffer the producer writes (their read regions,
relaxed over the loops inside the target loop, found with the arith analyzer). The producer's
iteration domain is then chosen so that its write region covers that: a write index `v + c`
gives `v` the needed range shifted by `-c`; a variable not in the write region keeps its whole
domain. New loops `ax0, ax1, ...` range over the new domain, placed before the first consumer
under the loop. reverse_compute_at is the mirror image: a consumer moves under a loop of its
producers and runs, per iteration, on the region they produced there, after the last of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import to_linear
from tirc.ir.buffer import Buffer, Range
from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var, binop, const, is_const_int
from tirc.ir.stmt import BlockRealize, For, ForKind, IterKind, SeqStmt, Stmt, seq
from tirc.ir.structural import structural_equal
from tirc.ir.visitor import substitute
from tirc.passes.schedule.access import effective_regions
from tirc.passes.schedule.dependence import (
    BlockSite,
    bind_outer_loops,
    consumers,
    producers,
    scope_path,
    scope_sites,
)
from tirc.passes.schedule.regions import (
    Bounds,
    const_diff,
    extent_upper_bound,
    free_vars,
    intersect_bounds,
    loop_bounds,
    relax_region,
    union_bounds,
)
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.schedule.tree import loop_path, simplify_bindings


def compute_at(s: ScheduleState, block: Any, loop: Any,
               preserve_unit_loops: bool = False) -> None:
    """Move producer `block` under `loop`, computing per iteration what consumers need."""
    _move(s, block, loop, preserve_unit_loops, reverse=False)


def reverse_compute_at(s: ScheduleState, block: Any, loop: Any,
                       preserve_unit_loops: bool = False) -> None:
    """Move consumer `block` under `loop`, consuming per iteration what producers made."""
    _move(s, block, loop, preserve_unit_loops, reverse=True)


def _move(s: ScheduleState, block: Any, loop: Any, preserve_unit_loops: bool,
          reverse: bool) -> None:
    prim = "reverse_compute_at" if reverse else "compute_at"
    bpath, br, blk = s.block(block, prim)
    lpath, lp = s.loop(loop, prim)
    name, lname = blk.name, lp.loop_var.name
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
    kids = list(lp.body.seq) if isinstance(lp.body, SeqStmt) else [lp.body]
    pos = _insertion_point(prim, kids, me, sites, partners, reverse)
    an = Analyzer()
    bind_outer_loops(an, lpath)
    need = _needed_regions(me, partners, lp, an, reverse)
    nest = _new_nest(prim, br, need, an, preserve_unit_loops, reverse)
    s.replace(bpath, None, prim)
    new_lpath = loop_path(s.body, lp.loop_var)
    assert new_lpath is not None
    cur = new_lpath[-1]
    assert isinstance(cur, For)
    cur_kids = list(cur.body.seq) if isinstance(cur.body, SeqStmt) else [cur.body]
    body = seq(*cur_kids[:pos], simplify_bindings(nest, an), *cur_kids[pos:])
    s.replace(new_lpath, dataclasses.replace(cur, body=body), prim)


def _contains(kid: Stmt, site: BlockSite) -> bool:
    return any(x is kid for x in site.path)


def _insertion_point(prim: str, kids: list[Stmt], me: BlockSite, sites: list[BlockSite],
                     partners: list[BlockSite], reverse: bool) -> int:
    """Before the first consumer (compute_at) or after the last producer (reverse)."""
    holding = [k for k, kid in enumerate(kids) if any(_contains(kid, p) for p in partners)]
    pos = holding[-1] + 1 if reverse else holding[0]
    others = consumers(me, sites) if reverse else producers(me, sites)
    for o in others:
        for k, kid in enumerate(kids):
            if _contains(kid, o) and ((k < pos) if reverse else (k >= pos)):
                what = "consumer" if reverse else "producer"
                raise ScheduleError(f"{prim}: {what} block \"{o.name}\" of block "
                                    f"\"{me.name}\" is in the way under the loop")
    return pos


def _needed_regions(me: BlockSite, partners: list[BlockSite], lp: For, an: Analyzer,
                    reverse: bool) -> dict[Buffer, list[Bounds | None]]:
    """Per buffer the block writes (reads, when reverse), the region the partners under the
    loop read (write) in one iteration of it, relaxed over the loops inside it."""
    mine = set(me.reads()) if reverse else set(me.writes())
    need: dict[Buffer, list[list[Bounds | None]]] = {}
    for p in partners:
        inside = False
        dom: dict[Var, Bounds] = {}
        for x in p.path[:-1]:
            if x is lp:
                inside = True
                continue
            if inside and isinstance(x, For):
                dom[x.loop_var] = loop_bounds(x.min, x.extent)
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


def _iter_domains(prim: str, br: BlockRealize, need: dict[Buffer, list[Bounds | None]],
                  an: Analyzer, reverse: bool) -> dict[Var, Bounds]:
    """The range each iteration variable must cover so the block provides what is needed:
    within one region the ranges its dimensions imply intersect; across regions they unite."""
    blk = br.block
    ivars = {iv.var: iv for iv in blk.iter_vars}
    reads, writes = effective_regions(blk)
    found: dict[Var, list[Bounds]] = {}
    for r in (reads if reverse else writes):
        if r.buffer in need:
            for v, b in _region_ranges(prim, blk, r, need[r.buffer], ivars, an, reverse).items():
                found.setdefault(v, []).append(b)
    out: dict[Var, Bounds] = {}
    for v, items in found.items():
        if reverse and len(items) > 1:
            for a in items[1:]:
                if const_diff(a[0], items[0][0], an) != 0 or const_diff(a[1], items[0][1], an) != 0:
                    raise ScheduleError(f"{prim}: the producers make different ranges of "
                                        f"{v.name} of block \"{blk.name}\" per iteration")
        out[v] = union_bounds(items, an)
    return out


def _region_ranges(prim: str, blk: Any, r: Any, need: list[Bounds | None],
                   ivars: dict[Var, Any], an: Analyzer, reverse: bool) -> dict[Var, Bounds]:
    """Per iteration variable, the range one provided region implies (dimensions intersect)."""
    dims = []
    for k, (rng, nb) in enumerate(zip(r.region, need)):
        vs = [x for x in free_vars(rng.min) if x in ivars]
        if not vs:
            continue
        where = f"dimension {k} of its region of {r.buffer.name}"
        if len(vs) > 1:
            raise ScheduleError(f"{prim}: cannot derive the iteration domain of block "
                                f"\"{blk.name}\": {where} uses several iteration variables")
        if not is_const_int(rng.extent, 1):
            raise ScheduleError(f"{prim}: block \"{blk.name}\" accesses a window of "
                                f"{r.buffer.name} in dimension {k}; it can only move when each "
                                f"access is one element")
        if nb is None:
            raise ScheduleError(f"{prim}: cannot bound the region of {r.buffer.name} needed in "
                                f"dimension {k}")
        if reverse and ivars[vs[0]].kind != IterKind.SPATIAL:
            raise ScheduleError(f"{prim}: block \"{blk.name}\" would run part of the range "
                                f"of its reduction variable {vs[0].name} per iteration")
        dims.append((vs[0], rng.min, nb, where))
    implied: dict[Var, list[Bounds]] = {}
    siblings = [(x, b) for _, x, b, _ in dims]
    for v, e, nb, where in dims:
        b = _invert(e, v, nb, siblings, an, allow_divmod=not reverse)
        if b is False:
            forms = "" if reverse else ", or its floor division or modulo by a constant"
            raise ScheduleError(f"{prim}: cannot derive the iteration domain of block "
                                f"\"{blk.name}\": {where} is not an iteration variable plus a "
                                f"constant{forms}")
        if b is not None and b is not True:
            implied.setdefault(v, []).append(b)
    return {v: intersect_bounds(items, an) for v, items in implied.items()}


def _invert(e: PrimExpr, v: Var, nb: Bounds, siblings: list[tuple[PrimExpr, Bounds]],
            an: Analyzer, allow_divmod: bool) -> Any:
    """The range of `v` whose image under `e` lies in `nb` (None: any; False: unknown)."""
    lo, hi = nb
    lin = to_linear(e) if e.dtype.is_int else None
    if lin is not None and list(lin.terms.items()) == [(v, 1)]:
        c = const(lin.const, lo.dtype)
        return an.simplify(lo - c), an.simplify(hi - c)
    if not (allow_divmod and isinstance(e, BinOp) and isinstance(e.b, IntImm)
            and e.b.value > 0 and e.op in ("floordiv", "floormod")):
        return False
    k = e.b.value
    if e.op == "floordiv":
        return _invert(e.a, v, (an.simplify(lo * k), an.simplify(hi * k + (k - 1))), siblings,
                       an, allow_divmod)
    if const_diff(lo, const(0, lo.dtype), an) == 0 and \
            const_diff(hi, const(k - 1, hi.dtype), an) == 0:
        return None
    for x, (qlo, qhi) in siblings:
        if isinstance(x, BinOp) and x.op == "floordiv" and is_const_int(x.b, k) and \
                structural_equal(x.a, e.a) and const_diff(qhi, qlo, an) == 0:
            return _invert(e.a, v, (an.simplify(qlo * k + lo), an.simplify(qlo * k + hi)),
                           siblings, an, allow_divmod)
    return False


def _clamp(lo: PrimExpr, hi: PrimExpr, dom: Range, an: Analyzer) -> Bounds:
    dhi = an.simplify(loop_bounds(dom.min, dom.extent)[1])
    return intersect_bounds([(lo, hi), (dom.min, dhi)], an)


def _new_nest(prim: str, br: BlockRealize, need: dict[Buffer, list[Bounds | None]],
              an: Analyzer, preserve_unit_loops: bool, reverse: bool) -> Stmt:
    blk = br.block
    doms = _iter_domains(prim, br, need, an, reverse)
    loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    guards: list[PrimExpr] = []
    for iv in blk.iter_vars:
        dt = iv.var.dtype
        if iv.var in doms:
            lo, hi = _clamp(*doms[iv.var], iv.dom, an)
        else:
            lo, hi = iv.dom.min, an.simplify(loop_bounds(iv.dom.min, iv.dom.extent)[1])
        extent = an.simplify(binop("add", binop("sub", hi, lo), 1))
        if is_const_int(extent, 1) and not preserve_unit_loops:
            values.append(lo)
            continue
        ax = Var(f"ax{len(loops)}", dt)
        if not isinstance(extent, IntImm):
            bound = extent_upper_bound(lo, hi, an)
            if bound is None:
                raise ScheduleError(f"{prim}: the range of {iv.var.name} of block "
                                    f"\"{blk.name}\" has no constant bound")
            guards.append(binop("lt", ax, extent))
            extent = const(bound, dt)
        loops.append((ax, extent))
        values.append(an.simplify(binop("add", lo, ax)) if not is_const_int(lo, 0) else ax)
    pred: PrimExpr = IntImm(1, br.predicate.dtype)
    for g in guards:
        pred = g if is_const_int(pred, 1) else binop("and", pred, g)
    body: Stmt = BlockRealize(tuple(values), pred, blk, span=br.span)
    for ax, extent in reversed(loops):
        body = For(ax, const(0, ax.dtype), extent, ForKind.SERIAL, body)
    return body

