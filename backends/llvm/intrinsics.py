"""Math intrinsics: the table from the math intrinsics' `T.<name>` calls to LLVM intrinsics or
libm.

LLVM intrinsics are overloaded by type (`llvm.exp.v16f32`) and work on vectors; libm functions
(`erff`) are scalar, so vectors call them lane by lane. `rsqrt`, `sigmoid`, `fmod` (frem) and
`ldexp` are expanded, and `fast_exp` is inline float32 arithmetic (fast_math.py).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.fast_math import fast_exp
from tirc.backends.llvm.types import F32, I1, const_like, intrinsic_suffix, undef
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType

# T.<name> -> LLVM intrinsic (overloaded on the float type of its arguments).
LLVM_FLOAT_INTRINSICS = {
    "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log",
    "log2": "llvm.log2", "sqrt": "llvm.sqrt", "floor": "llvm.floor", "ceil": "llvm.ceil",
    "round": "llvm.roundeven", "trunc": "llvm.trunc", "sin": "llvm.sin", "cos": "llvm.cos",
    "tanh": "llvm.tanh", "abs": "llvm.fabs", "pow": "llvm.pow", "fma": "llvm.fma",
    "min": "llvm.minimum", "max": "llvm.maximum", "fabs": "llvm.fabs",
    "nearbyint": "llvm.nearbyint", "log10": "llvm.log10", "copysign": "llvm.copysign",
}

# T.<name> -> (libm function for float, for double); float16 goes through the float version.
LIBM_FUNCTIONS = {
    "erf": ("erff", "erf"), "log1p": ("log1pf", "log1p"), "exp10": ("exp10f", "exp10"),
    "tan": ("tanf", "tan"), "sinh": ("sinhf", "sinh"), "cosh": ("coshf", "cosh"),
    "asin": ("asinf", "asin"), "acos": ("acosf", "acos"), "atan": ("atanf", "atan"),
    "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"), "atanh": ("atanhf", "atanh"),
    "atan2": ("atan2f", "atan2"), "hypot": ("hypotf", "hypot"),
    "nextafter": ("nextafterf", "nextafter"),
}


def call_llvm(ctx: ModuleContext, b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """Call the LLVM intrinsic `name`, overloaded on the type of the first argument."""
    ty = args[0].type
    fn = ctx.declare(f"{name}.{intrinsic_suffix(ty)}",
                     ir.FunctionType(ty, [a.type for a in args]))
    return b.call(fn, args)


def _call_libm(ctx: ModuleContext, b: ir.IRBuilder, names: tuple[str, str],
               args: list[ir.Value]) -> ir.Value:
    ty = args[0].type
    if isinstance(ty, ir.VectorType):
        out: ir.Value = undef(ty)
        for lane in range(ty.count):
            idx = ir.Constant(ir.IntType(32), lane)
            scalar = _call_libm(ctx, b, names, [b.extract_element(a, idx) for a in args])
            out = b.insert_element(out, scalar, idx)
        return out
    if isinstance(ty, ir.HalfType):
        wide = [b.fpext(a, F32) for a in args]
        return b.fptrunc(_call_libm(ctx, b, names, wide), ty)
    is_double = isinstance(ty, ir.DoubleType)
    fn = ctx.declare(names[1] if is_double else names[0],
                     ir.FunctionType(ty, [a.type for a in args]))
    return b.call(fn, args)


def _rsqrt(ctx: ModuleContext, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    root = call_llvm(ctx, b, "llvm.sqrt", args)
    return b.fdiv(const_like(root.type, 1.0), root)


def _sigmoid(ctx: ModuleContext, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    x = args[0]
    e = call_llvm(ctx, b, "llvm.exp", [b.fneg(x)])
    return b.fdiv(const_like(x.type, 1.0), b.fadd(const_like(x.type, 1.0), e))


def _ldexp(ctx: ModuleContext, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    x, exponent = args
    return b.fmul(x, _call_libm(ctx, b, ("exp2f", "exp2"), [exponent]))


EXPANDED: dict[str, Callable[[ModuleContext, ir.IRBuilder, list[ir.Value]], ir.Value]] = {
    "rsqrt": _rsqrt, "sigmoid": _sigmoid, "fast_exp": fast_exp,
    "fmod": lambda ctx, b, args: b.frem(*args), "ldexp": _ldexp,
}


def emit_math(ctx: ModuleContext, b: ir.IRBuilder, op: str, args: list[ir.Value],
              dt: DType) -> ir.Value | None:
    """Emit math intrinsic `op` on register values; None when `op` is not a math intrinsic."""
    if dt.is_int and op == "abs":
        if dt.kind == "uint":
            return args[0]
        ty = args[0].type
        fn = ctx.declare(f"llvm.abs.{intrinsic_suffix(ty)}", ir.FunctionType(ty, [ty, I1]))
        return b.call(fn, [args[0], ir.Constant(I1, 0)])
    known = op in LLVM_FLOAT_INTRINSICS or op in LIBM_FUNCTIONS or op in EXPANDED
    if not known:
        return None
    if not dt.is_float:
        raise CompileError(f"codegen: T.{op} needs a floating-point argument, got {dt}")
    if op in EXPANDED:
        return EXPANDED[op](ctx, b, args)
    if op in LIBM_FUNCTIONS:
        return _call_libm(ctx, b, LIBM_FUNCTIONS[op], args)
    return call_llvm(ctx, b, LLVM_FLOAT_INTRINSICS[op], args)
