"""blockize: wrap the subtree under a loop into an outer block `<name>_o`.

Each binding of the inner block splits into a part over the loops outside `loop` and a part
over the loops inside it: `v = O + I` with `I` in `[0, K)` and `O` a multiple of `K`. The outer
block gets an iteration variable `v_o = O / K` (domain extent / K) and the inner binding
becomes `v_o * K + I`; a binding that uses no inner loop moves whole to the outer block (K = 1),
and one that uses only inner loops stays inside. The outer block's regions are the inner
block's, relaxed over the inner loops. When a reduction variable is split this way, the init
moves to the outer block as a loop nest over the inner spatial loops, like TVM's. A guard
(`T.where`) over outer loops only moves to the outer block; one that mixes inner and outer loops
stays inside, and the outer block (and the init nest, taken out of the inner loops) is
guarded to keep its bindings in their domains (domain_guards.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.analysis.access import detect_regions
from tirc.ir.analysis.regions import and_all, conjuncts, free_vars, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import Linear, from_linear, to_linear
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var, const, is_const_int
from tirc.ir.stmt import Block, BlockRealize, For, IterKind, IterVar, SeqStmt, Stmt
from tirc.ir.visitor import substitute
from tirc.passes.schedule.dependence import bind_outer_loops, child_sites
from tirc.passes.schedule.domain_guards import domain_guards
from tirc.passes.schedule.loops import drop_unit_iters
from tirc.passes.schedule.reduction import hoisted_predicate, init_substitution
from tirc.passes.schedule.state import BlockRV, LoopRV, ScheduleError, ScheduleState
from tirc.passes.schedule.tree import Path


def _split_binding(prim: str, iv: IterVar, e: PrimExpr, inner: set[Var], an: Analyzer
                   ) -> tuple[PrimExpr | None, int, PrimExpr]:
    """(outer quotient O / K or None, K, inner part I) of a binding `e = O + I`."""
    e = an.simplify(e)
    if not uses_any(e, inner):
        return e, 1, const(0, e.dtype)
    lin = to_linear(e)
    o = Linear(lin.dtype, {}, lin.const)
    i = Linear(lin.dtype, {}, 0)
    for atom, coef in lin.terms.items():
        uses_inner = uses_any(atom, inner)
        if uses_inner and _outer_vars(atom, inner):
            raise ScheduleError(f"{prim}: the binding of {iv.var.name} mixes loops inside "
                                f"and outside the blockized loop")
        (i if uses_inner else o).add_term(atom, coef)
    inner_e = from_linear(i)
    lo, hi = an.bound_of(inner_e)
    if lo is None or hi is None:
        raise ScheduleError(f"{prim}: cannot bound the inner part of the binding of "
                            f"{iv.var.name}")
    if lo != 0:
        o.const += lo
        i.const -= lo
        inner_e = from_linear(i)
        hi -= lo
    k = hi + 1
    if not o.terms and isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value <= k and \
            o.const == 0:
        return None, k, inner_e
    if o.const % k or any(c % k for c in o.terms.values()):
        raise ScheduleError(f"{prim}: the binding of {iv.var.name} does not divide into "
                            f"tiles of {k} at the blockized loop")
    quotient = Linear(o.dtype, {a: c // k for a, c in o.terms.items()}, o.const // k)
    return from_linear(quotient), k, inner_e


def _outer_vars(e: Any, inner: set[Var]) -> list[Var]:
    return [v for v in free_vars(e) if v not in inner]


def blockize(s: ScheduleState, target: Any, preserve_unit_iters: bool = True) -> BlockRV:
    """Make the loop `target` and everything under it the body of a new outer block. With
    `preserve_unit_iters=False` (TVM's meaning) the outer block gets no iteration variable of
    extent 1 and the bindings don't mention unit loops."""
    prim = "blockize"
    if not isinstance(preserve_unit_iters, bool):
        raise ScheduleError(f"{prim}: preserve_unit_iters must be True or False")
    lpath, lp = s.loop(target, prim)
    name = blockize_at(s, lpath, lp, prim, preserve_unit_iters)
    return s.block_rv(name)


def blockize_at(s: ScheduleState, lpath: Path, lp: For, prim: str,
                preserve_unit_iters: bool = True) -> str:
    """Blockize the loop at `lpath`; returns the outer block's name."""
    if not preserve_unit_iters:
        s.replace(lpath, drop_unit_iters(lpath, lp), prim)
        lpath = s.loop_path(LoopRV(lp.loop_var), prim)
        lp = lpath[-1]  # type: ignore[assignment]
    sites = child_sites(lpath)
    if len(sites) != 1:
        raise ScheduleError(f"{prim}: loop {lp.loop_var.name} must hold exactly one block, "
                            f"it holds {len(sites)}")
    site = sites[0]
    br, blk = site.realize, site.block
    inner_loops = [x for x in site.path[len(lpath) - 1:-1] if isinstance(x, For)]
    inner = {x.loop_var for x in inner_loops}
    an = Analyzer()
    bind_outer_loops(an, site.path[:-1])
    outer_ivs: list[IterVar] = []
    outer_values: list[PrimExpr] = []
    inner_values: list[PrimExpr] = []
    split_reduce = False
    for iv, e in zip(blk.iter_vars, br.iter_values):
        quotient, k, inner_e = _split_binding(prim, iv, e, inner, an)
        if quotient is None:
            inner_values.append(e)
            split_reduce |= iv.kind == IterKind.REDUCE
            continue
        ext = iv.dom.extent
        if k > 1:
            if not (isinstance(ext, IntImm) and ext.value % k == 0):
                raise ScheduleError(f"{prim}: the domain of {iv.var.name} is not a multiple "
                                    f"of the tile {k}")
            ext = const(ext.value // k, ext.dtype)
            split_reduce |= iv.kind == IterKind.REDUCE
        dom_min = iv.dom.min if k == 1 else const(0, iv.var.dtype)
        if not preserve_unit_iters and is_const_int(ext, 1):
            inner_values.append(dom_min if k == 1 else inner_e)
            continue
        vo = Var(f"{iv.var.name}_o", iv.var.dtype)
        outer_ivs.append(IterVar(vo, Range(dom_min, ext), iv.kind))
        outer_values.append(quotient)
        inner_values.append(vo if k == 1 else an.simplify(vo * k + inner_e))
    init = blk.init
    inner_blk = blk
    outer_init = None
    if init is not None and split_reduce:
        outer_init = _init_nest(s, br, inner_loops, inner_values)
        inner_blk = dataclasses.replace(blk, init=None)
    # Guards on outer loops only (a split's tail) move to the outer block.
    outer_pred = [c for c in conjuncts(br.predicate) if not uses_any(c, inner)]
    inner_pred = [c for c in conjuncts(br.predicate) if uses_any(c, inner)]
    if inner_pred:
        # A guard mixing inner and outer loops stays inside, so an outer instance may fall
        # outside the domain; every inner instance of it is then predicated off, so skipping
        # it keeps the meaning.
        outer_pred += domain_guards(outer_ivs, outer_values, outer_pred, an)
    new_inner = dataclasses.replace(br, iter_values=tuple(inner_values), block=inner_blk,
                                    predicate=and_all(inner_pred, br.predicate))
    body = _replace_realize(lp, br, new_inner)
    oname = s.unique_block_name(f"{blk.name}_o")
    outer = Block(oname, tuple(outer_ivs), (), (), body, init=outer_init)
    with an.scope():
        for iv in outer_ivs:
            an.bind(iv.var, iv.dom)
        reads, writes = detect_regions(outer, an)
    outer = dataclasses.replace(outer, reads=tuple(reads), writes=tuple(writes))
    realize = BlockRealize(tuple(outer_values), and_all(outer_pred, br.predicate), outer,
                           span=lp.span)
    s.replace(lpath, realize, prim)
    return oname


def _replace_realize(root: Stmt, old: BlockRealize, new: BlockRealize) -> Stmt:
    if root is old:
        return new
    if isinstance(root, For):
        return dataclasses.replace(root, body=_replace_realize(root.body, old, new))
    if isinstance(root, SeqStmt):
        return SeqStmt(tuple(_replace_realize(x, old, new) for x in root.seq), span=root.span)
    if hasattr(root, "body"):
        return dataclasses.replace(root, body=_replace_realize(root.body, old, new))  # type: ignore[call-arg]
    return root


def _init_nest(s: ScheduleState, br: BlockRealize, inner_loops: list[For],
               inner_values: list[PrimExpr]) -> Stmt:
    """The outer block's init: the inner spatial loops over a block running the init."""
    blk = br.block
    spatial = [(iv, v) for iv, v in zip(blk.iter_vars, inner_values)
               if iv.kind == IterKind.SPATIAL]
    copied = [x for x in inner_loops if uses_any([v for _, v in spatial], {x.loop_var})]
    loop_map = {x.loop_var: Var(x.loop_var.name + "_init", x.loop_var.dtype) for x in copied}
    var_map, matches = init_substitution(
        blk, {iv.var: Var(iv.var.name + "_init", iv.var.dtype) for iv, _ in spatial})
    ivars = tuple(IterVar(var_map[iv.var], iv.dom, iv.kind) for iv, _ in spatial)
    values = tuple(substitute(v, loop_map) for _, v in spatial)
    assert blk.init is not None
    init_blk = Block(s.unique_block_name(blk.name + "_init"), ivars, (),
                     tuple(substitute(r, var_map) for r in blk.writes),
                     substitute(blk.init, var_map), match_buffers=matches)
    copied_ids = {id(x) for x in copied}
    inner_pred = and_all([c for c in conjuncts(br.predicate)
                          if uses_any(c, {x.loop_var for x in inner_loops})], br.predicate)
    an = Analyzer()
    bind_outer_loops(an, copied)
    pred = substitute(hoisted_predicate(inner_pred, [x for x in inner_loops
                                                  if id(x) not in copied_ids],
                                     list(ivars), [v for _, v in spatial], an), loop_map)
    nest: Stmt = BlockRealize(values, pred, init_blk)
    for x in reversed(copied):
        nest = dataclasses.replace(x, loop_var=loop_map[x.loop_var], body=nest)
    return nest
