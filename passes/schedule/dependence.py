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

from collections.abc import Callable

from tirc.ir.analysis.access import binding_map, effective_regions
from tirc.ir.analysis.regions import (
    Bounds,
    iterations_disjoint,
    loop_bounds,
    relax_region,
    uses_any,
)
from tirc.ir.arith import Analyzer
from tirc.ir.arith.linear import Linear, exact_linear, to_linear
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BinOp, IntImm, PrimExpr, Var, binop, is_const_int
from tirc.ir.lean_dataclass import dataclass
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


def check_init_first(prim: str, sites: list[BlockSite], moved: list[For]) -> None:
    """No moved loop feeds both a spatial and a reduction variable of a block with an init:
    the init runs where the reduction variables are at their start, and in another order of
    such a loop an instance could update before it (after fuse(i, k) and a split, the parts
    reordered: the init overwrote partial sums)."""
    for site in sites:
        if site.block.init is None:
            continue
        for lp in moved:
            fed = {iv.kind: iv.var.name for iv, value in zip(site.block.iter_vars,
                                                             site.realize.iter_values)
                   if uses_any(value, {lp.loop_var})}
            if IterKind.SPATIAL in fed and IterKind.REDUCE in fed:
                raise ScheduleError(
                    f"{prim}: loop {lp.loop_var.name} feeds both spatial variable "
                    f"{fed[IterKind.SPATIAL]} and reduction variable {fed[IterKind.REDUCE]} of "
                    f"block \"{site.name}\", which has an init: moved, it could run an update "
                    f"before the init")


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
    lin = to_linear(e) if exact_linear(e) else None
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


def _sharing_sites(sites: list[BlockSite], within: bool = False) -> list[BlockSite]:
    """The sites, in order, that write a buffer another site accesses or access one another
    site writes: the only ones a dependence between blocks can involve (with `within`, also
    those reading a buffer they write)."""
    writers: dict[Buffer, set[int]] = {}
    users: dict[Buffer, set[int]] = {}
    keep: set[int] = set()
    for k, site in enumerate(sites):
        reads, writes = site.regions()
        for r in writes:
            writers.setdefault(r.buffer, set()).add(k)
        for r in (*reads, *writes):
            users.setdefault(r.buffer, set()).add(k)
        if within and {r.buffer for r in reads} & {r.buffer for r in writes}:
            keep.add(k)
    for buf, ws in writers.items():
        for w in ws:
            others = users[buf] - {w}
            if others:
                keep |= others | {w}
    return [site for k, site in enumerate(sites) if k in keep]


def check_not_carried(prim: str, sites: list[BlockSite], top: For, loops: list[For],
                      an: Analyzer, within: bool = False) -> None:
    """Dependences between different blocks under `top` stay within one iteration of each
    of `loops` (whose ranges, and those of the loops above, `an` knows). With `within`, so
    do a block's reads of a buffer it writes, where their bounds are known: a block whose
    instances read what other instances write breaks TensorIR's contract (spatial instances
    are independent), and running them at once would change what they read (the serial
    order is the interpreter's)."""
    sites = _sharing_sites(sites, within)
    if len(sites) < (1 if within else 2):
        return  # no block writes what another accesses: no dependence to carry
    for lp in loops:
        with an.scope():
            an.bind(lp.loop_var, loop_bounds(lp.min, lp.extent))
            tables = [_site_regions(s, top, lp.loop_var, an) for s in sites]
            for wi, w in enumerate(sites):
                for buf, w_regs in tables[wi][1].items():
                    for ai, a in enumerate(sites):
                        if ai == wi and not within:
                            continue
                        a_regs = tables[ai][0].get(buf, []) + (
                            tables[ai][1].get(buf, []) if ai != wi else [])
                        for ar in a_regs:
                            if ai == wi and (None in ar or any(None in wr for wr in w_regs)):
                                continue  # unknown bounds (a gather): left to the contract
                            if not any(_contained(ar, wr, an) or
                                       _separated(ar, wr, lp.loop_var, an) for wr in w_regs):
                                if ai == wi:
                                    raise ScheduleError(
                                        f"{prim}: block \"{a.name}\" reads elements of "
                                        f"{buf.name} that it writes in other iterations of "
                                        f"loop {lp.loop_var.name}")
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


