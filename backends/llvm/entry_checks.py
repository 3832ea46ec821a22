"""`tirc.check_tensor(h, prefix, dtype, ndim, code, bits, lanes, device, elem_bytes)`: an entry
point's checks of one DLTensor argument, as one call to a function the module defines once for
each rank it checks.

The checks, in order, each with the message make-entry's separate checks gave: the pointer is
not NULL; the rank is `ndim`; the type code and bits; the lanes; the device type; the data
pointer (plus its byte offset) is not NULL; for `ndim > 0`, the shape pointer is not NULL, no
extent is negative, and the size in bytes fits in int64 (an empty tensor always does). The
function returns 0 when all hold, else 1 with the message in the error buffer. One shared
function instead of nine inline checks per argument: the entry's code was more than half of
what LLVM read for a small kernel, and code generation time follows its size.
"""

from __future__ import annotations

from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.dltensor import (
    DEVICE,
    DTYPE,
    NDIM,
    SHAPE,
    data_address,
    dtype_kind_name,
    load_field,
)
from tirc.backends.llvm.types import I8, I16, I32, I64, PTR
from tirc.ir.analysis.entry_signature import tuple_format

CHECKER = "tirc.check_tensor"
INT64_MAX = (1 << 63) - 1


def tensor_checker(ctx: ModuleContext, ndim: int) -> ir.Function:
    """The module's checking function for rank `ndim` (defined on first use): `i32 (ptr h,
    ptr prefix, ptr dtype, i32 code, i32 bits, i32 lanes, i32 device, i64 elem_bytes)`."""
    name = f"{CHECKER}.{ndim}"
    existing = ctx.module.globals.get(name)
    if isinstance(existing, ir.Function):
        return existing
    fnty = ir.FunctionType(I32, [PTR, PTR, PTR, I32, I32, I32, I32, I64])
    fn = ir.Function(ctx.module, fnty, name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")  # run once per argument per call: speed is not its point
    h, prefix, dtype, code, bits, lanes, device, elem = fn.args
    for arg, arg_name in zip(fn.args, ("h", "prefix", "dtype", "code", "bits", "lanes",
                                       "device", "elem_bytes")):
        arg.name = arg_name
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def check(ok: ir.Value, fmt: str, *values: ir.Value) -> None:
        good, bad = fn.append_basic_block("ok"), fn.append_basic_block("fail")
        b.cbranch(ok, good, bad).set_weights([1 << 20, 1])
        b.position_at_end(bad)
        ctx.set_error(b, fmt, [prefix, *values])
        b.ret(ir.Constant(I32, 1))
        b.position_at_end(good)

    def i64(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    check(b.icmp_unsigned("!=", h, ir.Constant(PTR, None)), "%sDLTensor pointer is NULL")
    got = b.sext(load_field(b, h, I32, NDIM), I64)
    if ndim == 0:
        check(b.icmp_signed("==", got, i64(0)),
              "%sexpected a scalar (a 0-d tensor), got %lld dimension(s)", got)
    else:
        check(b.icmp_signed("==", got, i64(ndim)),
              f"%sexpected {ndim} dimension{'s' if ndim != 1 else ''}, got %lld", got)
    got_code = b.zext(load_field(b, h, I8, DTYPE, 0), I32)
    got_bits = b.zext(load_field(b, h, I8, DTYPE, 1), I32)
    check(b.and_(b.icmp_signed("==", got_code, code), b.icmp_signed("==", got_bits, bits)),
          "%sexpected dtype %s, got %s%lld", dtype, dtype_kind_name(ctx, b, got_code),
          b.sext(got_bits, I64))
    got_lanes = b.zext(load_field(b, h, I16, DTYPE, 2), I32)
    check(b.icmp_signed("==", got_lanes, lanes),
          "%sexpected dtype %s, got %lld lanes per element", dtype, b.sext(got_lanes, I64))
    got_device = load_field(b, h, I32, DEVICE, 0)
    check(b.icmp_signed("==", got_device, device),
          "%sexpected a CPU tensor (device_type %d), got device_type %lld", device,
          b.sext(got_device, I64))
    check(b.icmp_unsigned("!=", data_address(b, h), ir.Constant(PTR, None)),
          "%sdata pointer is NULL")
    if ndim:
        shape = load_field(b, h, PTR, SHAPE)
        check(b.icmp_unsigned("!=", shape, ir.Constant(PTR, None)), "%sshape pointer is NULL")
        dims = [b.load(b.gep(shape, [i64(k)], source_etype=I64), typ=I64) for k in range(ndim)]
        tuple_text = tuple_format(ndim)
        nonneg = [b.icmp_signed(">=", d, i64(0)) for d in dims]
        check(_all(b, nonneg), f"%snegative extent in shape {tuple_text}", *dims)
        # size * max(d, 1) stays within int64 at every step; after a step that would not,
        # the size restarts at 1 (the message is the same whichever step failed)
        size: ir.Value = elem
        fits = []
        for d in dims:
            nonzero = b.select(b.icmp_signed(">", d, i64(1)), d, i64(1))
            ok = b.icmp_signed("<=", size, b.sdiv(i64(INT64_MAX), nonzero))
            fits.append(ok)
            size = b.select(ok, b.mul(size, nonzero), i64(1))
        empty = [b.icmp_signed("==", d, i64(0)) for d in dims]
        check(b.or_(_any(b, empty), _all(b, fits)),
              f"%sshape {tuple_text} has more than 2^63 - 1 bytes (%lld per element)",
              *dims, elem)
    b.ret(ir.Constant(I32, 0))
    return fn


def _all(b: ir.IRBuilder, conds: list[ir.Value]) -> ir.Value:
    """The conjunction of one or more i1 values."""
    out = conds[0]
    for c in conds[1:]:
        out = b.and_(out, c)
    return out


def _any(b: ir.IRBuilder, conds: list[ir.Value]) -> ir.Value:
    """The disjunction of one or more i1 values."""
    out = conds[0]
    for c in conds[1:]:
        out = b.or_(out, c)
    return out
