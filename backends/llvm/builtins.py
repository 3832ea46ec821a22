"""Non-math intrinsic calls: bit operations, reinterpret, type limits, hints that are no-ops on
the CPU, and event-tensor synchronisation (`T.event_notify`/`T.event_wait`) with atomics.

Each `builtin_<op>` method emits the call `op`; ExprCodegen dispatches to them by name.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.types import I32, const_like, from_memory, mem_type, reg_type, to_memory
from tirc.ir import intrinsics as intrin
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType
from tirc.ir.expr import Call, PrimExpr, Var

NO_OPS = (intrin.STORAGE_SYNC, intrin.ASSUME, intrin.NOP)


def _limit(dt: DType, high: bool) -> int | float | bool:
    import numpy as np  # only for T.max_value / T.min_value

    if dt.is_bool:
        return high
    if dt.is_float:
        if dt.kind == "bfloat":
            return 3.3895313892515355e38 if high else -3.3895313892515355e38
        info = np.finfo(np.dtype(dt.element().numpy_name()))
        return float(info.max if high else info.min)
    info = np.iinfo(np.dtype(dt.element().numpy_name()))
    return int(info.max if high else info.min)


class BuiltinCalls:
    """Mixed into the function code generator; see the module docstring."""

    ctx: ModuleContext
    b: ir.IRBuilder
    env: dict[Var, ir.Value]
    expr: Callable[[PrimExpr], ir.Value]
    expr_as: Callable[[PrimExpr, DType], ir.Value]
    element_address: Callable[[Buffer, ir.Value, DType], ir.Value]
    flat_index: Callable[[Buffer, tuple[PrimExpr, ...]], PrimExpr]

    def builtin_likely(self, e: Call) -> ir.Value:
        return self.expr(e.args[0])

    def builtin_max_value(self, e: Call) -> ir.Value:
        return const_like(reg_type(e.dtype), _limit(e.dtype, True))

    def builtin_min_value(self, e: Call) -> ir.Value:
        return const_like(reg_type(e.dtype), _limit(e.dtype, False))

    def _int_operands(self, e: Call) -> list[ir.Value]:
        if not e.dtype.is_int:
            raise CompileError(f"codegen: T.{e.op} needs integer operands, got {e.dtype}", e.span)
        return [self.expr_as(a, e.dtype) for a in e.args]

    def builtin_shift_left(self, e: Call) -> ir.Value:
        a, c = self._int_operands(e)
        return self.b.shl(a, c)

    def builtin_shift_right(self, e: Call) -> ir.Value:
        a, c = self._int_operands(e)
        return self.b.ashr(a, c) if e.dtype.kind == "int" else self.b.lshr(a, c)

    def builtin_bitwise_and(self, e: Call) -> ir.Value:
        a, c = self._int_operands(e)
        return self.b.and_(a, c)

    def builtin_bitwise_or(self, e: Call) -> ir.Value:
        a, c = self._int_operands(e)
        return self.b.or_(a, c)

    def builtin_bitwise_xor(self, e: Call) -> ir.Value:
        a, c = self._int_operands(e)
        return self.b.xor(a, c)

    def builtin_bitwise_not(self, e: Call) -> ir.Value:
        (a,) = self._int_operands(e)
        return self.b.not_(a)

    def builtin_reinterpret(self, e: Call) -> ir.Value:
        """The bits of a value as another dtype of the same width."""
        src, dst = e.args[0].dtype, e.dtype
        if src.bytes != dst.bytes or src.is_bool or dst.is_bool:
            raise CompileError(f"codegen: cannot reinterpret {src} as {dst}", e.span)
        bits = to_memory(self.b, self.expr(e.args[0]), src)
        return from_memory(self.b, self.b.bitcast(bits, mem_type(dst)), dst)

    def builtin_tvm_thread_fence(self, e: Call) -> ir.Value:
        self.b.fence("seq_cst")
        return ir.Constant(I32, 0)
