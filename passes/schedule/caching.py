"""Memory primitives: cache_read, cache_write, set_scope, storage_align.

cache_read(block, i, scope) copies the region of the block's i-th read buffer that its
consumers read into a new buffer `<name>_<scope>`, in a new block of that name placed before
the first consumer, and makes the consumers read the copy. cache_write(block, i, scope) makes
the block write a new buffer and adds a block after it that copies the written region back;
its `consumer_blocks` read the new buffer instead (TVM's argument; cache_read's names the
consumers that read the copy, all of them by default). A buffer index may also be a name.
Both regions are the accesses relaxed over the scope's loops. The new buffers have the
original's shape, as in TVM; compute_at of the copy block then shrinks what it copies.
cache_write refuses a block that reads the buffer it writes unless it is a reduction with its
own init (the cache starts empty: it does not copy in what was written before the block).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.analysis.regions import and_all, cover, loop_bounds, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.buffer import SCOPES, Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL, HANDLE
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, const, is_const_int
from tirc.ir.stmt import Block, BlockRealize, BufferStore, For, ForKind, IterKind, IterVar, Stmt
from tirc.ir.structural import structural_equal
from tirc.ir.visitor import Mutator, post_order_visit, substitute
from tirc.passes.schedule.dependence import BlockSite, bind_outer_loops, scope_sites
from tirc.passes.schedule.domain_guards import first_point_guards
from tirc.passes.schedule.scope import (
    add_alloc,
    kid_index,
    replace_buffer,
    scope_block_name,
    scope_kids,
    set_scope_kids,
    unique_buffer_name,
)
from tirc.passes.schedule.state import BlockRV, ScheduleError, ScheduleState
from tirc.passes.schedule.tree import Path, loops_in_scope

CACHE_SCOPES = tuple(sc for sc in SCOPES if sc != "event")


def _check_scope(prim: str, scope: Any) -> str:
    if scope not in CACHE_SCOPES:
        raise ScheduleError(f"{prim}: unknown storage scope {scope!r} (expected one of "
                            f"{', '.join(CACHE_SCOPES)})")
    return str(scope)


def _region_at(prim: str, blk: Block, index: Any, kind: str) -> BufferRegion:
    """The block's `index`-th read (write) region; `index` may also name the buffer, as TVM
    accepts."""
    regions = blk.reads if kind == "read" else blk.writes
    verb = "reads" if kind == "read" else "writes"
    if isinstance(index, str):
        named = [r for r in regions if r.buffer.name == index]
        if not named:
            raise ScheduleError(f"{prim}: block \"{blk.name}\" {verb} no buffer named "
                                f"{index!r}")
        return named[0]
    if isinstance(index, bool) or not isinstance(index, int):
        raise ScheduleError(f"{prim}: the buffer index must be an integer or a buffer name")
    if not 0 <= index < len(regions):
        raise ScheduleError(f"{prim}: block \"{blk.name}\" {verb} {len(regions)} "
                            f"{'buffer' if len(regions) == 1 else 'buffers'}; index {index} is "
                            f"out of range")
    return regions[index]


def _site_region(site: BlockSite, buf: Buffer, writes: bool, an: Analyzer) -> BufferRegion:
    """The region of `buf` the site accesses over all its loops in the scope."""
    reads, wr = site.regions()
    regs = [r.region for r in (wr if writes else reads) if r.buffer is buf]
    bmap = {iv.var: v for iv, v in zip(site.block.iter_vars, site.realize.iter_values)}
    dom = {lp.loop_var: loop_bounds(lp.min, lp.extent) for lp in loops_in_scope(site.path)}
    return cover(buf, [substitute(r, bmap) for r in regs], dom, an)


def _union(buf: Buffer, regions: list[BufferRegion], an: Analyzer) -> BufferRegion:
    return cover(buf, [r.region for r in regions], {}, an)


def copy_stage(name: str, src: Buffer, dst: Buffer, region: BufferRegion,
               predicate: PrimExpr | None = None) -> Stmt:
    """A loop nest over `region` with a block `name` doing dst[v] = src[v] (where
    `predicate` holds)."""
    loops: list[tuple[Var, PrimExpr]] = []
    ivars: list[IterVar] = []
    values: list[PrimExpr] = []
    for k, (rng, dim) in enumerate(zip(region.region, src.shape)):
        v = Var(f"v{k}", dim.dtype)
        ivars.append(IterVar(v, Range(IntImm(0, dim.dtype), dim), IterKind.SPATIAL))
        if is_const_int(rng.extent, 1):
            values.append(rng.min)
            continue
        ax = Var(f"ax{len(loops)}", dim.dtype)
        loops.append((ax, rng.extent))
        values.append(ax if is_const_int(rng.min, 0) else binop("add", rng.min, ax))
    idx = tuple(iv.var for iv in ivars)
    point = tuple(Range(v, IntImm(1, v.dtype)) for v in idx)
    blk = Block(name, tuple(ivars), (BufferRegion(src, point),), (BufferRegion(dst, point),),
                BufferStore(dst, src.vload(*idx), idx))
    body: Stmt = BlockRealize(tuple(values), predicate or IntImm(1, BOOL), blk)
    for ax, ext in reversed(loops):
        body = For(ax, const(0, ax.dtype), ext, ForKind.SERIAL, body)
    return body


def _new_buffer(s: ScheduleState, buf: Buffer, scope: str) -> Buffer:
    name = unique_buffer_name(s, f"{buf.name}_{scope}")
    return Buffer(name=name, shape=buf.shape, dtype=buf.dtype, data=Var(name, HANDLE),
                  scope=scope)


class _Redirect(Mutator):
    """In the named blocks (and blocks inside them), use `new` for `old`."""

    def __init__(self, names: set[str], old: Buffer, new: Buffer) -> None:
        self.names = names
        self.old = old
        self.new = new

    def visit_BlockRealize(self, br: BlockRealize) -> Any:
        if br.block.name in self.names:
            return substitute(br, {self.old: self.new})
        return self.generic_visit(br)


def cache_read(s: ScheduleState, block: Any, read_buffer_index: Any, storage_scope: Any,
               consumer_blocks: Any = None) -> BlockRV:
    """Read the block's `read_buffer_index`-th input through a copy in `storage_scope`."""
    prim = "cache_read"
    scope = _check_scope(prim, storage_scope)
    path, br, blk = s.block(block, prim)
    buf = _region_at(prim, blk, read_buffer_index, "read").buffer
    sites = scope_sites(s.body, path)
    if consumer_blocks is None:
        readers = [x for x in sites if buf in x.reads()]
    else:
        readers = _listed_readers(prim, s, sites, consumer_blocks, buf)
    for x in readers:
        if buf in x.writes():
            raise ScheduleError(f"{prim}: block \"{x.name}\" also writes {buf.name}; use "
                                f"cache_write for a buffer a block updates")
    sp, kids = scope_kids(s, path)
    pos = min(kid_index(kids, x) for x in readers)
    for x in sites:
        if buf in x.writes() and kid_index(kids, x) >= pos:
            raise ScheduleError(f"{prim}: block \"{x.name}\" writes {buf.name} after "
                                f"it is first read; the copy would be stale")
    an = Analyzer()
    region = _union(buf, [_site_region(x, buf, False, an) for x in readers], an)
    new = _new_buffer(s, buf, scope)
    name = s.unique_block_name(new.name)
    stage = copy_stage(name, buf, new, region)
    set_scope_kids(s, sp, kids[:pos] + [stage] + kids[pos:], prim)
    s.set_body(_Redirect({x.name for x in readers}, buf, new).visit(s.body))
    add_alloc(s, scope_block_name(sp), new, prim)
    return s.block_rv(name)


