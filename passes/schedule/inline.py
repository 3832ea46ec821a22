"""compute_inline and reverse_compute_inline: fold an elementwise block into its neighbour.

compute_inline removes a producer `B[v0, v1] = e` and replaces every load `B[i, j]` by `e`
with `v0, v1 := i, j`. reverse_compute_inline removes a consumer `D[f(w)] = g(B[w0, w1])`
and makes the producer `B[p0, p1] = e` store `D[f(p)] = g(e)` instead. Either way the
intermediate buffer disappears with its allocation; blocks whose bodies change get their read
regions recomputed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.analysis.access import detect_regions
from tirc.ir.analysis.regions import cover
from tirc.ir.arith import Analyzer
from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.expr import BufferLoad, PrimExpr, Var, is_const_int
from tirc.ir.stmt import Block, BlockRealize, BufferStore, IterKind
from tirc.ir.visitor import Mutator, post_order_visit, substitute
from tirc.passes.schedule.dependence import BlockSite, scope_sites
from tirc.passes.schedule.state import ScheduleError, ScheduleState
from tirc.passes.schedule.tree import find_all


def _single_store(prim: str, blk: Block) -> BufferStore:
    if blk.init is not None:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" is a reduction (it has an init); "
                            f"only a block with a single store can be inlined")
    if not isinstance(blk.body, BufferStore):
        raise ScheduleError(f"{prim}: the body of block \"{blk.name}\" is not a single "
                            f"buffer store")
    if blk.alloc_buffers or blk.match_buffers:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" allocates or matches buffers")
    for iv in blk.iter_vars:
        if iv.kind != IterKind.SPATIAL:
            raise ScheduleError(f"{prim}: block \"{blk.name}\" has the non-spatial iteration "
                                f"variable {iv.var.name}")
    return blk.body


def _distinct_iter_vars(prim: str, blk: Block, indices: tuple[PrimExpr, ...],
                        buf: Buffer, what: str) -> list[Var]:
    ivars = [iv.var for iv in blk.iter_vars]
    out: list[Var] = []
    for e in indices:
        if not (isinstance(e, Var) and e in ivars) or e in out:
            raise ScheduleError(f"{prim}: the {what} {buf.name}[...] in block \"{blk.name}\" "
                                f"must be indexed by distinct iteration variables")
        out.append(e)
    if len(out) != len(ivars):
        missing = [v.name for v in ivars if v not in out]
        raise ScheduleError(f"{prim}: iteration variable {missing[0]} of block \"{blk.name}\" "
                            f"does not index {buf.name}")
    return out


def _loads_of(e: Any, buf: Buffer) -> list[BufferLoad]:
    return [ld for ld in _all_loads(e) if ld.buffer is buf]


def _all_loads(e: Any) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def _refresh_reads(blk: Block, gone: Buffer, widen: frozenset[Buffer]) -> Block:
    """Reads without `gone`; a declared region of a buffer in `widen` (one the inlined value
    reads) grown to cover the detected accesses, as the inlined loads may reach elements the
    declaration left out; detected regions for buffers the declarations lack."""
    an = Analyzer()
    detected = {r.buffer: r for r in detect_regions(blk, an)[0] if r.buffer is not gone}
    kept = []
    for r in blk.reads:
        if r.buffer is gone:
            continue
        if r.buffer in widen and r.buffer in detected:
            with an.scope():
                for iv in blk.iter_vars:
                    an.bind(iv.var, iv.dom)
                r = cover(r.buffer, [r.region, detected[r.buffer].region], {}, an)
        kept.append(r)
    declared = {r.buffer for r in kept}
    return dataclasses.replace(blk, reads=tuple(kept + [r for b, r in detected.items()
                                                        if b not in declared]))


def _drop_alloc(s: ScheduleState, buf: Buffer) -> None:
    """Remove the allocation of `buf` from the block that allocates it."""
    paths = find_all(s.body, lambda x: isinstance(x, BlockRealize)
                     and any(b is buf for b in x.block.alloc_buffers))
    for p in paths:
        br = p[-1]
        assert isinstance(br, BlockRealize)
        allocs = tuple(b for b in br.block.alloc_buffers if b is not buf)
        s.replace(p, dataclasses.replace(br, block=dataclasses.replace(
            br.block, alloc_buffers=allocs)), "inline")
    _unwrap_empty_root(s)


def _unwrap_empty_root(s: ScheduleState) -> None:
    """A root block left with nothing to allocate is dropped, as the frontend never makes one."""
    body = s.body
    if isinstance(body, BlockRealize) and body.block.name == "root" and not (
            body.block.alloc_buffers or body.block.iter_vars or body.block.reads
            or body.block.writes or body.block.match_buffers or body.block.annotations
            or body.block.init is not None):
        s.set_body(body.block.body)


def _check_intermediate(prim: str, s: ScheduleState, buf: Buffer, name: str) -> None:
    if s.is_param_buffer(buf):
        raise ScheduleError(f"{prim}: block \"{name}\" writes {buf.name}, a parameter of "
                            f"function \"{s.name}\"; only intermediate buffers can be inlined")


def _other_writers(site: BlockSite, sites: list[BlockSite], buf: Buffer) -> list[BlockSite]:
    return [x for x in sites if x.block is not site.block and buf in x.writes()]


class _InlineLoads(Mutator):
    """Replace loads of `buf` by the producer's value; refresh reads of changed blocks."""

    def __init__(self, buf: Buffer, params: list[Var], value: PrimExpr) -> None:
        self.buf = buf
        self.params = params
        self.value = value
        self.widen = frozenset(ld.buffer for ld in _all_loads(value))

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        n = self.generic_visit(n)
        if n.buffer is not self.buf:
            return n
        return substitute(self.value, dict(zip(self.params, n.indices)))

    def visit_Block(self, b: Block) -> Any:
        new = self.generic_visit(b)
        if any(r.buffer is self.buf for r in b.reads) or (new is not b and b.reads):
            return _refresh_reads(new, self.buf, self.widen)
        return new

    def visit_BufferRegion(self, r: BufferRegion) -> Any:
        return r


