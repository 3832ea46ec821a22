"""flatten-buffers: multi-dimensional buffer accesses become 1-D offsets.

`A[i, j, k]` becomes `A_flat[elem_offset + i * s0 + j * s1 + k * s2]`, with the strides
`s` from `A.strides` when given, else row-major from the shape (`(m * n, n, 1)`).

What changes and what stays (the contract with make-entry and codegen):
- `PrimFunc.buffer_map` and `params` are NOT changed: they keep the logical parameter buffers,
  with their shapes (symbolic dimensions included), dtypes and strides, for the entry checks
  and the metadata. Only the body changes.
- Each buffer accessed in the body gets one flat Buffer (memoised per buffer) that shares the
  original's `data` variable, so `buffer.data` identifies the storage: a param's flat buffer
  addresses the same pointer as the param. The flat buffer has shape `(size,)` where size is
  the product of the shape (or `1 + sum((dim - 1) * stride)` with explicit strides), plus the
  elem_offset when there is one; its strides are empty and its elem_offset is None (the
  offset is folded into every index).
- `Allocate` statements get the flat buffer of what they allocate; `T.attr(buffer, ...)`
  nodes are mapped too.
- A 1-D buffer without strides or offset is already flat and is kept as it is; a 0-D buffer
  becomes a 1-element buffer indexed by `0`.
- Buffers with a layout (`buffer.layout` set) are left alone: `lower-layouts` maps them to
  physical offsets and must run first. A note is recorded for each such buffer.
- Blocks still present (lower-blocks not run) are lowered first, as flat code needs loops.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.analysis.regions import row_major_strides
from tirc.ir.analysis.storage import storage_size
from tirc.ir.arith import construct
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import INT64, DType, no_overflow
from tirc.ir.expr import BufferLoad, PrimExpr, cast, const, index_dtype
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import Allocate, AttrStmt, BufferStore, Stmt
from tirc.ir.visitor import Mutator
from tirc.passes.lower_blocks import has_blocks, lower_blocks
from tirc.passes.pass_base import PassContext, PrimFuncPass


def _is_flat(b: Buffer) -> bool:
    offset_free = b.elem_offset is None or construct.is_int_const(b.elem_offset, 0)
    return b.ndim == 1 and not b.strides and offset_free


def _strides(b: Buffer) -> list[PrimExpr]:
    return list(b.strides) if b.strides else row_major_strides(b.shape)


def _wraps(dt: DType) -> bool:
    """An index type whose arithmetic wraps (int8, int16, the unsigned ones; vectors of them)."""
    return dt.is_int and not no_overflow(dt)


def flat_offset(b: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
    """The 1-D element offset of `b[indices]` from the buffer's data pointer. Indices of a
    type that wraps (int8, int16, unsigned) are widened first: `i * 32 + j` over int8 loop
    variables would wrap where the element's position does not."""
    if any(_wraps(i.dtype) for i in indices):
        wide = INT64 if any(i.dtype.kind == "uint" and i.dtype.bits >= 32 for i in indices) \
            else index_dtype(*indices, *b.shape)
        indices = tuple(cast(wide.with_lanes(i.dtype.lanes), i) if _wraps(i.dtype) else i
                        for i in indices)
    terms: list[PrimExpr] = []
    if b.elem_offset is not None and not construct.is_int_const(b.elem_offset, 0):
        terms.append(b.elem_offset)
    for idx, stride in zip(indices, _strides(b)):
        if not construct.is_int_const(idx, 0):
            terms.append(construct.mul(idx, stride))
    if not terms:
        dt = index_dtype(*indices, *b.shape) if indices or b.shape else index_dtype()
        return const(0, dt)
    out = terms[0]
    for t in terms[1:]:
        out = construct.add(out, t)
    return out


class _Flattener(Mutator):
    """Rewrites accesses and allocations to flat buffers, one flat buffer per buffer."""

    def __init__(self, ctx: PassContext, func_name: str) -> None:
        self.ctx = ctx
        self.func_name = func_name
        self.flat: dict[Buffer, Buffer] = {}

    def flat_of(self, b: Buffer) -> Buffer:
        known = self.flat.get(b)
        if known is not None:
            return known
        if b.layout is not None:
            self.ctx.note(f"flatten-buffers: buffer {b.name} in {self.func_name} has a layout; "
                          f"left as is (lower-layouts must run first)")
            new = b
        elif _is_flat(b):
            new = b
        else:
            new = Buffer(name=b.name, shape=(storage_size(b),), dtype=b.dtype, data=b.data,
                         scope=b.scope, align=b.align, offset_factor=b.offset_factor,
                         span=b.span)
        self.flat[b] = new
        return new

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        indices = self.visit(e.indices)
        flat = self.flat_of(e.buffer)
        if flat is e.buffer:
            return e if indices is e.indices else e.replace(indices=indices)
        return BufferLoad(flat, (flat_offset(e.buffer, indices),), e.dtype, span=e.span)

    def visit_BufferStore(self, s: BufferStore) -> Any:
        indices = self.visit(s.indices)
        value = self.visit(s.value)
        flat = self.flat_of(s.buffer)
        if flat is s.buffer:
            if indices is s.indices and value is s.value:
                return s
            return s.replace(indices=indices, value=value)
        return BufferStore(flat, value, (flat_offset(s.buffer, indices),), span=s.span)

    def visit_Allocate(self, s: Allocate) -> Any:
        flat = self.flat_of(s.buffer)
        body = self.visit(s.body)
        init = self.visit(s.init)
        if flat is s.buffer and body is s.body and init is s.init:
            return s
        return s.replace(buffer=flat, body=body, init=init)

    def visit_AttrStmt(self, s: AttrStmt) -> Any:
        node = self.flat_of(s.node) if isinstance(s.node, Buffer) else self.visit(s.node)
        value, body = self.visit(s.value), self.visit(s.body)
        if node is s.node and value is s.value and body is s.body:
            return s
        return s.replace(node=node, value=value, body=body)


def flatten_buffers(body: Stmt, ctx: PassContext, func_name: str = "") -> Stmt:
    """`body` with every buffer access and allocation flattened to one dimension."""
    if has_blocks(body):
        body = lower_blocks(body)
    return _Flattener(ctx, func_name).visit(body)


@dataclass(frozen=True)
class FlattenBuffers(PrimFuncPass):
    """N-d buffer accesses to 1-d offsets through strides; parameter buffers stay logical."""

    name = "flatten-buffers"
    description = "flatten n-d buffer accesses to 1-d offsets (buffer_map keeps logical shapes)"

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = flatten_buffers(func.body, ctx, func.name)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
