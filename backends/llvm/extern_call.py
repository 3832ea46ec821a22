"""Calls of external C functions with the DLTensor ABI: the `tirc.call_packed` intrinsic that
lower-graph writes for `R.call_dps_packed` (its form is in ir/packed_call.py).

Each tensor argument becomes a DLTensor in the function's entry-block stack frame: the address
of its first element as `data`, a CPU device, its rank, dtype and an int64 shape array computed
from the symbolic extents, NULL strides (row-major) and byte_offset 0. An array of pointers to
them is passed to `int32_t <symbol>(DLTensor **args, int32_t num_args)`, declared external (the
library is linked with `-l NAME -L DIR`). A nonzero result sets the error message
`<caller>: external function '<symbol>' returned <code>` and fails the function with that code.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.dltensor import (
    BYTE_OFFSET,
    DATA,
    DEVICE,
    DLTENSOR,
    DTYPE,
    NDIM,
    SHAPE,
    STRIDES,
)
from tirc.backends.llvm.types import I8, I16, I32, I64, PTR
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dlpack import DEVICE_CPU, TYPE_CODES, dl_bits
from tirc.ir.dtype import INT64, DType
from tirc.ir.expr import Call, PrimExpr
from tirc.ir.packed_call import TensorArg, packed_call

# The helpers every library exports; an external function may not take their names.
RESERVED_SYMBOLS = ("tirc_last_error", "tirc_metadata")


def external_function(ctx: ModuleContext, symbol: str) -> ir.Function:
    """The declaration `int32_t symbol(DLTensor **, int32_t)`, made once per module."""
    fnty = ir.FunctionType(I32, [PTR, I32])
    existing = ctx.module.globals.get(symbol)
    if symbol in RESERVED_SYMBOLS or (existing is not None and (
            not isinstance(existing, ir.Function) or not existing.is_declaration
            or existing.function_type != fnty)):
        raise CompileError(f"codegen: external function '{symbol}' clashes with a symbol the "
                           "generated library defines or uses itself")
    if isinstance(existing, ir.Function):
        return existing
    return ir.Function(ctx.module, fnty, name=symbol)


class ExternCalls:
    """Mixed into the function code generator: `call_call_packed` for `tirc.call_packed`."""

    ctx: ModuleContext
    b: ir.IRBuilder
    expr: Callable[[PrimExpr], ir.Value]
    expr_as: Callable[[PrimExpr, DType], ir.Value]
    alloca: Callable[[ir.Type, int], ir.Value]
    fail: Callable[[int | ir.Value], None]
    element_address: Callable[[Buffer, ir.Value, DType], ir.Value]
    flat_index: Callable[[Buffer, tuple[PrimExpr, ...]], PrimExpr]

    def call_call_packed(self, e: Call) -> ir.Value:
        """Build the DLTensors, call the C function, and fail with its code if nonzero."""
        call = packed_call(e)
        fn = external_function(self.ctx, call.symbol)
        b = self.b
        array = self.alloca(ir.ArrayType(PTR, max(len(call.tensors), 1)), 8)
        for k, t in enumerate(call.tensors):
            slot = b.gep(array, [ir.Constant(I64, k)], source_etype=PTR)
            b.store(self._dltensor(t), slot, align=8)
        code = b.call(fn, [array, ir.Constant(I32, len(call.tensors))])
        failed = b.icmp_signed("!=", code, ir.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            self.ctx.set_error(b, f"{call.caller}: external function '{call.symbol}' "
                                  "returned %d", [code])
            self.fail(code)
        return ir.Constant(I32, 0)

    def call_dltensor(self, e: Call) -> ir.Value:
        """A `tirc.dltensor` outside a `tirc.call_packed` has no meaning: an error."""
        raise CompileError("codegen: tirc.dltensor is only an argument of tirc.call_packed",
                           e.span)

    def _dltensor(self, t: TensorArg) -> ir.Value:
        """A pointer to a filled DLTensor (on the stack) describing `t`."""
        b = self.b
        buf, dt = t.buffer, t.first.buffer.dtype
        if dt.lanes != 1 or dt.kind not in TYPE_CODES:
            raise CompileError(f"codegen: a {dt} tensor cannot cross the DLTensor ABI",
                               t.first.span)
        index = self.flat_index(buf, t.first.indices)
        data = self.element_address(buf, self.expr(index), index.dtype)
        ndim = len(t.shape)
        shape = self.alloca(ir.ArrayType(I64, max(ndim, 1)), 8)
        for k, d in enumerate(t.shape):
            b.store(self.expr_as(d, INT64), b.gep(shape, [ir.Constant(I64, k)],
                                                  source_etype=I64), align=8)
        h = self.alloca(DLTENSOR, 8)

        def put(value: ir.Value, *path: int) -> None:
            ptr = b.gep(h, [ir.Constant(I32, 0), *(ir.Constant(I32, p) for p in path)],
                        inbounds=True, source_etype=DLTENSOR)
            b.store(value, ptr)

        put(data, DATA)
        put(ir.Constant(I32, DEVICE_CPU), DEVICE, 0)
        put(ir.Constant(I32, 0), DEVICE, 1)
        put(ir.Constant(I32, ndim), NDIM)
        put(ir.Constant(I8, TYPE_CODES[dt.kind]), DTYPE, 0)
        put(ir.Constant(I8, dl_bits(dt)), DTYPE, 1)
        put(ir.Constant(I16, 1), DTYPE, 2)
        put(shape, SHAPE)
        put(ir.Constant(PTR, None), STRIDES)
        put(ir.Constant(I64, 0), BYTE_OFFSET)
        return h