def _listed_readers(prim: str, s: ScheduleState, sites: list[BlockSite], blocks: Any,
                    buf: Buffer) -> list[BlockSite]:
    """The sites of the blocks a `consumer_blocks` argument names (each must read `buf`)."""
    items = blocks if isinstance(blocks, (list, tuple)) else [blocks]
    names = [s.block_path(b, prim, "consumer_blocks")[-1].block.name  # type: ignore[attr-defined]
             for b in items]
    out = []
    for name in names:
        site = next((x for x in sites if x.name == name), None)
        if site is None:
            raise ScheduleError(f"{prim}: consumer block \"{name}\" is not in the scope of "
                                f"the cached block")
        if buf not in site.reads():
            raise ScheduleError(f"{prim}: block \"{name}\" does not read {buf.name}")
        out.append(site)
    return out


def cache_write(s: ScheduleState, block: Any, write_buffer_index: Any,
                storage_scope: Any, consumer_blocks: Any = None) -> BlockRV:
    """Write the block's `write_buffer_index`-th output to a buffer in `storage_scope` and
    copy it back just afterwards; the `consumer_blocks` (TVM's argument) read the cache
    instead of the original buffer."""
    prim = "cache_write"
    scope = _check_scope(prim, storage_scope)
    path, br, blk = s.block(block, prim)
    written = _region_at(prim, blk, write_buffer_index, "write")
    buf = written.buffer
    _check_reads_own_writes(prim, blk, written)
    sites = scope_sites(s.body, path)
    me = next(x for x in sites if x.block is blk)
    sp, kids = scope_kids(s, path)
    pos = kid_index(kids, me)
    for x in sites:
        if x.block is not blk and kid_index(kids, x) == pos and \
                (buf in x.reads() or buf in x.writes()):
            raise ScheduleError(f"{prim}: block \"{x.name}\" accesses {buf.name} in the same "
                                f"loop nest as block \"{blk.name}\"")
    readers = [] if consumer_blocks is None else \
        _listed_readers(prim, s, sites, consumer_blocks, buf)
    for x in readers:
        if x.block is blk or kid_index(kids, x) < pos:
            raise ScheduleError(f"{prim}: consumer block \"{x.name}\" does not come after "
                                f"block \"{blk.name}\"")
        if buf in x.writes():
            raise ScheduleError(f"{prim}: consumer block \"{x.name}\" also writes "
                                f"{buf.name}; it cannot read the cache")
    an = Analyzer()
    region = _site_region(me, buf, True, an)
    new = _new_buffer(s, buf, scope)
    name = s.unique_block_name(new.name)
    stage = copy_stage(name, new, buf, region, _ran(br, path))
    set_scope_kids(s, sp, kids[:pos + 1] + [stage] + kids[pos + 1:], prim)
    s.set_body(_Redirect({blk.name} | {x.name for x in readers}, buf, new).visit(s.body))
    add_alloc(s, scope_block_name(sp), new, prim)
    return s.block_rv(name)