def check_distinct_instances(prim: str, sites: list[BlockSite], loop: For,
                             an: Analyzer,
                             shared: Callable[[Buffer], bool] | None = None) -> None:
    """Different iterations of `loop` run different instances of every block under it: the
    values of the spatial variables it feeds, over the loops inside it, must be apart for
    each iteration (`vi = i + k` with `k` inside `i` reaches one element from two values of
    `i`, so two threads would write it). With `shared`, only blocks writing a buffer it
    calls shared are checked (the others write copies private to each iteration)."""
    v = loop.loop_var
    for site in sites:
        if shared is not None and not any(shared(r.buffer) for r in site.block.writes):
            continue
        inner: list[For] = []
        seen = False
        for s in site.path[:-1]:
            if s is loop:
                seen = True
            elif seen and isinstance(s, For):
                inner.append(s)
        dom = {x.loop_var: loop_bounds(x.min, x.extent) for x in inner}
        region: list[Bounds | None] = []
        for iv, value in zip(site.block.iter_vars, site.realize.iter_values):
            if iv.kind == IterKind.SPATIAL and uses_any(value, {v}):
                r = relax_region((Range(value, IntImm(1, value.dtype)),), dom, an)[0]
                region.append(r)
        if not region:
            continue
        with an.scope():
            an.bind(v, loop_bounds(loop.min, loop.extent))
            values = [value for iv, value in zip(site.block.iter_vars, site.realize.iter_values)
                      if iv.kind == IterKind.SPATIAL and uses_any(value, {v})]
            if not iterations_disjoint(loop, region, an) and \
                    not _recoverable(v, values, inner) and \
                    not _mixed_radix(loop, values, inner):
                bufs = [r.buffer.name for r in site.block.writes
                        if shared is not None and shared(r.buffer)]
                what = f", and would write {bufs[0]}, which they share" if bufs else ""
                raise ScheduleError(
                    f"{prim}: different iterations of loop {v.name} may run the same instance "
                    f"of block \"{site.name}\" (its bindings do not tell the iterations "
                    f"apart){what}")


def check_loop_used(prim: str, sites: list[BlockSite], loop: For,
                    shared: Callable[[Buffer], bool]) -> None:
    """Every block under `loop` that writes a `shared` buffer tells its iterations apart (a
    binding or its predicate uses the loop): otherwise each iteration runs the same instance,
    and two iterations at once write the same elements (a data race)."""
    v = loop.loop_var
    for site in sites:
        if uses_any(site.realize.predicate, {v}) or \
                any(uses_any(e, {v}) for e in site.realize.iter_values):
            continue
        for region in site.block.writes:
            if shared(region.buffer):
                raise ScheduleError(
                    f"{prim}: every iteration of loop {v.name} runs the same instance of "
                    f"block \"{site.name}\" (its bindings do not use the loop), so they all "
                    f"write {region.buffer.name} there")


def _linear_in_loops(e: PrimExpr) -> Linear | None:
    """`e` as a linear form whose atoms are variables, else None."""
    if not exact_linear(e):
        return None
    lin = to_linear(e)
    return lin if all(isinstance(a, Var) for a in lin.terms) else None


def _recovered(v: Var, values: list[PrimExpr], inner: list[For]) -> list[Linear]:
    """Linear forms of the loops that the values determine when the loops outside `v`'s are
    fixed: a linear value itself, or `X` from atoms `X // c` and `Y % c` (each a value's only
    part that varies with `v` or the loops inside it) where `X - Y` is a multiple of c (the
    split of a fused index, which the simplifier may have rewritten modulo c)."""
    varying = {v} | {x.loop_var for x in inner}
    out: list[Linear] = []
    atoms: list[PrimExpr] = []
    for e in values:
        lin = _linear_in_loops(e)
        if lin is not None:
            out.append(lin)
            continue
        if not exact_linear(e):
            continue
        full = to_linear(e)
        moving = [(a, k) for a, k in full.terms.items() if uses_any(a, varying)]
        if len(moving) == 1 and abs(moving[0][1]) == 1 and not isinstance(moving[0][0], Var):
            atoms.append(moving[0][0])
    divs = [(e.a, e.b.value) for e in atoms if isinstance(e, BinOp) and e.op == "floordiv"
            and isinstance(e.b, IntImm) and e.b.value > 0]
    mods = [(e.a, e.b.value) for e in atoms if isinstance(e, BinOp) and e.op == "floormod"
            and isinstance(e.b, IntImm) and e.b.value > 0]
    out += _digit_chains(atoms)
    for x, c in divs:
        lx = _linear_in_loops(x)
        if lx is None:
            continue
        for y, c2 in mods:
            ly = _linear_in_loops(y)
            if c2 != c or ly is None:
                continue
            diff = lx.copy()
            diff.add(ly, -1)
            if diff.const % c == 0 and all(k % c == 0 for k in diff.terms.values()):
                out.append(lx)
    return out


