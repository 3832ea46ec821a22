"""TVM's named intrinsics (tirc.ir.tvm_intrinsics) in CPU code.

Float functions map to LLVM intrinsics where LLVM has one and to libm otherwise (vectors call
libm lane by lane); `isnan`/`isinf`/`isfinite` are comparisons; `clz` is `llvm.ctlz`;
`q_multiply_shift` is TVM's fixed-point multiply through int64; `call_extern` calls a C
function (declared external, resolved when the library is linked or loaded);
`call_llvm_pure_intrin` / `call_llvm_intrin` call the named LLVM intrinsic; `address_of`
is an element's address. GPU-only and scalable-vector intrinsics are a diagnostic at their
place: they have no CPU meaning.
"""

from __future__ import annotations

import math
from typing import Any

from llvmlite import ir
from tirc.backends.llvm.intrinsics import _call_libm, call_llvm
from tirc.backends.llvm.types import I1, I32, I64, PTR, const_like, intrinsic_suffix, reg_type
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, Call, StringImm
from tirc.ir.tvm_intrinsics import tvm_intrinsic

LLVM_UNARY = {"fabs": "llvm.fabs", "nearbyint": "llvm.nearbyint", "log10": "llvm.log10"}
LLVM_BINARY = {"copysign": "llvm.copysign"}
LIBM = {"log1p": ("log1pf", "log1p"), "exp10": ("exp10f", "exp10"), "tan": ("tanf", "tan"),
        "sinh": ("sinhf", "sinh"), "cosh": ("coshf", "cosh"), "asin": ("asinf", "asin"),
        "acos": ("acosf", "acos"), "atan": ("atanf", "atan"), "asinh": ("asinhf", "asinh"),
        "acosh": ("acoshf", "acosh"), "atanh": ("atanhf", "atanh"),
        "atan2": ("atan2f", "atan2"), "hypot": ("hypotf", "hypot"),
        "nextafter": ("nextafterf", "nextafter")}
# LLVM intrinsics overloaded on their operand type, named without the type suffix in TVM.
OVERLOADED = ("llvm.fabs", "llvm.sqrt", "llvm.fma", "llvm.fmuladd", "llvm.exp", "llvm.exp2",
              "llvm.log", "llvm.log2", "llvm.log10", "llvm.floor", "llvm.ceil", "llvm.trunc",
              "llvm.round", "llvm.roundeven", "llvm.nearbyint", "llvm.rint", "llvm.sin",
              "llvm.cos", "llvm.pow", "llvm.copysign", "llvm.minnum", "llvm.maxnum",
              "llvm.minimum", "llvm.maximum", "llvm.ctpop", "llvm.ctlz", "llvm.cttz",
              "llvm.abs", "llvm.smax", "llvm.smin", "llvm.umax", "llvm.umin")