def _ran(br: BlockRealize, path: Path) -> PrimExpr | None:
    """For a reduction, when its copy back may run: where its reduction loops (those feeding
    none of its spatial variables) reach their first point, so that it ran at all; over
    n = 0 the cache holds nothing and the output keeps its values. None: always."""
    if br.block.init is None:
        return None
    nest = loops_in_scope(path)
    spatial = [v for iv, v in zip(br.block.iter_vars, br.iter_values)
               if iv.kind == IterKind.SPATIAL]
    reduction = [x for x in nest if not uses_any(spatial, {x.loop_var})]
    an = Analyzer()
    bind_outer_loops(an, path)
    nest_vars = {x.loop_var for x in nest}
    guards = [g for g in first_point_guards(br.predicate, reduction, [], an)
              if not uses_any(g, nest_vars)]
    return and_all(guards, br.predicate) if guards else None


def _check_reads_own_writes(prim: str, blk: Block, written: BufferRegion) -> None:
    """A block that reads the buffer it writes must read only what its own init wrote (a
    reduction): the cache starts empty, so values written before the block (by a parent's
    init, a decomposed init block, another producer) would be lost."""
    buf = written.buffer
    loads: list[BufferLoad] = []
    post_order_visit(blk.body, lambda n: loads.append(n) if isinstance(n, BufferLoad) and
                     n.buffer is buf else None)
    regions = [r for r in blk.reads if r.buffer is buf]
    if (loads or regions) and blk.init is None:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" reads {buf.name} before "
                            f"writing it (it has no init of its own); the cache would "
                            f"not hold the values it reads")
    for r in regions:
        if not structural_equal(r, written):
            raise ScheduleError(f"{prim}: block \"{blk.name}\" reads {buf.name} outside the "
                                f"element it writes; the cache would not hold those values")


def _allocated_written(prim: str, s: ScheduleState, block: Any, index: Any) -> Buffer:
    _, _, blk = s.block(block, prim)
    buf = _region_at(prim, blk, index, "write").buffer
    if s.is_param_buffer(buf):
        raise ScheduleError(f"{prim}: {buf.name} is a parameter of function \"{s.name}\"; "
                            f"only buffers the function allocates can change")
    return buf


def set_scope(s: ScheduleState, block: Any, buffer_index: Any, storage_scope: Any) -> None:
    """Move the block's `buffer_index`-th output buffer to another storage scope."""
    prim = "set_scope"
    scope = _check_scope(prim, storage_scope)
    buf = _allocated_written(prim, s, block, buffer_index)
    replace_buffer(s, buf, dataclasses.replace(buf, scope=scope))


def storage_align(s: ScheduleState, block: Any, buffer_index: Any, axis: Any, factor: Any,
                  offset: Any) -> None:
    """Pad the stride of dimension `axis` of an allocated buffer so that
    stride % factor == offset (to avoid bank conflicts or cache-set aliasing)."""
    prim = "storage_align"
    buf = _allocated_written(prim, s, block, buffer_index)
    for what, v in (("axis", axis), ("factor", factor), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ScheduleError(f"{prim}: {what} must be an integer")
    nd = buf.ndim
    if not -nd <= axis < nd:
        raise ScheduleError(f"{prim}: axis {axis} is out of range for the {nd}-d buffer "
                            f"{buf.name}")
    axis %= nd
    if axis == nd - 1:
        raise ScheduleError(f"{prim}: axis {axis} is the innermost dimension of {buf.name}, "
                            f"whose stride is 1")
    if factor <= 0 or not 0 <= offset < factor:
        raise ScheduleError(f"{prim}: need factor > 0 and 0 <= offset < factor, got factor "
                            f"{factor} and offset {offset}")
    if not all(isinstance(d, IntImm) for d in buf.shape):
        raise ScheduleError(f"{prim}: buffer {buf.name} has a symbolic shape")
    old = [d.value for d in buf.strides] if buf.strides and all(
        isinstance(d, IntImm) for d in buf.strides) else None
    strides = [0] * nd
    stride = 1
    for k in range(nd - 1, -1, -1):
        if old is not None and k != axis:
            stride = max(stride, old[k])
        if k == axis:
            stride += (offset - stride) % factor
        strides[k] = stride
        stride *= buf.shape[k].value  # type: ignore[attr-defined]
    dt = buf.shape[0].dtype
    new = dataclasses.replace(buf, strides=tuple(const(x, dt) for x in strides))
    replace_buffer(s, buf, new)

