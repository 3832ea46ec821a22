"""Inlining inside a generated loop function for the GPU: a spatial block whose intermediate
one later block reads is computed inside that reader (reshape then transpose: one kernel and
no buffer between them)."""

from __future__ import annotations

import dataclasses

from tirc.ir.buffer import Buffer
from tirc.ir.expr import BufferLoad, PrimExpr
from tirc.ir.stmt import Block, BufferStore, IterKind
from tirc.ir.visitor import Mutator, post_order_visit, substitute
from tirc.passes.gpu.schedule_builders import typed
from tirc.passes.graph.kernel import read_regions


class _Inline(Mutator):
    """Loads of `producer`'s buffer become its value at the loaded index."""

    def __init__(self, producer: Block) -> None:
        store = producer.body
        assert isinstance(store, BufferStore)
        self.buffer, self.value = store.buffer, store.value
        self.ivars = [iv.var for iv in producer.iter_vars]

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        e = self.generic_visit(e)
        if e.buffer is not self.buffer:
            return e
        return substitute(self.value, typed(dict(zip(self.ivars, e.indices))))


def _reads_of(blk: Block) -> set[Buffer]:
    """The buffers the body of `blk` loads from."""
    found: set[Buffer] = set()
    post_order_visit(blk.body, lambda n: found.add(n.buffer) if isinstance(n, BufferLoad)
                     else None)
    return found


def _inline_target(root: Block, blocks: list[Block], k: int) -> int | None:
    """The one block that can take block `k` inlined: `k` is spatial, stores an intermediate
    (a root allocation) at its own iterators, and exactly one later block reads it, with no
    block up to that one (it included) writing what `k` reads."""
    p = blocks[k]
    store = p.body
    if any(iv.kind != IterKind.SPATIAL for iv in p.iter_vars) or \
            not isinstance(store, BufferStore) or store.buffer not in root.alloc_buffers or \
            list(store.indices) != [iv.var for iv in p.iter_vars]:
        return None
    readers = [j for j, b in enumerate(blocks) if j != k and store.buffer in _reads_of(b)]
    writers = [j for j, b in enumerate(blocks) if b.body.buffer is store.buffer]  # type: ignore[union-attr]
    if len(readers) != 1 or writers != [k] or readers[0] < k:
        return None
    later = {b.body.buffer for b in blocks[k + 1:readers[0] + 1]}  # type: ignore[union-attr]
    return None if later & _reads_of(p) else readers[0]


def inline_producers(root: Block, blocks: list[Block]) -> tuple[list[Block], set[Buffer]]:
    """`blocks` with each spatial producer of an intermediate that one block reads computed
    inside that reader instead (reshape then transpose: one kernel, no buffer between), and
    the intermediates no longer needed."""
    blocks = list(blocks)
    gone: set[Buffer] = set()
    k = 0
    while k < len(blocks):
        j = _inline_target(root, blocks, k)
        if j is None:
            k += 1
            continue
        producer, reader = blocks[k], blocks[j]
        body = _Inline(producer).visit(reader.body)
        reads = read_regions(body.value, exclude=body.buffer)
        blocks[j] = dataclasses.replace(reader, body=body, reads=reads)
        gone.add(producer.body.buffer)  # type: ignore[union-attr]
        del blocks[k]
    return blocks, gone