def _digit(atom: PrimExpr) -> tuple[PrimExpr, PrimExpr | None, PrimExpr | None] | None:
    """(X, P, M) of a digit `(X // P) % M` (P None: no division; M None: no modulo)."""
    mod = None
    if isinstance(atom, BinOp) and atom.op == "floormod":
        atom, mod = atom.a, atom.b
    if isinstance(atom, BinOp) and atom.op == "floordiv":
        return atom.a, atom.b, mod
    return (atom, None, mod) if mod is not None else None


def _digit_chains(atoms: list[PrimExpr]) -> list[Linear]:
    """Linear forms `X` that a complete set of digits recovers, symbolic radices included:
    `X % M1`, `(X // M1) % M2`, ..., `X // (M1 * M2 * ...)`, as a fuse of loops with
    symbolic extents writes them."""
    from tirc.ir.arith import Analyzer
    from tirc.ir.structural import same_expr

    an = Analyzer()
    digits = [d for d in (_digit(a) for a in atoms) if d is not None]
    out: list[Linear] = []
    for x, _, _ in digits:
        lx = _linear_in_loops(x)
        if lx is None or any(lin.terms == lx.terms and lin.const == lx.const for lin in out):
            continue
        mine = [(p, m) for y, p, m in digits if same_expr(x, y)]
        place: PrimExpr | None = None  # the weight of the next digit (None: 1)
        while True:
            step = next(((p, m) for p, m in mine if (p is None and place is None) or (
                p is not None and place is not None and an.can_prove(binop("eq", p, place)))),
                None)
            if step is None:
                break
            if step[1] is None:
                out.append(lx)
                break
            place = step[1] if place is None else binop("mul", place, step[1])
    return out


def _mixed_radix(loop: For, values: list[PrimExpr], inner: list[For]) -> bool:
    """Whether some value the bindings determine is a mixed-radix number of `loop` and the
    loops `inner` (constant extents; sorted by stride, each stride past all the smaller
    digits can reach), so one to one in them: `j_0 * 4 + j_1` after a reorder put `j_1`
    outside `j_0`."""
    digits = {x.loop_var: x for x in inner + [loop]}
    for lin in _recovered(loop.loop_var, values, inner):
        if not lin.terms.get(loop.loop_var):
            continue
        reach = 0
        ok = True
        # the other atoms (outer loops, sizes) are the same in both iterations compared
        for atom, coef in sorted(((a, c) for a, c in lin.terms.items() if a in digits),
                                 key=lambda t: abs(t[1])):
            x = digits[atom]  # type: ignore[index]
            if is_const_int(x.extent, 1):
                continue
            if not isinstance(x.extent, IntImm) or abs(coef) <= reach:
                ok = False
                break
            reach += abs(coef) * (x.extent.value - 1)
        if ok:
            return True
    return False


def _recoverable(v: Var, values: list[PrimExpr], inner: list[For]) -> bool:
    """Whether some value the bindings determine fixes `v` while the loops `inner` (inside
    its loop) range freely: `v`'s coefficient is larger than all they can add."""
    for lin in _recovered(v, values, inner):
        coef = lin.terms.get(v, 0)
        if coef == 0:
            continue
        reach = 0
        ok = True
        for x in inner:
            c = lin.terms.get(x.loop_var, 0)
            if c == 0:
                continue
            if not isinstance(x.extent, IntImm):
                ok = False
                break
            reach += abs(c) * (x.extent.value - 1)
        if ok and reach < abs(coef):
            return True
    return False
