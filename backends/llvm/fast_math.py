"""`T.fast_exp`: exp as straight-line float32 arithmetic that vectorizes (no libm call).

LLVM lowers `llvm.exp` on a vector to one `expf` call per lane, which makes exp-heavy loops
(softmax) compute-bound; this expansion is 18 AVX-512 instructions for all 16 lanes.

Algorithm (float32, scalar or vector operands alike):

1. Cody-Waite range reduction: n = round-to-nearest-even(x * log2(e)), done by adding and
   subtracting 1.5 * 2^23; r = x - n * LN2_HI - n * LN2_LO, where LN2_HI has 9 significant bits
   (so n * LN2_HI and x - n * LN2_HI are exact) and |r| <= ln(2)/2 (to rounding).
2. e^r = 1 + r + r^2 * Q(r), Q of degree 4 (degree 6 in all), its coefficients a minimax fit of
   the relative error on [-ln(2)/2, ln(2)/2] (fit error 3.1e-9) rounded to float32.
3. Scale by 2^n by adding n << 23 to the integer bits of e^r (its exponent field).
4. Lanes outside [LO, HI] are replaced: x > HI gives +inf, x < LO gives +0 (results below
   FLT_MIN = 2^-126 flush to zero rather than become subnormal), NaN gives NaN.

Error bound, measured over every float32 x in [LO, HI] = [-87.33654, 88.72283] (2.24e9 inputs)
against exp in float64 (`benchmarks/fast_exp_error.py --exhaustive`): relative error < 1e-7
(largest 8.53e-8 with FMA contraction, 8.33e-8 without, `-fp-contract=off`), at most 1.02 ulp of
the correctly rounded result (largest 1.014 and 0.989 ulp).
Outside that range the result is exactly what correct rounding gives, except that x in
(-103.97, LO) gives 0 where exp is subnormal (absolute error < 2^-126). -0 and +0 give exactly 1.

docs/fast_math.md has the details and the softmax benchmark's figures.

Other types: float16 (and bfloat16, computed as float) go through this float32 path and round
once at the end, so they are within about half an ulp of their own precision; float64 keeps full
precision through `llvm.exp`, since a float32 approximation would silently lose it.
"""

from __future__ import annotations

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.types import F32, const_like, int_type_like, intrinsic_suffix

# The range computed: HI is the largest float32 whose exp rounds to a finite float32 (0x42B17217);
# LO is the smallest float32 whose exp is at least FLT_MIN = 2^-126 (0xC2AEAC4F).
HI = 88.72283172607422
LO = -87.33654022216797

# Every constant here is a float32 value exactly.
LOG2E = 1.4426950216293335
# ln 2 split for Cody-Waite: LN2_HI = 0x3F318000 has 9 significant bits, LN2_LO is ln 2 - LN2_HI
# rounded to float32, so LN2_HI + LN2_LO is ln 2 to about 2^-37.
LN2_HI = 0.693359375
LN2_LO = -2.1219444170128554e-04
# Adding then subtracting 1.5 * 2^23 rounds a float32 of magnitude < 2^22 to an integer, ties
# to even; the sum's low mantissa bits then hold that integer.
ROUNDER = 12582912.0

# Q(r) ~ (e^r - 1 - r) / r^2, lowest degree first (minimax for the relative error of e^r).
Q_COEFFS = (0.4999999403953552, 0.1666652113199234, 0.04166838899254799,
            0.008368710055947304, 0.001381461275741458)


class _Arith:
    """Float arithmetic on one builder, with `contract` (FMA fusion) when the module allows."""

    def __init__(self, b: ir.IRBuilder, contract: bool) -> None:
        self.b = b
        self.flags = ["contract"] if contract else []

    def _flagged(self, inst: ir.Instruction) -> ir.Value:
        inst.flags.extend(self.flags)
        return inst

    def mul(self, a: ir.Value, c: ir.Value) -> ir.Value:
        return self._flagged(self.b.fmul(a, c))

    def add(self, a: ir.Value, c: ir.Value) -> ir.Value:
        return self._flagged(self.b.fadd(a, c))

    def sub(self, a: ir.Value, c: ir.Value) -> ir.Value:
        return self._flagged(self.b.fsub(a, c))


def fast_exp_f32(b: ir.IRBuilder, x: ir.Value, contract: bool = True) -> ir.Value:
    """e^x for a float or <N x float> value, as inline arithmetic (see the module docstring)."""
    t = x.type
    ti = int_type_like(t, 32)
    m = _Arith(b, contract)

    def c(value: float) -> ir.Constant:
        return const_like(t, value)

    shifted = m.add(m.mul(x, c(LOG2E)), c(ROUNDER))
    n = m.sub(shifted, c(ROUNDER))
    r = m.sub(m.sub(x, m.mul(n, c(LN2_HI))), m.mul(n, c(LN2_LO)))

    q = c(Q_COEFFS[-1])
    for coeff in reversed(Q_COEFFS[:-1]):
        q = m.add(m.mul(q, r), c(coeff))
    p = m.add(c(1.0), m.add(r, m.mul(m.mul(r, r), q)))

    # bits(shifted) = bits(1.5 * 2^23) + n, and bits(1.5 * 2^23) << 23 wraps to 0 in 32 bits,
    # so shifting the sum's bits left by 23 gives n << 23: 2^n's exponent field, to add to p's.
    scale = b.shl(b.bitcast(shifted, ti), const_like(ti, 23))
    y = b.bitcast(b.add(b.bitcast(p, ti), scale), t)

    # Outside [LO, HI] the lanes above hold garbage (no poison: nothing above can overflow into
    # undefined behaviour); x > HI or NaN gives x + inf (inf, or the NaN), x < LO gives 0.
    y = b.select(b.fcmp_unordered(">", x, c(HI)), b.fadd(x, c(float("inf"))), y)
    return b.select(b.fcmp_ordered("<", x, c(LO)), c(0.0), y)


def fast_exp(ctx: ModuleContext, b: ir.IRBuilder, args: list[ir.Value]) -> ir.Value:
    """`T.fast_exp(x)`: the float32 expansion; float16 through float32, float64 as `llvm.exp`."""
    x = args[0]
    t = x.type
    elem = t.element if isinstance(t, ir.VectorType) else t
    if isinstance(elem, ir.DoubleType):
        fn = ctx.declare(f"llvm.exp.{intrinsic_suffix(t)}", ir.FunctionType(t, [t]))
        return b.call(fn, [x])
    if isinstance(elem, ir.HalfType):
        wide_t = ir.VectorType(F32, t.count) if isinstance(t, ir.VectorType) else F32
        return b.fptrunc(fast_exp_f32(b, b.fpext(x, wide_t), ctx.fp_contract), t)
    return fast_exp_f32(b, x, ctx.fp_contract)
