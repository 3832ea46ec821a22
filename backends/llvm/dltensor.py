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



def _field(b: ir.IRBuilder, h: ir.Value, *path: int) -> ir.Value:
    return b.gep(h, [ir.Constant(I32, 0), *(ir.Constant(I32, p) for p in path)],
                 inbounds=True, source_etype=DLTENSOR)


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

    def call_dl_ndim(self, e: Call) -> ir.Value:
        return self.b.load(_field(self.b, self._arg(e), NDIM), typ=I32, align=4)

    def _u(self, h: ir.Value, ty: ir.Type, *path: int) -> ir.Value:
        return self.b.zext(self.b.load(_field(self.b, h, *path), typ=ty), I32)

    def call_dl_dtype_code(self, e: Call) -> ir.Value:
        return self._u(self._arg(e), I8, DTYPE, 0)

    def call_dl_dtype_bits(self, e: Call) -> ir.Value:
        return self._u(self._arg(e), I8, DTYPE, 1)

    def call_dl_dtype_lanes(self, e: Call) -> ir.Value:
        return self._u(self._arg(e), I16, DTYPE, 2)

    def call_dl_device_type(self, e: Call) -> ir.Value:
        return self.b.load(_field(self.b, self._arg(e), DEVICE, 0), typ=I32, align=4)

    def _array_entry(self, e: Call, field: int) -> ir.Value:
        arr = self.b.load(_field(self.b, self._arg(e), field), typ=PTR, align=8)
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
        strides = self.b.load(_field(self.b, self._arg(e), STRIDES), typ=PTR, align=8)
        return self.b.icmp_unsigned("==", strides, ir.Constant(PTR, None))

    def call_dl_data(self, e: Call) -> ir.Value:
        """`tirc.dl_data(h)`: the address of the first element (data + byte_offset)."""
        h = self._arg(e)
        data = self.b.load(_field(self.b, h, DATA), typ=PTR, align=8)
        offset = self.b.load(_field(self.b, h, BYTE_OFFSET), typ=I64, align=8)
        return self.b.gep(data, [offset], source_etype=I8)

    def call_address(self, e: Call) -> ir.Value:
        """`tirc.address(p)`: a pointer as a uint64."""
        return self.b.ptrtoint(self._arg(e), I64)

    def call_dl_scalar(self, e: Call) -> ir.Value:
        """`tirc.dl_scalar(h)`: the value of a 0-d tensor, of the call's dtype."""
        data = self.call_dl_data(e)
        raw = self.b.load(data, typ=mem_type(e.dtype), align=1)
        return from_memory(self.b, raw, e.dtype)

    def call_dtype_kind(self, e: Call) -> ir.Value:
        """`tirc.dtype_kind(code)`: the name of a DLPack type code, for messages."""
        code = self._arg(e)
        out: ir.Value = self.ctx.string("code?")
        for c, name in TYPE_CODE_NAMES.items():
            hit = self.b.icmp_signed("==", code, ir.Constant(code.type, c))
            out = self.b.select(hit, self.ctx.string(name), out)
        return out