def compute_inline(s: ScheduleState, block: Any) -> None:
    """Inline an elementwise producer into every consumer."""
    prim = "compute_inline"
    path, br, blk = s.block(block, prim)
    store = _single_store(prim, blk)
    buf = store.buffer
    _check_intermediate(prim, s, buf, blk.name)
    params = _distinct_iter_vars(prim, blk, store.indices, buf, "store to")
    if _loads_of(store.value, buf):
        raise ScheduleError(f"{prim}: block \"{blk.name}\" reads the buffer {buf.name} it writes")
    if not is_const_int(br.predicate, 1):
        raise ScheduleError(f"{prim}: block \"{blk.name}\" has a predicate (T.where)")
    sites = scope_sites(s.body, path)
    me = next(x for x in sites if x.block is blk)
    others = _other_writers(me, sites, buf)
    if others:
        raise ScheduleError(f"{prim}: buffer {buf.name} is also written by block "
                            f"\"{others[0].name}\"")
    _check_not_matched(prim, s, buf)
    s.replace(path, None, prim)
    s.set_body(_InlineLoads(buf, params, store.value).visit(s.body))
    _drop_alloc(s, buf)


def _check_not_matched(prim: str, s: ScheduleState, buf: Buffer) -> None:
    for p in find_all(s.body, lambda x: isinstance(x, BlockRealize)):
        br = p[-1]
        assert isinstance(br, BlockRealize)
        for m in br.block.match_buffers:
            if m.source.buffer is buf:
                raise ScheduleError(f"{prim}: buffer {buf.name} is viewed by a match_buffer in "
                                    f"block \"{br.block.name}\"")


