"""The `tirc.*` intrinsics make-entry uses to read DLTensor arguments, as LLVM loads.

DLTensor (DLPack) is `{ptr data, {i32 device_type, i32 device_id} device, i32 ndim,
{i8 code, i8 bits, i16 lanes} dtype, ptr shape, ptr strides, i64 byte_offset}`.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.memory import const_int
from tirc.backends.llvm.types import I8, I16, I32, I64, PTR, from_memory, mem_type
from tirc.ir.dlpack import TYPE_CODE_NAMES
from tirc.ir.expr import Call, PrimExpr, Var

DLDEVICE = ir.LiteralStructType([I32, I32])
DLDATATYPE = ir.LiteralStructType([I8, I8, I16])
DLTENSOR = ir.LiteralStructType([PTR, DLDEVICE, I32, DLDATATYPE, PTR, PTR, I64])

# Field numbers in DLTENSOR.
DATA, DEVICE, NDIM, DTYPE, SHAPE, STRIDES, BYTE_OFFSET = range(7)



def field_ptr(b: ir.IRBuilder, h: ir.Value, *path: int) -> ir.Value:
    """The address of a field of the DLTensor `h` points at (`path`: field, member)."""
    return b.gep(h, [ir.Constant(I32, 0), *(ir.Constant(I32, p) for p in path)],
                 inbounds=True, source_etype=DLTENSOR)


def load_field(b: ir.IRBuilder, h: ir.Value, ty: ir.Type, *path: int) -> ir.Value:
    """The value of a field of the DLTensor `h` points at, read as `ty`."""
    return b.load(field_ptr(b, h, *path), typ=ty)


def data_address(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """The address of a DLTensor's first element: its data pointer plus its byte offset."""
    data = b.load(field_ptr(b, h, DATA), typ=PTR, align=8)
    offset = b.load(field_ptr(b, h, BYTE_OFFSET), typ=I64, align=8)
    return b.gep(data, [offset], source_etype=I8)


class DLTensorIntrinsics:
    """`call_<name>` methods for the `tirc.<name>` calls of entry functions."""

    ctx: ModuleContext
    b: ir.IRBuilder
    env: dict[Var, ir.Value]
    expr: Callable[[PrimExpr], ir.Value]  # from ExprCodegen

    def _arg(self, e: Call, i: int = 0) -> ir.Value:
        return self.expr(e.args[i])

    def call_arg(self, e: Call) -> ir.Value:
        """`tirc.arg(args, i)`: the i-th `DLTensor*` of the argument array."""
        args, i = self._arg(e, 0), self._arg(e, 1)
        slot = self.b.gep(args, [self.b.sext(i, I64) if i.type != I64 else i], source_etype=PTR)
        return self.b.load(slot, typ=PTR, align=8)

    def call_is_null(self, e: Call) -> ir.Value:
        return self.b.icmp_unsigned("==", self._arg(e), ir.Constant(PTR, None))

    def _array_entry(self, e: Call, field: int) -> ir.Value:
        arr = self.b.load(field_ptr(self.b, self._arg(e), field), typ=PTR, align=8)
        k = const_int(e.args[1])
        idx = ir.Constant(I64, k) if k is not None else self.b.sext(self._arg(e, 1), I64)
        return self.b.load(self.b.gep(arr, [idx], source_etype=I64), typ=I64, align=8)

    def call_dl_shape(self, e: Call) -> ir.Value:
        """`tirc.dl_shape(h, k)`: the k-th extent (int64)."""
        return self._array_entry(e, SHAPE)

    def call_dl_stride(self, e: Call) -> ir.Value:
        """`tirc.dl_stride(h, k)`: the k-th stride in elements; only when strides is not NULL."""
        return self._array_entry(e, STRIDES)

    def call_dl_strides_null(self, e: Call) -> ir.Value:
        strides = self.b.load(field_ptr(self.b, self._arg(e), STRIDES), typ=PTR, align=8)
        return self.b.icmp_unsigned("==", strides, ir.Constant(PTR, None))

    def call_dl_data(self, e: Call) -> ir.Value:
        """`tirc.dl_data(h)`: the address of the first element (data + byte_offset)."""
        return data_address(self.b, self._arg(e))

    def call_address(self, e: Call) -> ir.Value:
        """`tirc.address(p)`: a pointer as a uint64."""
        return self.b.ptrtoint(self._arg(e), I64)

    def call_dl_scalar(self, e: Call) -> ir.Value:
        """`tirc.dl_scalar(h)`: the value of a 0-d tensor, of the call's dtype."""
        data = self.call_dl_data(e)
        raw = self.b.load(data, typ=mem_type(e.dtype), align=1)
        return from_memory(self.b, raw, e.dtype)



def dtype_kind_name(ctx: ModuleContext, b: ir.IRBuilder, code: ir.Value) -> ir.Value:
    """A `ptr` to the name of the DLPack type code `code` ("float", ...; "code?" if unknown)."""
    out: ir.Value = ctx.string("code?")
    for c, name in TYPE_CODE_NAMES.items():
        out = b.select(b.icmp_signed("==", code, ir.Constant(code.type, c)), ctx.string(name), out)
    return out
