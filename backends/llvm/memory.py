"""Memory access: loads and stores of buffer elements, scalar and vector.

A flat index that is a stride-1 ramp is one vector load or store at the ramp's base; a
broadcast index loads one element and splats it; any other vector index is a gather or
scatter done lane by lane. Multi-dimensional indices (a function that skipped
flatten-buffers) are flattened here, row-major or through the buffer's strides.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.types import (
    I32,
    I64,
    elem_align,
    from_memory,
    mem_type,
    splat,
    to_memory,
    undef,
)
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType
from tirc.ir.expr import Broadcast, BufferLoad, IntImm, PrimExpr, Ramp, Var, binop
from tirc.ir.stmt import BufferStore


def const_int(e: PrimExpr) -> int | None:
    """The integer value of a constant (or a broadcast constant), else None."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Broadcast):
        return const_int(e.value)
    return None


class MemoryAccess:
    """Loads (`expr_BufferLoad`) and stores (`stmt_BufferStore`) for the code generators."""

    b: ir.IRBuilder
    env: dict[Var, ir.Value]
    expr: Callable[[PrimExpr], ir.Value]
    expr_as: Callable[[PrimExpr, DType], ir.Value]

    def buffer_pointer(self, buf: Buffer) -> ir.Value:
        """The base pointer of a buffer (its `data` variable)."""
        if buf.data not in self.env:
            raise CompileError(f"codegen: buffer '{buf.name}' has no storage here", buf.span)
        return self.env[buf.data]

    def flat_index(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
        """One element offset for `indices` (row-major, or through explicit strides)."""
        if len(indices) == 1:
            return indices[0]
        if len(indices) == 0:
            return IntImm(0)
        if buf.strides:
            out: PrimExpr = binop("mul", indices[0], buf.strides[0])
            for idx, stride in zip(indices[1:], buf.strides[1:]):
                out = binop("add", out, binop("mul", idx, stride))
            return out
        out = indices[0]
        for idx, extent in zip(indices[1:], buf.shape[1:]):
            out = binop("add", binop("mul", out, extent), idx)
        return out

    def index_i64(self, index: ir.Value, dt: DType) -> ir.Value:
        """An index value widened to i64 for address arithmetic."""
        target = I64 if not isinstance(index.type, ir.VectorType) else \
            ir.VectorType(I64, index.type.count)
        if index.type == target:
            return index
        return self.b.zext(index, target) if dt.kind == "uint" else self.b.sext(index, target)

    def element_address(self, buf: Buffer, index: ir.Value, dt: DType) -> ir.Value:
        return self.b.gep(self.buffer_pointer(buf), [self.index_i64(index, dt)],
                          source_etype=mem_type(buf.dtype))

    def expr_BufferLoad(self, e: BufferLoad) -> ir.Value:
        buf = e.buffer
        index = self.flat_index(buf, e.indices)
        align = elem_align(buf.dtype)
        b = self.b
        if e.dtype.lanes > 1 and buf.dtype.lanes == 1:
            if isinstance(index, Ramp) and const_int(index.stride) == 1:
                base = self.expr(index.base)
                addr = self.element_address(buf, base, index.base.dtype)
                raw = b.load(addr, typ=mem_type(e.dtype), align=align)
                return from_memory(b, raw, e.dtype)
            if isinstance(index, Broadcast):
                addr = self.element_address(buf, self.expr(index.value), index.value.dtype)
                scalar = b.load(addr, typ=mem_type(buf.dtype), align=align)
                return splat(b, from_memory(b, scalar, buf.dtype), e.dtype.lanes)
            return self._gather(buf, index, e.dtype)
        addr = self.element_address(buf, self.expr(index), index.dtype)
        raw = b.load(addr, typ=mem_type(e.dtype), align=align)
        return from_memory(b, raw, e.dtype)

    def _gather(self, buf: Buffer, index: PrimExpr, dt: DType) -> ir.Value:
        """A vector load through arbitrary indices, one lane at a time."""
        b = self.b
        idx = self.expr(index)
        if not isinstance(idx.type, ir.VectorType):
            idx = splat(b, idx, dt.lanes)
        out: ir.Value = undef(mem_type(dt))
        for i in range(dt.lanes):
            lane = ir.Constant(I32, i)
            addr = self.element_address(buf, b.extract_element(idx, lane), index.dtype.element())
            out = b.insert_element(out, b.load(addr, typ=mem_type(buf.dtype),
                                               align=elem_align(buf.dtype)), lane)
        return from_memory(b, out, dt)

    def stmt_BufferStore(self, s: BufferStore) -> None:
        buf = s.buffer
        index = self.flat_index(buf, s.indices)
        lanes = max(s.value.dtype.lanes, index.dtype.lanes)
        dt = buf.dtype.with_lanes(lanes) if buf.dtype.lanes == 1 else buf.dtype
        value = to_memory(self.b, self.expr_as(s.value, dt), dt)
        align = elem_align(buf.dtype)
        if lanes > 1 and buf.dtype.lanes == 1:
            if isinstance(index, Ramp) and const_int(index.stride) == 1:
                addr = self.element_address(buf, self.expr(index.base), index.base.dtype)
                self.b.store(value, addr, align=align)
                return
            self._scatter(buf, index, value, lanes)
            return
        addr = self.element_address(buf, self.expr(index), index.dtype)
        self.b.store(value, addr, align=align)

    def _scatter(self, buf: Buffer, index: PrimExpr, value: ir.Value, lanes: int) -> None:
        b = self.b
        if isinstance(index, Broadcast):
            # Every lane writes the same element: the last lane wins, as in a scalar loop.
            addr = self.element_address(buf, self.expr(index.value), index.value.dtype)
            b.store(b.extract_element(value, ir.Constant(I32, lanes - 1)), addr,
                    align=elem_align(buf.dtype))
            return
        idx = self.expr(index)
        for i in range(lanes):
            lane = ir.Constant(I32, i)
            addr = self.element_address(buf, b.extract_element(idx, lane), index.dtype.element())
            b.store(b.extract_element(value, lane), addr, align=elem_align(buf.dtype))
