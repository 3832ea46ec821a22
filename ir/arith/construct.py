"""Folding constructors for the index expressions that lowering passes build.

Passes build offsets such as `i * 256 + 0 + j * 1`; the constructors here (`add`, `sub`, `mul`)
drop the trivial parts and fold constants as they build, and keep ramps affine
(`Ramp(b, s, n) * c` is `Ramp(b * c, s * c, n)`), so printed IR stays readable even before the
simplifier (tirc.ir.arith.Analyzer) runs. `fold` re-folds a whole expression bottom-up.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.arith.fold import trunc_div, trunc_mod
from tirc.ir.dtype import wrap_int
from tirc.ir.expr import BinOp, Broadcast, Call, Cast, IntImm, PrimExpr, Ramp, binop, cast
from tirc.ir.visitor import Mutator, any_node

_FOLDABLE = ("add", "sub", "mul", "floordiv", "floormod", "truncdiv", "truncmod", "min", "max")


def _eval(op: str, a: int, b: int) -> int | None:
    """Python value of an integer operation, or None when it cannot be folded (x / 0)."""
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if b == 0:
        return None
    if op == "floordiv":
        return a // b
    if op == "floormod":
        return a % b
    return trunc_div(a, b) if op == "truncdiv" else trunc_mod(a, b)


def is_int_const(e: Any, value: int | None = None) -> bool:
    """True for a scalar integer constant (equal to `value`, when given)."""
    return (isinstance(e, IntImm) and e.dtype.lanes == 1 and not e.dtype.is_bool
            and (value is None or e.value == value))


def _pure(e: PrimExpr) -> bool:
    """True when dropping `e` loses nothing: it holds no call (loads and arithmetic are pure)."""
    return not any_node(e, lambda n: isinstance(n, Call))


def build_binop(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`binop(op, a, b)`, with integer constants folded and identities removed."""
    e = binop(op, a, b)
    if not isinstance(e, BinOp) or not e.dtype.is_int or e.dtype.lanes != 1:
        return e
    x, y = e.a, e.b
    if is_int_const(x) and is_int_const(y) and op in _FOLDABLE:
        value = _eval(op, x.value, y.value)
        if value is not None:
            return IntImm(wrap_int(value, e.dtype), e.dtype)
    if op in ("add", "sub") and is_int_const(y, 0):
        return x
    if op == "add" and is_int_const(x, 0):
        return y
    if op == "mul" and (is_int_const(x, 0) and _pure(y) or is_int_const(y, 0) and _pure(x)):
        return IntImm(0, e.dtype)
    if op == "mul" and is_int_const(y, 1):
        return x
    if op == "mul" and is_int_const(x, 1):
        return y
    if op in ("floordiv", "truncdiv") and is_int_const(y, 1):
        return x
    if op in ("add", "sub") and is_int_const(y) and isinstance(x, BinOp) \
            and x.op in ("add", "sub") and is_int_const(x.b):
        # (u + c1) + c2  ->  u + (c1 + c2)
        c = x.b.value if x.op == "add" else -x.b.value
        c += y.value if op == "add" else -y.value
        return add(x.a, IntImm(wrap_int(c, e.dtype), e.dtype))
    return e


def _ramp_parts(e: PrimExpr) -> tuple[PrimExpr, PrimExpr, int] | None:
    return (e.base, e.stride, e.lanes) if isinstance(e, Ramp) else None


def _scalar_int(e: PrimExpr) -> bool:
    return e.dtype.lanes == 1 and e.dtype.is_int


def _unbroadcast(e: PrimExpr, lanes: int) -> PrimExpr:
    """The scalar of an integer broadcast of `lanes` lanes (so ramp arithmetic can use it)."""
    if isinstance(e, Broadcast) and e.lanes == lanes and e.value.dtype.is_int:
        return e.value
    return e


def make_ramp(base: PrimExpr, stride: PrimExpr, lanes: int) -> PrimExpr:
    """A ramp, or a broadcast when the stride is the constant 0."""
    if is_int_const(stride, 0):
        return Broadcast(base, lanes, base.dtype.with_lanes(lanes))
    stride = cast(base.dtype, stride) if stride.dtype != base.dtype else stride
    return Ramp(base, stride, lanes, base.dtype.with_lanes(lanes))


def add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a + b, folded; a ramp plus a scalar (or a ramp) stays a ramp."""
    ra, rb = _ramp_parts(a), _ramp_parts(b)
    a = _unbroadcast(a, rb[2]) if rb else a
    b = _unbroadcast(b, ra[2]) if ra else b
    if ra and rb and ra[2] == rb[2]:
        return make_ramp(add(ra[0], rb[0]), add(ra[1], rb[1]), ra[2])
    if ra and _scalar_int(b):
        return make_ramp(add(ra[0], b), ra[1], ra[2])
    if rb and _scalar_int(a):
        return make_ramp(add(a, rb[0]), rb[1], rb[2])
    return build_binop("add", a, b)


def sub(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a - b, folded; ramps stay ramps."""
    ra, rb = _ramp_parts(a), _ramp_parts(b)
    a = _unbroadcast(a, rb[2]) if rb else a
    b = _unbroadcast(b, ra[2]) if ra else b
    if ra and rb and ra[2] == rb[2]:
        return make_ramp(sub(ra[0], rb[0]), sub(ra[1], rb[1]), ra[2])
    if ra and _scalar_int(b):
        return make_ramp(sub(ra[0], b), ra[1], ra[2])
    if rb and _scalar_int(a):
        return make_ramp(sub(a, rb[0]), sub(IntImm(0, rb[1].dtype), rb[1]), rb[2])
    return build_binop("sub", a, b)


def mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a * b, folded; a ramp times a scalar stays a ramp."""
    ra, rb = _ramp_parts(a), _ramp_parts(b)
    a = _unbroadcast(a, rb[2]) if rb else a
    b = _unbroadcast(b, ra[2]) if ra else b
    if ra and _scalar_int(b):
        return make_ramp(mul(ra[0], b), mul(ra[1], b), ra[2])
    if rb and _scalar_int(a):
        return make_ramp(mul(a, rb[0]), mul(a, rb[1]), rb[2])
    return build_binop("mul", a, b)


class _Folder(Mutator):
    """Re-folds integer BinOps bottom-up; an expression with nothing to fold is kept as is."""

    def visit_Cast(self, e: Cast) -> PrimExpr:
        v = self.visit(e.value)
        if is_int_const(v) and e.dtype.is_int and e.dtype.lanes == 1:
            return cast(e.dtype, v)  # a constant converted (an int narrowing wraps)
        return e if v is e.value else e.replace(value=v)

    def visit_BinOp(self, e: BinOp) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        same = a is e.a and b is e.b
        if same and not (is_int_const(a) or is_int_const(b)):
            return e
        if a.dtype != b.dtype:
            return e if same else e.replace(a=a, b=b)
        builders = {"add": add, "sub": sub, "mul": mul}
        builder = builders.get(e.op)
        new = builder(a, b) if builder else build_binop(e.op, a, b)
        if same and isinstance(new, BinOp) and new.op == e.op and new.a is a and new.b is b:
            return e
        return new


def fold(e: Any) -> Any:
    """Integer constant folding over an expression (or any IR subtree)."""
    return _Folder().visit(e)