def reverse_compute_inline(s: ScheduleState, block: Any) -> None:
    """Inline an elementwise consumer into its only producer."""
    prim = "reverse_compute_inline"
    path, br, blk = s.block(block, prim)
    store = _single_store(prim, blk)
    sites = scope_sites(s.body, path)
    me = next(x for x in sites if x.block is blk)
    sources = [b for b in me.reads() if b is not store.buffer
               and any(b in x.writes() for x in sites if x.block is not blk)]
    if len(sources) != 1:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" must read exactly one buffer "
                            f"produced in its scope, it reads {len(sources)}")
    buf = sources[0]
    _check_intermediate(prim, s, buf, blk.name)
    writers = [x for x in sites if x.block is not blk and buf in x.writes()]
    if len(writers) != 1:
        raise ScheduleError(f"{prim}: buffer {buf.name} has {len(writers)} producers; "
                            f"it needs exactly one")
    prod = writers[0]
    readers = [x for x in sites if x.block is not blk and x.block is not prod.block
               and buf in x.reads()]
    if readers:
        raise ScheduleError(f"{prim}: buffer {buf.name} is also read by block "
                            f"\"{readers[0].name}\"")
    loads = _loads_of(store.value, buf)
    if any(ld.indices != loads[0].indices for ld in loads[1:]) or not loads:
        raise ScheduleError(f"{prim}: block \"{blk.name}\" reads {buf.name} at more than one "
                            f"index")
    params = _distinct_iter_vars(prim, blk, loads[0].indices, buf, "load of")
    for iv, dim in zip([next(i for i in blk.iter_vars if i.var is v) for v in params],
                       buf.shape):
        if not (is_const_int(iv.dom.min, 0) and _same(iv.dom.extent, dim)):
            raise ScheduleError(f"{prim}: block \"{blk.name}\" does not read all of "
                                f"{buf.name}")
    if not is_const_int(br.predicate, 1):
        raise ScheduleError(f"{prim}: block \"{blk.name}\" has a predicate (T.where)")
    pblk = prod.block
    if pblk.init is not None or any(iv.kind != IterKind.SPATIAL for iv in pblk.iter_vars):
        raise ScheduleError(f"{prim}: producer block \"{pblk.name}\" of block \"{blk.name}\" "
                            f"is a reduction; as in TVM, a consumer is inlined only into a "
                            f"complete producer (one that writes each element of {buf.name} "
                            f"once, with spatial iteration variables only)")
    pstore = _single_store(prim, pblk)
    _check_not_matched(prim, s, buf)
    mapping = dict(zip(params, pstore.indices))
    value = _replace_loads(substitute(store.value, mapping), buf, pstore.value)
    new_store = BufferStore(store.buffer, value, substitute(store.indices, mapping),
                            span=pstore.span)
    reads = [r for r in pblk.reads if r.buffer is not buf]
    reads += [substitute(r, mapping) for r in blk.reads if r.buffer is not buf]
    writes = tuple(substitute(r, mapping) for r in blk.writes)
    new_blk = dataclasses.replace(pblk, body=new_store, reads=tuple(_dedup(reads)), writes=writes)
    s.replace(path, None, prim)
    ppath = s.lookup_block(pblk.name)
    pbr = ppath[-1]
    assert isinstance(pbr, BlockRealize)
    s.replace(ppath, dataclasses.replace(pbr, block=new_blk), prim)
    _drop_alloc(s, buf)


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    from tirc.ir.structural import same_expr

    return same_expr(a, b) or (is_const_int(a) and is_const_int(b)
                                      and a.value == b.value)  # type: ignore[attr-defined]


def _replace_loads(e: PrimExpr, buf: Buffer, value: PrimExpr) -> PrimExpr:
    class _R(Mutator):
        def visit_BufferLoad(self, n: BufferLoad) -> Any:
            return value if n.buffer is buf else self.generic_visit(n)

    return _R().visit(e)


def _dedup(regions: list[BufferRegion]) -> list[BufferRegion]:
    from tirc.ir.structural import same_expr

    out: list[BufferRegion] = []
    for r in regions:
        if not any(same_expr(r, o) for o in out):
            out.append(r)
    return out

