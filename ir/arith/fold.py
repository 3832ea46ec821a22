"""Constant folding with the IR's dtype semantics.

Integers wrap to their dtype; `//` and `%` floor, `T.truncdiv`/`T.truncmod` (and integer `/`)
truncate; a division by zero is never folded. On floats, as TVM: `floordiv` is floor(a / b),
`floormod` a - floor(a / b) * b, `truncdiv` a / b and `truncmod` C's fmod. Floats are computed
in their own precision through numpy (float32 stays float32), and a fold that would produce inf
or nan is left alone.
"""

from __future__ import annotations

import math
from typing import Any

from tirc.ir.dtype import BOOL, DType, wrap_int
from tirc.ir.expr import FloatImm, IntImm, PrimExpr


def _float_type(dt: DType) -> Any:
    """The numpy scalar type of a float dtype (None for bfloat16 and others): float folding
    computes in the dtype's own precision. numpy loads only when a float folds."""
    if dt.kind != "float" or dt.bits not in (16, 32, 64):
        return None
    import numpy as np

    return {16: np.float16, 32: np.float32, 64: np.float64}[dt.bits]


def is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype.is_bool and e.value != 0


def is_false(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype.is_bool and e.value == 0


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def trunc_mod(a: int, b: int) -> int:
    return a - b * trunc_div(a, b)


def _compare(op: str, a: int | float, b: int | float) -> bool:
    if op == "eq":
        return a == b
    if op == "ne":
        return a != b
    if op == "lt":
        return a < b
    if op == "le":
        return a <= b
    if op == "gt":
        return a > b
    return a >= b


def _fold_int(op: str, a: int, b: int, dt: DType) -> PrimExpr | None:
    if op in ("floordiv", "floormod", "truncdiv", "truncmod", "div") and b == 0:
        return None
    if op == "add":
        v = a + b
    elif op == "sub":
        v = a - b
    elif op == "mul":
        v = a * b
    elif op == "floordiv":
        v = a // b
    elif op == "floormod":
        v = a % b
    elif op in ("truncdiv", "div"):
        v = trunc_div(a, b)
    elif op == "truncmod":
        v = trunc_mod(a, b)
    elif op == "min":
        v = min(a, b)
    elif op == "max":
        v = max(a, b)
    else:
        return None
    return IntImm(wrap_int(v, dt), dt)


def _fold_float(op: str, a: float, b: float, dt: DType) -> PrimExpr | None:
    ftype = _float_type(dt)
    if ftype is None:
        return None
    import numpy as np

    x, y = ftype(a), ftype(b)
    with np.errstate(all="ignore"):
        if op == "add":
            v = x + y
        elif op == "sub":
            v = x - y
        elif op == "mul":
            v = x * y
        elif op in ("div", "truncdiv"):
            v = x / y if y != 0 else ftype("nan")
        elif op == "floordiv":
            v = np.floor(x / y) if y != 0 else ftype("nan")
        elif op == "floormod":  # TVM's a - floor(a / b) * b, each step rounded as the code does
            v = x - np.floor(x / y) * y if y != 0 else ftype("nan")
        elif op == "truncmod":  # C's fmod (LLVM's frem): exact
            v = np.fmod(x, y) if y != 0 else ftype("nan")
        elif op == "min":
            v = x if x < y else y  # as the interpreter (and a compare-select) does
        elif op == "max":
            v = x if x > y else y
        else:
            return None
    if not math.isfinite(float(v)):
        return None
    return FloatImm(float(v), dt)


def fold_binop(op: str, a: PrimExpr, b: PrimExpr, dt: DType) -> PrimExpr | None:
    """The constant value of `a <op> b` when both are scalar constants; else None."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            return IntImm(int(_compare(op, a.value, b.value)), BOOL)
        if op == "and":
            return IntImm(int(bool(a.value) and bool(b.value)), BOOL)
        if op == "or":
            return IntImm(int(bool(a.value) or bool(b.value)), BOOL)
        if dt.is_int and dt.lanes == 1:
            return _fold_int(op, a.value, b.value, dt)
        if dt.is_bool and op in ("min", "max"):
            return IntImm(min(a.value, b.value) if op == "min" else max(a.value, b.value), dt)
        return None
    if isinstance(a, FloatImm) and isinstance(b, FloatImm):
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            ftype = _float_type(a.dtype)
            if ftype is None:
                return None
            return IntImm(int(_compare(op, ftype(a.value), ftype(b.value))), BOOL)
        return _fold_float(op, a.value, b.value, dt)
    return None


def fold_cast(value: PrimExpr, dt: DType) -> PrimExpr | None:
    """The constant `T.Cast(dt, value)` of a scalar constant; None when it cannot fold."""
    if dt.lanes != 1 or not isinstance(value, (IntImm, FloatImm)):
        return None
    v = value.value
    if dt.is_bool:
        return IntImm(int(v != 0), dt)
    if dt.is_int:
        if isinstance(value, FloatImm):
            if not math.isfinite(v):
                return None
            v = math.trunc(v)
        return IntImm(wrap_int(int(v), dt), dt)
    ftype = _float_type(dt)
    if ftype is None:
        return None
    import numpy as np

    with np.errstate(all="ignore"):
        out = float(ftype(v))
    if not math.isfinite(out):
        return None
    return FloatImm(out, dt)
