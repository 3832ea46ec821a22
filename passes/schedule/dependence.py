"""Dependences between blocks, from their read and write regions.

Blocks of one scope (the blocks directly under a scope block, not inside a nested one) are
related by buffers: a producer writes a buffer another block (a consumer) reads. Loop
transformations ask whether a dependence crosses iterations of a loop. Within one block, TVM's
rule applies: a loop bound only to spatial iteration variables carries no dependence, since a
block's instances for different spatial values write different data. Between two blocks, the
region one accesses in an iteration of the loop (relaxed over the loops inside it) must lie in
the region the other writes in that same iteration; then the dependence stays inside the
iteration, whatever the order or parallelism of the iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.ir.analysis.access import binding_map, effective_regions
from tirc.ir.analysis.regions import Bounds, loop_bounds, relax_region, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import is_index_dtype, to_linear
from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.expr import PrimExpr, Var, binop
from tirc.ir.stmt import Block, BlockRealize, For, IterKind, Stmt
from tirc.ir.visitor import substitute
from tirc.passes.schedule.state import ScheduleError
from tirc.passes.schedule.tree import Path, children, scope_index

KIND_NAMES = {IterKind.SPATIAL: "spatial", IterKind.REDUCE: "reduction",
              IterKind.OPAQUE: "opaque"}


@dataclass
class BlockSite:
    """A block realize and its path from the function body (inclusive)."""

    path: Path

    @property
    def realize(self) -> BlockRealize:
        r = self.path[-1]
        assert isinstance(r, BlockRealize)
        return r

    @property
    def block(self) -> Block:
        return self.realize.block

    @property
    def name(self) -> str:
        return self.block.name

    def regions(self) -> tuple[list[BufferRegion], list[BufferRegion]]:
        return effective_regions(self.block)

    def reads(self) -> list[Buffer]:
        return [r.buffer for r in self.regions()[0]]

    def writes(self) -> list[Buffer]:
        return [r.buffer for r in self.regions()[1]]


def child_sites(path: Path) -> list[BlockSite]:
    """Blocks under the last node of `path`, not inside a nested block, in program order."""
    out: list[BlockSite] = []

    def go(p: Path) -> None:
        for c in children(p[-1]):
            cp = p + (c,)
            if isinstance(c, BlockRealize):
                out.append(BlockSite(cp))
            else:
                go(cp)

    go(path)
    return out


def scope_path(path: Path) -> Path:
    """The path to the scope of the node at `path`: its nearest enclosing block, or the
    function body (as a one-element path, whose child list is the body itself)."""
    k = scope_index(path)
    return path[:k + 1] if k >= 0 else ()


def scope_sites(root: Stmt, path: Path) -> list[BlockSite]:
    """Every block of the scope the node at `path` is in."""
    sp = scope_path(path)
    if sp:
        return child_sites(sp)
    if isinstance(root, BlockRealize):
        return [BlockSite((root,))]
    return [BlockSite(p) for p in _top_sites(root)]


def _top_sites(root: Stmt) -> list[Path]:
    out: list[Path] = []

    def go(p: Path) -> None:
        if isinstance(p[-1], BlockRealize):
            out.append(p)
            return
        for c in children(p[-1]):
            go(p + (c,))

    go((root,))
    return out


def producers(site: BlockSite, sites: list[BlockSite]) -> list[BlockSite]:
    reads = set(site.reads())
    return [s for s in sites if s.block is not site.block and reads & set(s.writes())]


def consumers(site: BlockSite, sites: list[BlockSite]) -> list[BlockSite]:
    writes = set(site.writes())
    return [s for s in sites if s.block is not site.block and writes & set(s.reads())]


def check_iter_kinds(prim: str, sites: list[BlockSite], loop: For, allow_reduce: bool) -> None:
    """The loop may feed only spatial (or, when allowed, reduction) iteration variables."""
    for site in sites:
        for iv, value in zip(site.block.iter_vars, site.realize.iter_values):
            if not uses_any(value, {loop.loop_var}):
                continue
            if iv.kind == IterKind.SPATIAL or (allow_reduce and iv.kind == IterKind.REDUCE):
                continue
            raise ScheduleError(
                f"{prim}: loop {loop.loop_var.name} carries a dependence (it is bound to "
                f"{KIND_NAMES[iv.kind]} variable {iv.var.name} of block \"{site.name}\")")


def _site_regions(site: BlockSite, top: For, skip: Var, an: Analyzer
                  ) -> tuple[dict[Buffer, list[list[Bounds | None]]],
                             dict[Buffer, list[list[Bounds | None]]]]:
    """The site's regions per iteration of `skip`: relaxed over its loops from `top` down."""
    loops: list[For] = []
    seen = False
    for s in site.path[:-1]:
        if s is top:
            seen = True
        if seen and isinstance(s, For):
            loops.append(s)
    dom = {lp.loop_var: loop_bounds(lp.min, lp.extent) for lp in loops if lp.loop_var is not skip}
    bmap = binding_map(site.realize)
    reads, writes = site.regions()
    out: tuple[dict, dict] = ({}, {})
    for table, regs in zip(out, (reads, writes)):
        for r in regs:
            region = substitute(r.region, bmap)
            table.setdefault(r.buffer, []).append(relax_region(region, dom, an))
    return out


