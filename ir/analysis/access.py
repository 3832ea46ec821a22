"""What a block reads and writes: detected from its body, or taken from `T.reads`/`T.writes`.

`detect_regions` derives a block's read and write regions from the accesses in its body, as
TVM does when a block omits them: every access is relaxed over the loops between it and the
block, and the accesses of one buffer are united. A nested block contributes its own regions,
with its iteration variables replaced by their bindings. `effective_regions` adds detected
regions for any buffer a block touches but does not declare, so dependence checks never miss
an access (a reduction block often declares only its inputs).
"""

from __future__ import annotations

from typing import Any

from tirc.ir.analysis.regions import (
    Bounds,
    clip,
    full_bounds,
    loop_bounds,
    point_region,
    region_of_bounds,
    relax,
    relax_region,
    union_bounds,
)
from tirc.ir.arith import Analyzer
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, PrimExpr
from tirc.ir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    For,
    LetStmt,
    Stmt,
)
from tirc.ir.visitor import post_order_visit, substitute


class _Collector:
    """Accesses under a block, each relaxed over the loops around it inside the block."""

    def __init__(self, an: Analyzer, exclude: set[Buffer],
                 match: dict[Buffer, BufferRegion]) -> None:
        self.an = an
        self.exclude = exclude
        self.match = match
        self.reads: dict[Buffer, list[list[Bounds | None]]] = {}
        self.writes: dict[Buffer, list[list[Bounds | None]]] = {}
        self.dom: dict[Any, Bounds] = {}

    def add(self, table: dict[Buffer, list[list[Bounds | None]]], buf: Buffer,
            region: tuple[Range, ...]) -> None:
        if buf in self.match:
            src = self.match[buf]
            buf, region = src.buffer, src.region
        if buf in self.exclude:
            return
        table.setdefault(buf, []).append(relax_region(region, self.dom, self.an))

    def expr(self, e: Any) -> None:
        def visit(n: Any) -> None:
            if isinstance(n, BufferLoad):
                self.add(self.reads, n.buffer, point_region(n.indices))

        post_order_visit(e, visit)

    def stmt(self, s: Stmt | None) -> None:
        if s is None:
            return
        if isinstance(s, BufferStore):
            self.expr(s.value)
            self.expr(s.indices)
            self.add(self.writes, s.buffer, point_region(s.indices))
        elif isinstance(s, For):
            self.expr((s.min, s.extent))
            self.dom[s.loop_var] = loop_bounds(s.min, s.extent)
            self.stmt(s.body)
        elif isinstance(s, LetStmt):
            self.expr(s.value)
            r = relax(s.value, self.dom)
            if r is not None:
                self.dom[s.var] = r
            self.stmt(s.body)
        elif isinstance(s, BlockRealize):
            self.nested(s)
        elif isinstance(s, Allocate):
            self.exclude.add(s.buffer)
            self.stmt(s.body)
        else:
            for name, value in s.node_fields():
                if isinstance(value, Stmt):
                    self.stmt(value)
                elif isinstance(value, tuple) and value and isinstance(value[0], Stmt):
                    for x in value:
                        self.stmt(x)
                elif name not in ("node",):
                    self.expr(value)

    def nested(self, br: BlockRealize) -> None:
        self.expr(br.iter_values)
        self.expr(br.predicate)
        blk = br.block
        mapping = {iv.var: v for iv, v in zip(blk.iter_vars, br.iter_values)}
        reads, writes = effective_regions(blk, self.an)
        for r in reads:
            self.add(self.reads, r.buffer, substitute(r.region, mapping))
        for r in writes:
            self.add(self.writes, r.buffer, substitute(r.region, mapping))


def _combine(table: dict[Buffer, list[list[Bounds | None]]], an: Analyzer) -> list[BufferRegion]:
    out = []
    for buf, regions in table.items():
        bounds = []
        for k in range(buf.ndim):
            items = [r[k] for r in regions]
            if any(b is None for b in items):
                bounds.append(full_bounds(buf, k))
            else:
                bounds.append(clip(union_bounds([b for b in items if b is not None], an),
                                   buf, k, an))
        out.append(BufferRegion(buf, region_of_bounds(bounds, an)))
    return out


def detect_regions(block: Block, an: Analyzer | None = None
                   ) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """Read and write regions of `block` from the accesses in its init and body."""
    an = an or Analyzer()
    exclude = set(block.alloc_buffers)
    match = {m.buffer: m.source for m in block.match_buffers}
    with an.scope():
        for iv in block.iter_vars:
            if not an.is_bound(iv.var):
                an.bind(iv.var, iv.dom)
        c = _Collector(an, exclude, match)
        c.stmt(block.init)
        c.stmt(block.body)
        return _combine(c.reads, an), _combine(c.writes, an)


_REGIONS: dict[int, tuple[Block, list[BufferRegion], list[BufferRegion]]] = {}
_MAX_REGIONS = 512  # blocks whose regions are remembered (a schedule asks again and again)


def effective_regions(block: Block, an: Analyzer | None = None
                      ) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """Declared regions, plus detected ones for buffers the declarations leave out. Without
    an analyzer (knowing nothing beyond the block) the answer depends on the block alone and
    is remembered for it: blocks are immutable."""
    if an is not None:
        return _effective_regions(block, an)
    hit = _REGIONS.get(id(block))
    if hit is None or hit[0] is not block:
        if len(_REGIONS) >= _MAX_REGIONS:
            _REGIONS.clear()
        hit = _REGIONS[id(block)] = (block, *_effective_regions(block, None))
    return list(hit[1]), list(hit[2])


def _effective_regions(block: Block, an: Analyzer | None
                       ) -> tuple[list[BufferRegion], list[BufferRegion]]:
    reads, writes = detect_regions(block, an)
    declared_r = {r.buffer for r in block.reads}
    declared_w = {r.buffer for r in block.writes}
    return (list(block.reads) + [r for r in reads if r.buffer not in declared_r],
            list(block.writes) + [r for r in writes if r.buffer not in declared_w])


def binding_map(br: BlockRealize) -> dict[Any, PrimExpr]:
    """Iteration variable -> bound value."""
    return {iv.var: v for iv, v in zip(br.block.iter_vars, br.iter_values)}
