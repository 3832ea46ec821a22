"""TVM's warp intrinsics in a kernel: shuffles as `shfl.sync`, the active mask as `activemask`.

`T.tvm_warp_shuffle{,_up,_down,_xor}(mask, value, lane_or_delta, width, warp_size)` is CUDA's
`__shfl{,_up,_down,_xor}_sync(mask, value, b, width)` (TVM's CUDA code generator prints it so):
one `llvm.nvvm.shfl.sync.{idx,up,down,bfly}.i32` per 32 bits of the value, with the clamp
operand `c = ((32 - width) << 8) | 0x1f` (`(32 - width) << 8` for `up`), which cuts the warp
into segments of `width` lanes. A value narrower than 32 bits is widened and narrowed back, a
64-bit one is shuffled as its two halves, as CUDA's headers do. `T.tvm_warp_activemask()` is
`llvm.nvvm.activemask` (`activemask.b32`). Vector values and a warp size other than 32 are
refused: the NVIDIA warp has 32 lanes.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from tirc.backends.llvm.types import I32
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Call, IntImm
from tirc.ir.gpu.threads import (
    WARP_ACTIVEMASK,
    WARP_SHUFFLES,
    WARP_SIZE,
    shfl_clamp_low_bits,
    width_ok,
)

I64 = ir.IntType(64)
OPS = (*WARP_SHUFFLES, WARP_ACTIVEMASK)


def emit_warp(cg: Any, e: Call) -> ir.Value:
    """Code for one of OPS in a kernel; `cg` is the kernel code generator."""
    if e.op == WARP_ACTIVEMASK:
        fn = cg.ctx.declare("llvm.nvvm.activemask", ir.FunctionType(I32, []))
        return cg.b.call(fn, [])
    if len(e.args) != 5:
        raise CompileError(f"codegen: T.{e.op} takes (mask, value, lane, width, warp_size), "
                           f"not {len(e.args)} operand(s)", e.span)
    mask_e, value_e, lane_e, width_e, warp_e = e.args
    if not (isinstance(warp_e, IntImm) and warp_e.value == WARP_SIZE):
        raise CompileError(f"codegen: T.{e.op} on an NVIDIA GPU needs the warp size "
                           f"{WARP_SIZE} as its last operand", e.span)
    if value_e.dtype.lanes != 1:
        raise CompileError(f"codegen: T.{e.op} of a vector value ({value_e.dtype}) is not "
                           "supported; shuffle each lane", e.span)
    if isinstance(width_e, IntImm) and not width_ok(width_e.value):
        raise CompileError(f"codegen: T.{e.op}: width {width_e.value} is not a power of two "
                           f"from 1 to {WARP_SIZE}", e.span)
    mode = WARP_SHUFFLES[e.op]
    b = cg.b
    mask = _as_i32(b, cg.expr(mask_e))
    lane = _as_i32(b, cg.expr(lane_e))
    clamp = b.shl(b.sub(ir.Constant(I32, WARP_SIZE), _as_i32(b, cg.expr(width_e))),
                  ir.Constant(I32, 8))
    clamp = b.or_(clamp, ir.Constant(I32, shfl_clamp_low_bits(mode)))
    fn = cg.ctx.declare(f"llvm.nvvm.shfl.sync.{mode}.i32",
                        ir.FunctionType(I32, [I32, I32, I32, I32]))

    def shuffle(word: ir.Value) -> ir.Value:
        return b.call(fn, [mask, word, lane, clamp])

    value = cg.expr(value_e)
    ty = value.type
    bits = _bits(ty)
    if bits is None:
        raise CompileError(f"codegen: T.{e.op} of {value_e.dtype} is not supported", e.span)
    word = value if isinstance(ty, ir.IntType) else b.bitcast(value, ir.IntType(bits))
    if bits == 64:
        low = shuffle(b.trunc(word, I32))
        high = shuffle(b.trunc(b.lshr(word, ir.Constant(I64, 32)), I32))
        out = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))
    elif bits == 32:
        out = shuffle(word)
    else:
        out = b.trunc(shuffle(b.zext(word, I32)), ir.IntType(bits))
    return out if isinstance(ty, ir.IntType) else b.bitcast(out, ty)


def _bits(ty: ir.Type) -> int | None:
    """The width of a scalar register type a shuffle can carry (None: not one)."""
    if isinstance(ty, ir.IntType):
        return ty.width if ty.width <= 32 or ty.width == 64 else None
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}.get(type(ty))


def _as_i32(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """An integer operand as i32 (lane, delta and width are small)."""
    width = v.type.width
    if width == 32:
        return v
    return b.trunc(v, I32) if width > 32 else b.zext(v, I32)
