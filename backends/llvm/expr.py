"""Expression code generation: PrimExpr to LLVM values through llvmlite's IRBuilder.

Signed integers use floor division and modulo where the IR says `floordiv`/`floormod` (correct
for negative operands) and truncating ones for `truncdiv`/`truncmod`/`div`; a divisor that is not
a constant is guarded so that division by zero gives 0 instead of a trap. On floats, as TVM
lowers them, `floordiv` is floor(a / b), `floormod` a - floor(a / b) * b, `truncdiv` a / b and
`truncmod` `frem` (C's fmod). Float `min`/`max` of vectors are compares and selects (a
`vmaxps` and a NaN fix-up on x86); of scalars they are `llvm.minimum`/`llvm.maximum`:
NaN-propagating like `np.minimum`/`np.maximum` (and, unlike `llvm.maxnum`, a reduction over
them vectorizes on every x86 CPU model LLVM 22 knows; `maxnum` reductions trip an assertion in
the loop vectorizer's cost model for znver4/znver5).
Comparisons are ordered except `!=` (NaN != NaN is true).
"""

from __future__ import annotations

import math
import struct

from llvmlite import ir
from tirc.backends.llvm.builtins import NO_OPS
from tirc.backends.llvm.casts import convert
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.events import OPS as EVENT_OPS
from tirc.backends.llvm.events import emit_event
from tirc.backends.llvm.intrinsics import call_llvm, emit_math
from tirc.backends.llvm.lanes import lane_of
from tirc.backends.llvm.memory import MemoryAccess, const_int
from tirc.backends.llvm.types import (
    I32,
    bf16_round,
    const_like,
    reg_type,
    splat,
    undef,
)
from tirc.ir import intrinsics as intrin
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType, no_overflow
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Var,
    if_then_else,
)

_ICMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
# Float comparisons are ordered (false with a NaN) except `!=`, which is true with a NaN.
_UNORDERED = {"ne"}


def _wrap_int(value: int, dt: DType) -> int:
    """`value` as a signed two's complement integer of dt.bits (how LLVM prints constants)."""
    bits = dt.bits
    value &= (1 << bits) - 1
    return value - (1 << bits) if bits > 1 and value >= 1 << (bits - 1) else value