def _contained(inner: list[Bounds | None], outer: list[Bounds | None], an: Analyzer) -> bool:
    for a, w in zip(inner, outer):
        if a is None or w is None:
            return False
        if not (an.can_prove(binop("ge", a[0], w[0])) and an.can_prove(binop("le", a[1], w[1]))):
            return False
    return True


def _coef(e: PrimExpr, v: Var) -> int | None:
    """The coefficient of `v` in `e` when `e` is linear in it (None otherwise)."""
    lin = to_linear(e) if is_index_dtype(e.dtype) else None
    if lin is None:
        return None
    coef = 0
    for atom, c in lin.terms.items():
        if atom is v:
            coef = c
        elif uses_any(atom, {v}):
            return None
    return coef


def _separated(ar: list[Bounds | None], wr: list[Bounds | None], v: Var, an: Analyzer) -> bool:
    """Some dimension keeps the two regions apart in different iterations of `v`: both
    move by the same step `a` per iteration and each reaches less than |a| past the other."""
    for a, w in zip(ar, wr):
        if a is None or w is None:
            continue
        coefs = {_coef(x, v) for x in (a[0], a[1], w[0], w[1])}
        if len(coefs) != 1:
            continue
        step = coefs.pop()
        if not step:
            continue
        reach = abs(step) - 1
        if an.can_prove(binop("le", a[1] - w[0], reach)) and \
                an.can_prove(binop("le", w[1] - a[0], reach)):
            return True
    return False


def check_not_carried(prim: str, sites: list[BlockSite], top: For, loops: list[For],
                      an: Analyzer) -> None:
    """Dependences between different blocks under `top` stay within one iteration of each
    of `loops` (whose ranges, and those of the loops above, `an` knows)."""
    for lp in loops:
        with an.scope():
            an.bind(lp.loop_var, loop_bounds(lp.min, lp.extent))
            tables = [_site_regions(s, top, lp.loop_var, an) for s in sites]
            for wi, w in enumerate(sites):
                for buf, w_regs in tables[wi][1].items():
                    for ai, a in enumerate(sites):
                        if ai == wi:
                            continue
                        a_regs = tables[ai][0].get(buf, []) + tables[ai][1].get(buf, [])
                        for ar in a_regs:
                            if not any(_contained(ar, wr, an) or
                                       _separated(ar, wr, lp.loop_var, an) for wr in w_regs):
                                first, second = (w, a) if wi < ai else (a, w)
                                raise ScheduleError(
                                    f"{prim}: block \"{second.name}\" depends on block "
                                    f"\"{first.name}\" (buffer {buf.name}) across iterations "
                                    f"of loop {lp.loop_var.name}")


def bind_outer_loops(an: Analyzer, path: Path) -> None:
    """Tell `an` the ranges of every loop on `path` (outer loops are symbols to relax with)."""
    for s in path:
        if isinstance(s, For):
            an.bind(s.loop_var, loop_bounds(s.min, s.extent))
