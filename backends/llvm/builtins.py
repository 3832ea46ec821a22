"""Non-math intrinsic calls: bit operations and counts, TVM's fixed-point multiply, float
classes (isnan/isinf/isfinite as comparisons), vector halves, reinterpret, type limits, and
hints that are no-ops on the CPU.

Each `builtin_<op>` method emits the call `op`; ExprCodegen dispatches to them by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.casts import convert
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.intrinsics import call_llvm
from tirc.backends.llvm.types import (
    I1,
    I32,
    I64,
    const_like,
    from_memory,
    intrinsic_suffix,
    mem_type,
    reg_type,
    to_memory,
)
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
        """`a << c`, 0 when `c` is negative or not below the width (NumPy's shift; LLVM's
        `shl` is poison there)."""
        a, c = self._int_operands(e)
        return self.b.select(self._in_width(c, e.dtype), self.b.shl(a, c),
                             const_like(a.type, 0))

    def builtin_shift_right(self, e: Call) -> ir.Value:
        """`a >> c`, the sign (signed) or 0 (unsigned) when `c` is out of range, as NumPy."""
        a, c = self._int_operands(e)
        if e.dtype.kind == "int":
            last = const_like(c.type, e.dtype.bits - 1)
            return self.b.ashr(a, call_llvm(self.ctx, self.b, "llvm.umin", [c, last]))
        return self.b.select(self._in_width(c, e.dtype), self.b.lshr(a, c),
                             const_like(a.type, 0))

    def _in_width(self, c: ir.Value, dt: DType) -> ir.Value:
        return self.b.icmp_unsigned("<", c, const_like(c.type, dt.bits))

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

    def builtin_popcount(self, e: Call) -> ir.Value:
        (a,) = self._int_operands(e)
        return call_llvm(self.ctx, self.b, "llvm.ctpop", [a])

    def builtin_clz(self, e: Call) -> ir.Value:
        """The leading zero bits of the operand in its own width, as the call's dtype (int32
        for any operand, as TVM declares `T.clz`)."""
        src = e.args[0].dtype
        if not src.is_int:
            raise CompileError(f"codegen: T.clz needs an integer operand, got {src}", e.span)
        a = self.expr(e.args[0])
        fn = self.ctx.declare(f"llvm.ctlz.{intrinsic_suffix(a.type)}",
                              ir.FunctionType(a.type, [a.type, I1]))
        return convert(self.b, self.b.call(fn, [a, ir.Constant(I1, 0)]), src, e.dtype)

    def builtin_q_multiply_shift(self, e: Call) -> ir.Value:
        """round(x * y * 2^-(q - s)), ties up: ((x << max(s,0)) * y + 2^(t-1)) >> t in int64,
        t = q + max(-s, 0)."""
        b = self.b
        x, y, q, s = self._int_operands(e)
        zero = const_like(x.type, 0)
        left = b.select(b.icmp_signed(">", s, zero), s, zero)
        right = b.select(b.icmp_signed("<", s, zero), b.neg(s), zero)
        wide = ir.VectorType(I64, x.type.count) if isinstance(x.type, ir.VectorType) else I64
        total = b.sext(b.add(q, right), wide)
        one = const_like(wide, 1)
        product = b.mul(b.sext(b.shl(x, left), wide), b.sext(y, wide))
        rounded = b.add(product, b.shl(one, b.sub(total, one)))
        return b.trunc(b.ashr(rounded, total), x.type)

    def _float_class(self, e: Call, predicate: str) -> ir.Value:
        x = self.expr(e.args[0])
        if predicate == "isnan":
            return self.b.fcmp_unordered("uno", x, x)
        mag = call_llvm(self.ctx, self.b, "llvm.fabs", [x])
        inf = const_like(x.type, math.inf)
        return self.b.fcmp_ordered("==" if predicate == "isinf" else "<", mag, inf)

    def builtin_isnan(self, e: Call) -> ir.Value:
        return self._float_class(e, "isnan")

    def builtin_isinf(self, e: Call) -> ir.Value:
        return self._float_class(e, "isinf")

    def builtin_isfinite(self, e: Call) -> ir.Value:
        return self._float_class(e, "isfinite")

    def _shuffle(self, a: ir.Value, c: ir.Value, lanes: list[int]) -> ir.Value:
        mask = ir.Constant(ir.VectorType(I32, len(lanes)), [ir.Constant(I32, i) for i in lanes])
        return self.b.shuffle_vector(a, c, mask)

    def builtin_vectorlow(self, e: Call) -> ir.Value:
        x = self.expr(e.args[0])
        return self._shuffle(x, x, list(range(e.args[0].dtype.lanes // 2)))

    def builtin_vectorhigh(self, e: Call) -> ir.Value:
        x, n = self.expr(e.args[0]), e.args[0].dtype.lanes
        return self._shuffle(x, x, list(range(n // 2, n)))

    def builtin_vectorcombine(self, e: Call) -> ir.Value:
        a, c = (self.expr(x) for x in e.args)
        return self._shuffle(a, c, list(range(e.args[0].dtype.lanes * 2)))

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