class TvmCalls:
    """Mixed into the CPU function code generator (see FunctionCodegen)."""

    ctx: Any
    b: ir.IRBuilder
    expr: Any
    expr_as: Any
    element_address: Any
    flat_index: Any

    def tvm_call(self, e: Call) -> ir.Value:
        entry = tvm_intrinsic(e.op)
        assert entry is not None
        if entry.device == "gpu":
            raise CompileError(f"T.{e.op} is a GPU intrinsic: it has no meaning in a CPU build "
                               "(compile for a CUDA target)", e.span)
        if entry.device == "scalable":
            raise CompileError(f"T.{e.op} needs a scalable-vector (SVE) target; "
                               "this CPU target has fixed-width vectors", e.span)
        method = getattr(self, "tvm_" + e.op, None)
        if method is not None:
            return method(e)
        args = [self.expr_as(a, e.args[0].dtype) for a in e.args]
        if e.op in LLVM_UNARY:
            return call_llvm(self.ctx, self.b, LLVM_UNARY[e.op], args)
        if e.op in LLVM_BINARY:
            return call_llvm(self.ctx, self.b, LLVM_BINARY[e.op], args)
        if e.op in LIBM:
            return _call_libm(self.ctx, self.b, LIBM[e.op], args)
        raise CompileError(f"codegen: unsupported intrinsic T.{e.op}", e.span)

    # ---- float -----------------------------------------------------------------------

    def tvm_fmod(self, e: Call) -> ir.Value:
        a, c = (self.expr_as(x, e.dtype) for x in e.args)
        return self.b.frem(a, c)

    def tvm_ldexp(self, e: Call) -> ir.Value:
        x = self.expr(e.args[0])
        scale = _call_libm(self.ctx, self.b, ("exp2f", "exp2"),
                           [self.b.sitofp(self.expr(e.args[1]), x.type)])
        return self.b.fmul(x, scale)

    def _class(self, e: Call, predicate: str) -> ir.Value:
        x = self.expr(e.args[0])
        b = self.b
        if predicate == "isnan":
            return b.fcmp_unordered("uno", x, x)
        mag = call_llvm(self.ctx, b, "llvm.fabs", [x])
        inf = const_like(x.type, math.inf)
        return b.fcmp_ordered("==" if predicate == "isinf" else "<", mag, inf)

    def tvm_isnan(self, e: Call) -> ir.Value:
        return self._class(e, "isnan")

    def tvm_isinf(self, e: Call) -> ir.Value:
        return self._class(e, "isinf")

    def tvm_isfinite(self, e: Call) -> ir.Value:
        return self._class(e, "isfinite")

    # ---- vectors ---------------------------------------------------------------------

    def _shuffle(self, a: ir.Value, c: ir.Value, lanes: list[int]) -> ir.Value:
        mask = ir.Constant(ir.VectorType(I32, len(lanes)), [ir.Constant(I32, i) for i in lanes])
        return self.b.shuffle_vector(a, c, mask)

    def tvm_vectorlow(self, e: Call) -> ir.Value:
        x = self.expr(e.args[0])
        return self._shuffle(x, x, list(range(e.args[0].dtype.lanes // 2)))

    def tvm_vectorhigh(self, e: Call) -> ir.Value:
        x, n = self.expr(e.args[0]), e.args[0].dtype.lanes
        return self._shuffle(x, x, list(range(n // 2, n)))

    def tvm_vectorcombine(self, e: Call) -> ir.Value:
        a, c = (self.expr(x) for x in e.args)
        return self._shuffle(a, c, list(range(e.args[0].dtype.lanes * 2)))

    # ---- integer ---------------------------------------------------------------------

    def tvm_popcount(self, e: Call) -> ir.Value:
        return call_llvm(self.ctx, self.b, "llvm.ctpop", [self.expr(e.args[0])])

    def tvm_clz(self, e: Call) -> ir.Value:
        x = self.expr(e.args[0])
        fn = self.ctx.declare(f"llvm.ctlz.{intrinsic_suffix(x.type)}",
                              ir.FunctionType(x.type, [x.type, I1]))
        return self.b.call(fn, [x, ir.Constant(I1, 0)])

    def tvm_q_multiply_shift(self, e: Call) -> ir.Value:
        """round(x * y * 2^-(q - s)), half up: ((x << max(s,0)) * y + 2^(t-1)) >> t in int64,
        t = q + max(-s, 0)."""
        b = self.b
        x, y, q, s = (self.expr(a) for a in e.args)
        ty = x.type
        zero = const_like(ty, 0)
        left = b.select(b.icmp_signed(">", s, zero), s, zero)
        right = b.select(b.icmp_signed("<", s, zero), b.neg(s), zero)
        wide = ir.VectorType(I64, ty.count) if isinstance(ty, ir.VectorType) else I64
        xs = b.sext(b.shl(x, left), wide)
        total = b.sext(b.add(q, right), wide)
        one = const_like(wide, 1)
        rounding = b.shl(one, b.sub(total, one))
        product = b.add(b.mul(xs, b.sext(y, wide)), rounding)
        return b.trunc(b.ashr(product, total), ty)

    # ---- calls out of the kernel -----------------------------------------------------

    def _callee_operands(self, e: Call) -> tuple[str, list[ir.Value]]:
        first = e.args[0] if e.args else None
        if isinstance(first, Call) and first.op == "llvm_lookup_intrinsic_id":
            first = first.args[0]
        if not isinstance(first, StringImm):
            raise CompileError(f"T.{e.op} needs the function's name first", e.span)
        values = [self.ctx.string(a.value) if isinstance(a, StringImm) else self.expr(a)
                  for a in e.args[1:]]
        return first.value, values

    def tvm_call_extern(self, e: Call) -> ir.Value:
        name, values = self._callee_operands(e)
        ret = ir.VoidType() if e.dtype.kind == "void" else reg_type(e.dtype)
        fn = self.ctx.declare(name, ir.FunctionType(ret, [v.type for v in values]))
        out = self.b.call(fn, values)
        return ir.Constant(I32, 0) if e.dtype.kind == "void" else out

    tvm_call_pure_extern = tvm_call_extern

    def tvm_call_llvm_pure_intrin(self, e: Call) -> ir.Value:
        name, values = self._callee_operands(e)
        if values and values[0].type == I32 and len(e.args) > 2 and isinstance(
                e.args[1], Call) is False and _is_arg_count(e):
            values = values[1:]  # TVM's older form passes the operand count first
        if name in OVERLOADED and values:
            name = f"{name}.{intrinsic_suffix(values[0].type)}"
        ret = reg_type(e.dtype)
        fn = self.ctx.declare(name, ir.FunctionType(ret, [v.type for v in values]))
        return self.b.call(fn, values)

    tvm_call_llvm_intrin = tvm_call_llvm_pure_intrin

    def tvm_address_of(self, e: Call) -> ir.Value:
        load = e.args[0]
        if not isinstance(load, BufferLoad):
            raise CompileError("T.address_of takes a buffer element such as A[i]", e.span)
        index = self.flat_index(load.buffer, load.indices)
        addr = self.element_address(load.buffer, self.expr(index), index.dtype)
        return addr if addr.type == PTR else self.b.bitcast(addr, PTR)


def _is_arg_count(e: Call) -> bool:
    """`T.call_llvm_pure_intrin(dtype, name, T.uint32(n), a1..an)`: the count comes first."""
    from tirc.ir.expr import IntImm

    count = e.args[1] if len(e.args) > 1 else None
    return isinstance(count, IntImm) and count.dtype.kind == "uint" and \
        count.value == len(e.args) - 2
