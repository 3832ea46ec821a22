"""Calls of external C functions with the DLTensor ABI: the `tirc.call_packed` intrinsic that
lower-graph writes for `R.call_dps_packed` (its form is in ir/packed_call.py).

Each tensor argument becomes a DLTensor in the function's entry-block stack frame: the address
of its first element as `data`, a CPU device, its rank, dtype and an int64 shape array computed
from the symbolic extents, NULL strides (row-major) and byte_offset 0. An array of pointers to
them is passed to `int32_t <symbol>(DLTensor **args, int32_t num_args)`, declared external (the
library is linked with `-l NAME -L DIR`). A nonzero result sets the error message
`<caller>: external function '<symbol>' returned <code>` and fails the function with that code.
A dotted name (`env.relu`, no C symbol) is called through its slot in the library's slot
array (`declare_extern_slots`; the loader fills it, docs/abi.md): an empty slot fails the
function with EMPTY_SLOT and a message naming the function, except a print's (R.print,
tirc.ir.print_call), which is skipped: a C caller that fills no slot gets no output.

TVM's calls out of a kernel are plain calls: `T.call_extern(dtype, "name", args...)` calls a C
function declared external (resolved when the library is linked or loaded),
`T.call_llvm_pure_intrin(dtype, "llvm.name", args...)` the named LLVM intrinsic (overloaded
ones named without their type suffix, as TVM writes them), and `T.address_of(A[i])` is the
address such calls take.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext, as_ptr
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
from tirc.backends.llvm.types import I8, I16, I32, I64, PTR, intrinsic_suffix, reg_type
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dlpack import DEVICE_CPU, TYPE_CODES, dl_bits
from tirc.ir.dtype import INT64, DType
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, StringImm
from tirc.ir.packed_call import PackedCall, TensorArg, packed_call
from tirc.ir.print_call import is_print_symbol

# The helpers every library exports; an external function may not take their names.
RESERVED_SYMBOLS = ("tirc_last_error", "tirc_metadata")
# `int32_t f(DLTensor **args, int32_t num_args)`: an external function, or a slot's.
SLOT_TYPE = ir.FunctionType(I32, [PTR, I32])
# The code of a call through a slot nothing filled (docs/abi.md).
EMPTY_SLOT = -6
# LLVM intrinsics overloaded on their operand type, named without the type suffix in TVM.
OVERLOADED = ("llvm.fabs", "llvm.sqrt", "llvm.fma", "llvm.fmuladd", "llvm.exp", "llvm.exp2",
              "llvm.log", "llvm.log2", "llvm.log10", "llvm.floor", "llvm.ceil", "llvm.trunc",
              "llvm.round", "llvm.roundeven", "llvm.nearbyint", "llvm.rint", "llvm.sin",
              "llvm.cos", "llvm.pow", "llvm.copysign", "llvm.minnum", "llvm.maxnum",
              "llvm.minimum", "llvm.maximum", "llvm.ctpop", "llvm.ctlz", "llvm.cttz",
              "llvm.abs", "llvm.smax", "llvm.smin", "llvm.umax", "llvm.umin")


def declare_extern_slots(ctx: ModuleContext, symbols: list[str]) -> ir.GlobalVariable | None:
    """The slot array of the dotted names `symbols` (one null function pointer each, filled
    by the loader), or None when there are none."""
    if not symbols:
        return None
    ty = ir.ArrayType(PTR, len(symbols))
    g = ir.GlobalVariable(ctx.module, ty, name="tirc.extern_slots")
    g.linkage = "internal"
    g.initializer = ir.Constant(ty, None)
    ctx.extern_slots = {s: k for k, s in enumerate(symbols)}
    ctx.extern_slot_array = g
    return g


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
    """Mixed into the CPU function code generator: `call_call_packed` for `tirc.call_packed`,
    `builtin_<name>` for TVM's calls out of the kernel."""

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
        if is_print_symbol(call.symbol):  # R.print: nothing to do when no loader filled it
            fn = self._slot_pointer(call.symbol)
            with self.b.if_then(self.b.icmp_unsigned("!=", self.b.ptrtoint(fn, I64),
                                                     ir.Constant(I64, 0))):
                self._packed_call(call, fn)
            return ir.Constant(I32, 0)
        fn = self._slot_function(call.symbol, call.caller) if call.through_slot else \
            external_function(self.ctx, call.symbol)
        self._packed_call(call, fn)
        return ir.Constant(I32, 0)

    def _packed_call(self, call: PackedCall, fn: ir.Value) -> None:
        """The DLTensors and the call of `fn`, failing with its code if nonzero."""
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

    def _slot_pointer(self, symbol: str) -> ir.Value:
        """The function pointer in the slot of the dotted name `symbol` (null when empty)."""
        b = self.b
        array = self.ctx.extern_slot_array
        assert array is not None, "declare_extern_slots runs before the functions"
        slot = b.gep(as_ptr(array), [ir.Constant(I64, self.ctx.extern_slots[symbol])],
                     source_etype=PTR)
        return b.load(slot, typ=ir.PointerType(SLOT_TYPE), align=8)

    def _slot_function(self, symbol: str, caller: str) -> ir.Value:
        """The function pointer in the slot of the dotted name `symbol`; an empty slot fails
        the function with EMPTY_SLOT and a message naming it."""
        b = self.b
        fn = self._slot_pointer(symbol)
        empty = b.icmp_unsigned("==", b.ptrtoint(fn, I64), ir.Constant(I64, 0))
        with b.if_then(empty, likely=False):
            self.ctx.set_error(b, f"{caller}: external function '{symbol}' is not registered "
                                  "(tirc.runtime.load(..., externs={...}) or "
                                  "tirc.runtime.register_func fills it)", [])
            self.fail(EMPTY_SLOT)
        return fn

    def _callee_operands(self, e: Call) -> tuple[str, list[ir.Value]]:
        first = e.args[0] if e.args else None
        if isinstance(first, Call) and first.op == "llvm_lookup_intrinsic_id":
            first = first.args[0]
        if not isinstance(first, StringImm):
            raise CompileError(f"T.{e.op} needs the function's name first", e.span)
        values = [self.ctx.string(a.value) if isinstance(a, StringImm) else self.expr(a)
                  for a in e.args[1:]]
        return first.value, values

    def builtin_call_extern(self, e: Call) -> ir.Value:
        name, values = self._callee_operands(e)
        ret = ir.VoidType() if e.dtype.kind == "void" else reg_type(e.dtype)
        fn = self.ctx.declare(name, ir.FunctionType(ret, [v.type for v in values]))
        out = self.b.call(fn, values)
        return ir.Constant(I32, 0) if e.dtype.kind == "void" else out

    builtin_call_pure_extern = builtin_call_extern

    def builtin_call_llvm_pure_intrin(self, e: Call) -> ir.Value:
        name, values = self._callee_operands(e)
        count = e.args[1] if len(e.args) > 1 else None
        if isinstance(count, IntImm) and count.dtype.kind == "uint" and \
                count.value == len(e.args) - 2:
            values = values[1:]  # TVM's older form passes the operand count first
        if name in OVERLOADED and values:
            name = f"{name}.{intrinsic_suffix(values[0].type)}"
        fn = self.ctx.declare(name, ir.FunctionType(reg_type(e.dtype), [v.type for v in values]))
        return self.b.call(fn, values)

    builtin_call_llvm_intrin = builtin_call_llvm_pure_intrin

    def builtin_address_of(self, e: Call) -> ir.Value:
        load = e.args[0]
        if not isinstance(load, BufferLoad):
            raise CompileError("T.address_of takes a buffer element such as A[i]", e.span)
        index = self.flat_index(load.buffer, load.indices)
        addr = self.element_address(load.buffer, self.expr(index), index.dtype)
        return addr if addr.type == PTR else self.b.bitcast(addr, PTR)

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
