"""Math intrinsics on NVPTX without libdevice: LLVM intrinsics the backend selects natively, and
short expansions over PTX's approximate instructions (inline PTX) where it has none.

Native: sqrt, fabs, floor, ceil, trunc, roundeven, nearbyint, fma, min/max (any width), exp2 (f32).
float64 transcendentals are computed in double precision by tirc.backends.nvptx.math_f64.
Expanded, in float32 (float16 and bfloat16 arguments are computed in float32 and rounded back):
- exp(x) = ex2(p) * (1 + e * ln 2) with p = x * log2(e) and e its rounding error (fma), ~2 ulp;
- fast_exp(x) = ex2.approx.ftz(x * log2(e)), CUDA's __expf: two instructions, error at most
  2 + 1.17 |x| ulp, subnormal results flushed to zero (docs/fast_math.md);
- log(x) = lg2.approx(x) * ln 2, log2 = lg2.approx (absolute error below 2^-22);
- sin/cos: reduction by 2*pi in two parts, then sin.approx/cos.approx (error below 2^-20);
- tanh: an odd polynomial for |x| < 0.3, else sign(x) * (1 - t) / (1 + t) with t = exp(-2|x|);
- sigmoid = 1 / (1 + exp(-x)); rsqrt = 1 / sqrt(x);
- erf: Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7);
- pow(x, y) = exp2(y * log2|x|), with numpy's sign for negative x and integer y, pow(x, 0) = 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.intrinsics import call_llvm
from tirc.backends.llvm.types import F32, I32, undef
from tirc.backends.nvptx.math_f64 import EXPANDED_F64, Float64Math

NATIVE = {"sqrt": "llvm.sqrt", "abs": "llvm.fabs", "floor": "llvm.floor", "ceil": "llvm.ceil",
          "trunc": "llvm.trunc", "round": "llvm.roundeven", "fma": "llvm.fma", "fabs": "llvm.fabs",
          "nearbyint": "llvm.nearbyint"}

Expansion = Callable[["_Math", list[ir.Value]], ir.Value]


class _Math:
    """Scalar float32 expansions over one builder."""

    def __init__(self, ctx: ModuleContext, b: ir.IRBuilder) -> None:
        self.ctx = ctx
        self.b = b

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(F32, value)

    def ptx(self, text: str, *args: ir.Value) -> ir.Value:
        """One approximate PTX instruction on float32 operands (`$0` result, `$1`.. args)."""
        fnty = ir.FunctionType(F32, [F32] * len(args))
        constraint = ",".join(["=f"] + ["f"] * len(args))
        return self.b.call(ir.InlineAsm(fnty, text, constraint), list(args))

    def llvm(self, name: str, *args: ir.Value) -> ir.Value:
        return call_llvm(self.ctx, self.b, name, list(args))

    def fma(self, a: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.llvm("llvm.fma", a, x, y)

    def exp2(self, x: ir.Value) -> ir.Value:
        return self.llvm("llvm.exp2", x)

    def exp(self, x: ir.Value) -> ir.Value:
        log2e = self.c(float.fromhex("0x1.715476p+0"))
        p = self.b.fmul(x, log2e)
        err = self.fma(x, log2e, self.b.fneg(p))
        err = self.fma(x, self.c(1.9259629911e-08), err)  # log2(e) - float32(log2(e))
        return self.b.fmul(self.exp2(p), self.fma(err, self.c(math.log(2.0)), self.c(1.0)))

    def fast_exp(self, x: ir.Value) -> ir.Value:
        p = self.b.fmul(x, self.c(float.fromhex("0x1.715476p+0")))
        return self.ptx("ex2.approx.ftz.f32 $0, $1;", p)

    def log2(self, x: ir.Value) -> ir.Value:
        return self.ptx("lg2.approx.f32 $0, $1;", x)

    def log(self, x: ir.Value) -> ir.Value:
        return self.b.fmul(self.log2(x), self.c(math.log(2.0)))

    def _reduce(self, x: ir.Value) -> ir.Value:
        k = self.llvm("llvm.roundeven", self.b.fmul(x, self.c(1.0 / (2.0 * math.pi))))
        hi = float.fromhex("0x1.921fb6p+2")  # float32(2 * pi)
        r = self.fma(self.b.fneg(k), self.c(hi), x)
        return self.fma(self.b.fneg(k), self.c(2.0 * math.pi - hi), r)

    def sin(self, x: ir.Value) -> ir.Value:
        return self.ptx("sin.approx.f32 $0, $1;", self._reduce(x))

    def cos(self, x: ir.Value) -> ir.Value:
        return self.ptx("cos.approx.f32 $0, $1;", self._reduce(x))

    def tanh(self, x: ir.Value) -> ir.Value:
        b = self.b
        ax = self.llvm("llvm.fabs", x)
        t = self.exp(b.fmul(ax, self.c(-2.0)))
        big = b.fdiv(b.fsub(self.c(1.0), t), b.fadd(self.c(1.0), t))
        big = self.llvm("llvm.copysign", big, x)
        x2 = b.fmul(x, x)
        poly = self.c(62.0 / 2835.0)
        for coef in (-17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0):
            poly = self.fma(poly, x2, self.c(coef))
        small = self.fma(b.fmul(poly, x2), x, x)
        return b.select(b.fcmp_ordered("<", ax, self.c(0.3)), small, big)

    def sigmoid(self, x: ir.Value) -> ir.Value:
        e = self.exp(self.b.fneg(x))
        return self.b.fdiv(self.c(1.0), self.b.fadd(self.c(1.0), e))

    def rsqrt(self, x: ir.Value) -> ir.Value:
        return self.b.fdiv(self.c(1.0), self.llvm("llvm.sqrt", x))

    def erf(self, x: ir.Value) -> ir.Value:
        b = self.b
        ax = self.llvm("llvm.fabs", x)
        t = b.fdiv(self.c(1.0), self.fma(self.c(0.3275911), ax, self.c(1.0)))
        poly = self.c(1.061405429)
        for coef in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            poly = self.fma(poly, t, self.c(coef))
        poly = b.fmul(poly, t)
        e = self.exp(b.fneg(b.fmul(ax, ax)))
        y = self.fma(b.fneg(poly), e, self.c(1.0))
        return self.llvm("llvm.copysign", y, x)

    def pow(self, x: ir.Value, y: ir.Value) -> ir.Value:
        b = self.b
        r = self.exp2(b.fmul(y, self.log2(self.llvm("llvm.fabs", x))))
        is_int = b.fcmp_ordered("==", self.llvm("llvm.floor", y), y)
        half = b.fmul(y, self.c(0.5))
        odd = b.fcmp_ordered("!=", self.llvm("llvm.floor", half), half)
        signed = b.select(odd, b.fneg(r), r)
        negative = b.select(is_int, signed, self.c(math.nan))
        out = b.select(b.fcmp_ordered("<", x, self.c(0.0)), negative, r)
        return b.select(b.fcmp_ordered("==", y, self.c(0.0)), self.c(1.0), out)


EXPANDED: dict[str, Expansion] = {
    "exp": lambda m, a: m.exp(a[0]), "fast_exp": lambda m, a: m.fast_exp(a[0]),
    "exp2": lambda m, a: m.exp2(a[0]), "log": lambda m, a: m.log(a[0]),
    "log2": lambda m, a: m.log2(a[0]), "sin": lambda m, a: m.sin(a[0]),
    "cos": lambda m, a: m.cos(a[0]), "tanh": lambda m, a: m.tanh(a[0]),
    "sigmoid": lambda m, a: m.sigmoid(a[0]), "rsqrt": lambda m, a: m.rsqrt(a[0]),
    "erf": lambda m, a: m.erf(a[0]), "pow": lambda m, a: m.pow(a[0], a[1]),
}

FLOAT_MATH = set(NATIVE) | set(EXPANDED)


def _per_lane(b: ir.IRBuilder, args: list[ir.Value],
              fn: Callable[[list[ir.Value]], ir.Value]) -> ir.Value:
    ty = args[0].type
    if not isinstance(ty, ir.VectorType):
        return fn(args)
    out: ir.Value = undef(ty)
    for lane in range(ty.count):
        idx = ir.Constant(I32, lane)
        out = b.insert_element(out, fn([b.extract_element(a, idx) for a in args]), idx)
    return out


def emit_float_math(ctx: ModuleContext, b: ir.IRBuilder, op: str,
                    args: list[ir.Value]) -> ir.Value | None:
    """Emit float math `op` on register values of one float type; None if `op` is not math."""
    if op in NATIVE:
        return call_llvm(ctx, b, NATIVE[op], args)
    if op not in EXPANDED:
        return None
    m = _Math(ctx, b)

    def scalar(xs: list[ir.Value]) -> ir.Value:
        ty = xs[0].type
        if isinstance(ty, ir.FloatType):
            return EXPANDED[op](m, xs)
        if isinstance(ty, ir.DoubleType):
            return EXPANDED_F64[op](Float64Math(ctx, b), xs)
        out = EXPANDED[op](m, [b.fpext(x, F32) for x in xs])
        return b.fptrunc(out, ty)

    return _per_lane(b, args, scalar)