def _narrow(value: float, fmt: str) -> float:
    """`value` rounded to the IEEE format `fmt` ("f" float32, "e" float16), to nearest even;
    too large a magnitude is an infinity, as numpy's conversion gives."""
    try:
        return float(struct.unpack(fmt, struct.pack(fmt, value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _round_float(value: float, dt: DType) -> float:
    """A float constant rounded to the precision of its dtype (plain `struct`, so that code
    generation needs no numpy)."""
    if dt.kind == "bfloat":
        if math.isnan(value):
            return value
        bits = struct.unpack("<I", struct.pack("<f", _narrow(value, "f")))[0]
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return float(struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0])
    if dt.bits == 16:
        return _narrow(value, "e")
    if dt.bits == 32:
        return _narrow(value, "f")
    return float(value)


_CONTRACTIBLE = {
    "add": ir.IRBuilder.fadd,
    "sub": ir.IRBuilder.fsub,
    "mul": ir.IRBuilder.fmul,
}


class ExprCodegen(MemoryAccess):
    """Emits expressions; subclasses provide the builder, environment and module context."""

    ctx: ModuleContext
    b: ir.IRBuilder
    env: dict[Var, ir.Value]

    def expr(self, e: PrimExpr) -> ir.Value:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise CompileError(f"codegen: unsupported expression {type(e).__name__}", e.span)
        return method(e)

    def expr_as(self, e: PrimExpr, dt: DType) -> ir.Value:
        """Emit `e` converted to dtype `dt`."""
        return convert(self.b, self.expr(e), e.dtype, dt)

    # ---- leaves ----------------------------------------------------------------------

    def expr_IntImm(self, e: IntImm) -> ir.Value:
        value = int(bool(e.value)) if e.dtype.is_bool else _wrap_int(e.value, e.dtype)
        return const_like(reg_type(e.dtype), value)

    def expr_FloatImm(self, e: FloatImm) -> ir.Value:
        return const_like(reg_type(e.dtype), _round_float(e.value, e.dtype))

    def expr_StringImm(self, e: StringImm) -> ir.Value:
        return self.ctx.string(e.value)

    def expr_Var(self, e: Var) -> ir.Value:
        if e not in self.env:
            raise CompileError(f"codegen: variable '{e.name}' is used but never defined", e.span)
        return self.env[e]

    def expr_Let(self, e: Let) -> ir.Value:
        old = self.env.get(e.var)
        self.env[e.var] = self.expr(e.value)
        try:
            return self.expr(e.body)
        finally:
            if old is None:
                del self.env[e.var]
            else:
                self.env[e.var] = old

    # ---- vectors ---------------------------------------------------------------------

    def expr_Ramp(self, e: Ramp) -> ir.Value:
        base, stride = const_int(e.base), const_int(e.stride)
        elem = e.dtype.element()
        vt = reg_type(e.dtype)
        if base is not None and stride is not None:
            return ir.Constant(vt, [_wrap_int(base + i * stride, elem) for i in range(e.lanes)])
        lanes = ir.Constant(vt, list(range(e.lanes)))
        b0 = splat(self.b, self.expr_as(e.base, elem), e.lanes)
        s0 = splat(self.b, self.expr_as(e.stride, elem), e.lanes)
        return self.b.add(b0, self.b.mul(s0, lanes))

    def expr_Broadcast(self, e: Broadcast) -> ir.Value:
        return splat(self.b, self.expr(e.value), e.lanes)

    def expr_Shuffle(self, e: Shuffle) -> ir.Value:
        """Lanes of the concatenated vectors: one `shufflevector` when one vector, or two of
        one dtype, hold them all; else the lanes picked one by one (LLVM merges them)."""
        b = self.b
        values = [self.expr(v) for v in e.vectors]
        dtypes = {v.dtype for v in e.vectors}
        if e.dtype.lanes > 1 and len(values) <= 2 and len(dtypes) == 1 \
                and e.vectors[0].dtype.lanes > 1:
            second = values[1] if len(values) == 2 else undef(values[0].type)
            mask = ir.Constant(ir.VectorType(I32, len(e.indices)), list(e.indices))
            return b.shuffle_vector(values[0], second, mask)
        where: list[tuple[ir.Value, int | None]] = []  # each lane: its value, lane within
        for v, value in zip(e.vectors, values):
            where += [(value, None)] if v.dtype.lanes == 1 else \
                [(value, k) for k in range(v.dtype.lanes)]
        picked: list[ir.Value] = []
        for i in e.indices:
            value, k = where[i]
            picked.append(value if k is None else b.extract_element(value, ir.Constant(I32, k)))
        if e.dtype.lanes == 1:
            return picked[0]
        out: ir.Value = undef(reg_type(e.dtype))
        for k, lane in enumerate(picked):
            out = b.insert_element(out, lane, ir.Constant(I32, k))
        return out

    # ---- arithmetic ------------------------------------------------------------------

    def _operands(self, e: BinOp) -> tuple[ir.Value, ir.Value, DType]:
        """Both operands in one dtype (the wider of the two, if a pass left them apart)."""
        da, db = e.a.dtype, e.b.dtype
        dt = da if da == db else _common(da, db)
        return self.expr_as(e.a, dt), self.expr_as(e.b, dt), dt

    def expr_BinOp(self, e: BinOp) -> ir.Value:
        a, c, dt = self._operands(e)
        b = self.b
        op = e.op
        if op in _ICMP:
            return self._compare(op, a, c, dt)
        if op == "and":
            return b.and_(a, c)
        if op == "or":
            return b.or_(a, c)
        if dt.is_bool:
            if op in ("min", "max"):
                return b.and_(a, c) if op == "min" else b.or_(a, c)
            raise CompileError(f"codegen: '{op}' on bool operands", e.span)
        if dt.is_float:
            out = self._float_arith(op, a, c, e)
            return bf16_round(b, out) if dt.kind == "bfloat" else out
        return self._int_arith(op, a, c, dt, e)

    def _compare(self, op: str, a: ir.Value, c: ir.Value, dt: DType) -> ir.Value:
        if dt.is_float:
            if op in _UNORDERED:
                return self.b.fcmp_unordered(_ICMP[op], a, c)
            return self.b.fcmp_ordered(_ICMP[op], a, c)
        if dt.kind == "int":
            return self.b.icmp_signed(_ICMP[op], a, c)
        return self.b.icmp_unsigned(_ICMP[op], a, c)

    def _float_arith(self, op: str, a: ir.Value, c: ir.Value, e: BinOp) -> ir.Value:
        b = self.b
        if op in _CONTRACTIBLE:
            # `contract` lets LLVM fuse a multiply and an add into one FMA, as C compilers do
            # by default (-ffp-contract=on): one rounding instead of two.
            inst = _CONTRACTIBLE[op](b, a, c)
            if self.ctx.fp_contract:
                inst.flags.append("contract")
            return inst
        if op in ("div", "truncdiv"):
            return b.fdiv(a, c)
        if op == "truncmod":
            return b.frem(a, c)  # C's fmod: the remainder with the dividend's sign
        if op == "floordiv":
            return call_llvm(self.ctx, b, "llvm.floor", [b.fdiv(a, c)])
        if op == "floormod":
            q = call_llvm(self.ctx, b, "llvm.floor", [b.fdiv(a, c)])
            return b.fsub(a, b.fmul(q, c))
        if op in ("min", "max"):
            if isinstance(a.type, ir.VectorType):
                return self._vector_min_max(op, a, c)
            return call_llvm(self.ctx, b, "llvm.minimum" if op == "min" else "llvm.maximum", [a, c])
        raise CompileError(f"codegen: '{op}' on floating-point operands", e.span)

    def _vector_min_max(self, op: str, a: ir.Value, c: ir.Value) -> ir.Value:
        """Lane-wise float min/max, NaN-propagating like np.maximum/np.minimum (on a tie of
        signed zeros either zero may come back, as with the scalar `llvm.maximum`, which orders
        -0 below +0). x86 has no instruction for `llvm.maximum` and expands it into about six
        dependent ones, which made a vectorized row maximum the slowest pass of a softmax. Here
        `c > a ? c : a` (one `vmaxps`, which gives `a` when either is NaN), then NaN where `c`
        is NaN: in `acc = max(acc, x)` only the first is on the chain through `acc`. Vectors
        only: a scalar reduction keeps `llvm.maximum`, which LLVM's loop vectorizer recognises.
        """
        b = self.b
        c_wins = b.fcmp_ordered(">" if op == "max" else "<", c, a)
        chosen = b.select(c_wins, c, a)
        nan = ir.Constant(a.type, [ir.Constant(a.type.element, float("nan"))] * a.type.count)
        return b.select(b.fcmp_unordered("uno", c, c), nan, chosen)

    def _int_arith(self, op: str, a: ir.Value, c: ir.Value, dt: DType, e: BinOp) -> ir.Value:
        b = self.b
        signed = dt.kind == "int"
        flags = ["nsw"] if no_overflow(dt) else []
        if op == "add":
            return b.add(a, c, flags=flags)
        if op == "sub":
            return b.sub(a, c, flags=flags)
        if op == "mul":
            return b.mul(a, c, flags=flags)
        if op in ("min", "max"):
            cmp = "<" if op == "min" else ">"
            test = b.icmp_signed(cmp, a, c) if signed else b.icmp_unsigned(cmp, a, c)
            return b.select(test, a, c)
        if op in ("div", "truncdiv", "truncmod", "floordiv", "floormod"):
            return self._int_division(op, a, c, dt, const_int(e.b))
        raise CompileError(f"codegen: unknown operator '{op}'", e.span)

    def _int_division(self, op: str, a: ir.Value, c: ir.Value, dt: DType,
                      divisor: int | None) -> ir.Value:
        b = self.b
        signed = dt.kind == "int"
        want_mod = op in ("truncmod", "floormod")
        zero, one = const_like(a.type, 0), const_like(a.type, 1)
        guarded = divisor is None or divisor == 0 or (signed and divisor == -1)
        safe = c
        if guarded:
            bad = b.icmp_signed("==", c, zero)
            if signed:
                bad = b.or_(bad, b.icmp_signed("==", c, const_like(a.type, -1)))
            safe = b.select(bad, one, c)
        if not signed:
            out = b.urem(a, safe) if want_mod else b.udiv(a, safe)
            return b.select(b.icmp_unsigned("==", c, zero), zero, out) if guarded else out
        if divisor is not None and 0 < divisor < 1 << (dt.bits - 1) and \
                op in ("floordiv", "floormod"):
            return _floor_by_positive(b, op, a, divisor)
        q, r = b.sdiv(a, safe), b.srem(a, safe)
        if guarded:
            # c == 0 gives 0; c == -1 gives -a (quotient) and 0 (remainder), without a trap.
            is_zero = b.icmp_signed("==", c, zero)
            is_neg1 = b.icmp_signed("==", c, const_like(a.type, -1))
            q = b.select(is_zero, zero, b.select(is_neg1, b.sub(zero, a), q))
            r = b.select(b.or_(is_zero, is_neg1), zero, r)
        if op in ("div", "truncdiv"):
            return q
        if op == "truncmod":
            return r
        # Floor semantics: step toward -inf when the remainder's sign differs from the divisor's.
        adjust = b.and_(b.icmp_signed("!=", r, zero),
                        b.icmp_signed("<", b.xor(r, c), zero))
        if op == "floordiv":
            return b.sub(q, b.zext(adjust, a.type))
        return b.add(r, b.select(adjust, c, zero))

    def expr_Not(self, e: Not) -> ir.Value:
        return self.b.not_(self.expr(e.a))

    def expr_Select(self, e: Select) -> ir.Value:
        cond = self.expr(e.condition)
        t = self.expr_as(e.true_value, e.dtype)
        f = self.expr_as(e.false_value, e.dtype)
        if e.dtype.lanes > 1 and e.condition.dtype.lanes == 1:
            return self.b.select(cond, t, f)
        if e.condition.dtype.lanes > 1 and e.dtype.lanes == 1:
            raise CompileError("codegen: vector condition with a scalar select", e.span)
        return self.b.select(cond, t, f)

    def expr_Cast(self, e: Cast) -> ir.Value:
        return convert(self.b, self.expr(e.value), e.value.dtype, e.dtype)

    # ---- calls -----------------------------------------------------------------------

    def expr_Call(self, e: Call) -> ir.Value:
        if e.op == intrin.IF_THEN_ELSE:
            return self._if_then_else(e)
        if e.op == intrin.EXTRACT_LANE:
            vec = self.expr(e.args[0])
            return self.b.extract_element(vec, ir.Constant(I32, const_int(e.args[1])))
        if e.op in EVENT_OPS:
            return emit_event(self, e)
        if e.op.startswith("tirc."):
            method = getattr(self, "call_" + e.op[5:].replace(".", "_"), None)
            if method is None:
                raise CompileError(f"codegen: unknown intrinsic '{e.op}'", e.span)
            return method(e)
        builtin = getattr(self, "builtin_" + e.op, None)
        if builtin is not None:
            return builtin(e)
        if e.op in NO_OPS:
            return ir.Constant(I32, 0)
        dt = e.dtype
        args = [self.expr_as(a, dt) for a in e.args]
        out = emit_math(self.ctx, self.b, e.op, args, dt)
        if out is None:
            raise CompileError(f"codegen: unsupported intrinsic T.{e.op}", e.span)
        return bf16_round(self.b, out) if dt.kind == "bfloat" else out

    def _if_then_else(self, e: Call) -> ir.Value:
        cond_e, t_e, f_e = e.args
        if e.dtype.lanes > 1:
            out: ir.Value = undef(reg_type(e.dtype))
            for i in range(e.dtype.lanes):
                lane = if_then_else(lane_of(cond_e, i), lane_of(t_e, i), lane_of(f_e, i))
                out = self.b.insert_element(out, self.expr(lane), ir.Constant(I32, i))
            return out
        b = self.b
        cond = self.expr(cond_e)
        then_bb = b.append_basic_block("ite.then")
        else_bb = b.append_basic_block("ite.else")
        merge_bb = b.append_basic_block("ite.end")
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        tv = self.expr_as(t_e, e.dtype)
        then_end = b.block
        b.branch(merge_bb)
        b.position_at_end(else_bb)
        fv = self.expr_as(f_e, e.dtype)
        else_end = b.block
        b.branch(merge_bb)
        b.position_at_end(merge_bb)
        phi = b.phi(reg_type(e.dtype))
        phi.add_incoming(tv, then_end)
        phi.add_incoming(fv, else_end)
        return phi


def _floor_by_positive(b: ir.IRBuilder, op: str, a: ir.Value, divisor: int) -> ir.Value:
    """Signed `floordiv`/`floormod` by a positive constant: for a power of two an arithmetic
    shift or a mask (exact for every sign of `a`), else the truncating result stepped down
    when the remainder is negative. The general sequence gives the same values, in more
    instructions that LLVM then has to fold, once per unrolled copy."""
    shift = divisor.bit_length() - 1
    if divisor == 1 << shift:
        if op == "floordiv":
            return b.ashr(a, const_like(a.type, shift))
        return b.and_(a, const_like(a.type, divisor - 1))
    c = const_like(a.type, divisor)
    r = b.srem(a, c)
    negative = b.icmp_signed("<", r, const_like(a.type, 0))
    if op == "floordiv":
        return b.sub(b.sdiv(a, c), b.zext(negative, a.type))
    return b.add(r, b.select(negative, c, const_like(a.type, 0)))


def _common(a: DType, b: DType) -> DType:
    """The dtype two mismatched operands meet in: more lanes, then wider or floating."""
    lanes = max(a.lanes, b.lanes)
    ea, eb = a.element(), b.element()
    if ea == eb:
        return ea.with_lanes(lanes)
    if ea.is_float != eb.is_float:
        pick = ea if ea.is_float else eb
    else:
        pick = ea if ea.bits >= eb.bits else eb
    return pick.with_lanes(lanes)
