"""Read/write regions of a block when T.reads/T.writes are not written (as TVM infers them).

Each access `A[i, j]` gives a point region (extent 1 per index) when its indices use only
variables visible outside the block body (the block's iteration variables, enclosing loops,
parameters); a dimension whose index uses a loop or let variable of the body is relaxed to the
whole dimension. A nested block contributes its own regions, bound to its iteration values.
Buffers the body allocates itself (`T.decl_buffer`) are not the block's.
"""

from __future__ import annotations

import enum
from typing import Any

from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, Let, PrimExpr, Ramp, Var
from tirc.ir.node import IdentityNode, Node
from tirc.ir.stmt import Allocate, BlockRealize, BufferStore, For, LetStmt, Stmt
from tirc.ir.visitor import Visitor, substitute


def identity_key(x: Any) -> Any:
    """A hashable key equal for structurally equal IR with the *same* variables."""
    if isinstance(x, IdentityNode):
        return ("def", id(x))
    if isinstance(x, Node):
        return (type(x).__name__, tuple(identity_key(v) for _, v in x.node_fields()))
    if isinstance(x, (tuple, list)):
        return tuple(identity_key(v) for v in x)
    if isinstance(x, dict):
        return tuple((identity_key(k), identity_key(v)) for k, v in x.items())
    if isinstance(x, enum.Enum):
        return x.value
    return (type(x).__name__, x)


def same(a: Any, b: Any) -> bool:
    """Structural equality that does not rename variables."""
    return a is b or identity_key(a) == identity_key(b)


class _Accesses(Visitor):
    """Loads, stores and nested blocks in order, plus the variables the body defines."""

    def __init__(self) -> None:
        self.reads: list[tuple[Buffer, tuple[Range, ...] | tuple[PrimExpr, ...]]] = []
        self.writes: list[tuple[Buffer, tuple[Range, ...] | tuple[PrimExpr, ...]]] = []
        self.inner: set[int] = set()
        self.allocated: set[Buffer] = set()  # buffers the body allocates: not the block's

    def visit_Allocate(self, s: Allocate) -> None:
        self.allocated.add(s.buffer)
        self.generic_visit(s)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.generic_visit(e)
        self.reads.append((e.buffer, e.indices))

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.visit(s.value)
        self.visit(s.indices)
        self.writes.append((s.buffer, s.indices))

    def visit_For(self, s: For) -> None:
        self.inner.add(id(s.loop_var))
        self.generic_visit(s)

    def visit_LetStmt(self, s: LetStmt) -> None:
        self.inner.add(id(s.var))
        self.generic_visit(s)

    def visit_Let(self, e: Let) -> None:
        self.inner.add(id(e.var))
        self.generic_visit(e)

    def visit_BlockRealize(self, br: BlockRealize) -> None:
        self.visit(br.iter_values)
        self.visit(br.predicate)
        blk = br.block
        bind = {iv.var: v for iv, v in zip(blk.iter_vars, br.iter_values)}
        for r in blk.reads:
            self.reads.append((r.buffer, substitute(r.region, bind)))
        for r in blk.writes:
            self.writes.append((r.buffer, substitute(r.region, bind)))


def infer_regions(body: Stmt, init: Stmt | None, local: set[Buffer]
                  ) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """(reads, writes) of a block body and init; `local` buffers (allocated or matched in
    the block) are left out."""
    acc = _Accesses()
    if init is not None:
        acc.visit(init)
    acc.visit(body)
    local = set(local) | acc.allocated
    return (_regions(acc.reads, local, acc.inner), _regions(acc.writes, local, acc.inner))


def _regions(accesses: list, local: set[Buffer], inner: set[int]) -> tuple[BufferRegion, ...]:
    out: list[BufferRegion] = []
    seen: set[Any] = set()
    for buf, items in accesses:
        if buf in local:
            continue
        ranges = tuple(_relax(item, dim, inner) for item, dim in zip(items, buf.shape))
        region = BufferRegion(buf, ranges, span=_first_span(items))
        key = identity_key(region)
        if key not in seen:
            seen.add(key)
            out.append(region)
    return tuple(out)


def _relax(item: Any, dim: PrimExpr, inner: set[int]) -> Range:
    if isinstance(item, Range):
        if _uses(item.min, inner) or _uses(item.extent, inner):
            return Range(IntImm(0, dim.dtype, span=item.span), dim, span=item.span)
        return item
    if _uses(item, inner):
        return Range(IntImm(0, dim.dtype, span=item.span), dim, span=item.span)
    if isinstance(item, Ramp):
        if isinstance(item.stride, IntImm) and item.stride.value == 1:
            lanes = IntImm(item.lanes, item.base.dtype, span=item.span)
            return Range(item.base, lanes, span=item.span)
        return Range(IntImm(0, dim.dtype, span=item.span), dim, span=item.span)
    return Range(item, IntImm(1, item.dtype, span=item.span), span=item.span)


def _uses(e: Any, inner: set[int]) -> bool:
    found = False

    class _V(Visitor):
        def visit_Var(self, v: Var) -> None:
            nonlocal found
            found = found or id(v) in inner

    _V().visit(e)
    return found


def _first_span(items: Any) -> Any:
    for it in items:
        if getattr(it, "span", None) is not None:
            return it.span
    return None
