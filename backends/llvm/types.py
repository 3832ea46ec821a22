"""IR dtypes as LLVM types: the register form values live in and the storage form in memory.

bool is `i1` in registers and `i8` in memory (numpy's one-byte bool); bfloat16 is computed as
`float` (rounded back to bfloat16 after every operation) and stored as its `i16` bits; every
other scalar maps directly (float16 is LLVM's `half`). Vectors wrap these in `<lanes x T>`.
"""

from __future__ import annotations

from llvmlite import ir
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import DType

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def _scalar_reg(dt: DType) -> ir.Type:
    if dt.kind == "bool":
        return I1
    if dt.kind in ("int", "uint"):
        return ir.IntType(dt.bits)
    if dt.kind == "bfloat":
        return F32
    if dt.kind == "float":
        return {16: ir.HalfType(), 32: F32, 64: ir.DoubleType()}[dt.bits]
    if dt.kind == "handle":
        return PTR
    raise CompileError(f"codegen: dtype '{dt}' has no LLVM type")


def _scalar_mem(dt: DType) -> ir.Type:
    if dt.kind == "bool":
        return I8
    if dt.kind == "bfloat":
        return I16
    return _scalar_reg(dt)


def _vector(t: ir.Type, lanes: int) -> ir.Type:
    return t if lanes == 1 else ir.VectorType(t, lanes)


def reg_type(dt: DType) -> ir.Type:
    """The type an SSA value of dtype `dt` has."""
    return _vector(_scalar_reg(dt.element()), dt.lanes)


def mem_type(dt: DType) -> ir.Type:
    """The type one element (or vector of elements) of dtype `dt` has in memory."""
    return _vector(_scalar_mem(dt.element()), dt.lanes)


def elem_align(dt: DType) -> int:
    """Natural alignment of one element in memory, the alignment entry points require."""
    return max(1, dt.bits // 8) if not dt.is_bool else 1


def int_type_like(t: ir.Type, bits: int) -> ir.Type:
    """An integer type of `bits` with the vector shape of `t`."""
    if isinstance(t, ir.VectorType):
        return ir.VectorType(ir.IntType(bits), t.count)
    return ir.IntType(bits)


def undef(t: ir.Type) -> ir.Constant:
    """`undef` of type `t`, written in one word also for a vector (llvmlite spells a vector
    constant lane by lane: `<float undef, float undef, ...>`, text to print and parse again)."""
    c = ir.Constant(t, None)
    c.constant = ir.Undefined
    return c


def splat(b: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """A vector of `lanes` copies of a scalar value."""
    if lanes == 1:
        return value
    vt = ir.VectorType(value.type, lanes)
    if isinstance(value, ir.Constant):
        return ir.Constant(vt, [value] * lanes)
    one = b.insert_element(undef(vt), value, ir.Constant(I32, 0))
    return b.shuffle_vector(one, undef(vt), ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))


def const_like(t: ir.Type, value: int | float) -> ir.Constant:
    """A constant `value` of type `t`, splatted over lanes for vector types."""
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
    return ir.Constant(t, value)


def bf16_round(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """Round a float (or float vector) to the nearest bfloat16, ties to even, kept as float."""
    return bf16_to_float(b, float_to_bf16(b, value))


def float_to_bf16(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """The i16 bits of the bfloat16 nearest to a float: round to nearest even, NaN kept quiet."""
    t32 = int_type_like(value.type, 32)
    bits = b.bitcast(value, t32)
    lsb = b.and_(b.lshr(bits, const_like(t32, 16)), const_like(t32, 1))
    rounded = b.add(b.add(bits, const_like(t32, 0x7FFF)), lsb)
    high = b.lshr(rounded, const_like(t32, 16))
    nan_bits = b.or_(b.lshr(bits, const_like(t32, 16)), const_like(t32, 0x40))
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, nan_bits, high), int_type_like(value.type, 16))


def bf16_to_float(b: ir.IRBuilder, bits16: ir.Value) -> ir.Value:
    """The float value of bfloat16 bits."""
    t32 = int_type_like(bits16.type, 32)
    wide = b.shl(b.zext(bits16, t32), const_like(t32, 16))
    ft = ir.VectorType(F32, bits16.type.count) if isinstance(bits16.type, ir.VectorType) else F32
    return b.bitcast(wide, ft)


def to_memory(b: ir.IRBuilder, value: ir.Value, dt: DType) -> ir.Value:
    """Convert a register value to its storage form."""
    if dt.is_bool:
        return b.zext(value, mem_type(dt))
    if dt.kind == "bfloat":
        return float_to_bf16(b, value)
    return value


def from_memory(b: ir.IRBuilder, value: ir.Value, dt: DType) -> ir.Value:
    """Convert a loaded storage value to its register form."""
    if dt.is_bool:
        return b.icmp_unsigned("!=", value, const_like(value.type, 0))
    if dt.kind == "bfloat":
        return bf16_to_float(b, value)
    return value


def intrinsic_suffix(t: ir.Type) -> str:
    """The overload suffix of an LLVM intrinsic for type `t` (`f32`, `v16f32`, `i64`)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{intrinsic_suffix(t.element)}"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    raise CompileError(f"codegen: no intrinsic suffix for LLVM type {t}")
