"""Constant integer bounds of expressions by interval arithmetic (None means unbounded).

`const_int_bound(e, lookup)` returns inclusive `(lo, hi)`; `lookup(var)` supplies the bounds
of variables (the Analyzer passes its loop ranges and constraints).
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir import intrinsics as intrin
from tirc.ir.dtype import DType, int_range, no_overflow
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    Call,
    Cast,
    IntImm,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    Var,
)

Bound = tuple[int | None, int | None]
VarLookup = Callable[[Var], Bound]

UNBOUNDED: Bound = (None, None)


def dtype_bound(dt: DType) -> Bound:
    """What the dtype alone says about a value: bool and narrow ints are bounded."""
    if dt.is_bool:
        return (0, 1)
    if dt.kind == "uint":
        return (0, (1 << dt.bits) - 1) if dt.bits <= 16 else (0, None)
    if dt.kind == "int" and dt.bits <= 16:
        half = 1 << (dt.bits - 1)
        return (-half, half - 1)
    return UNBOUNDED


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _neg(x: int | None) -> int | None:
    return None if x is None else -x


def _min_known(a: int | None, b: int | None) -> int | None:
    """The smaller of two upper bounds (an unknown one does not constrain)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _max_known(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _min_both(a: int | None, b: int | None) -> int | None:
    """The smaller of two lower bounds (unknown if either is)."""
    return None if a is None or b is None else min(a, b)


def _max_both(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def bound_mul(a: Bound, b: Bound) -> Bound:
    if a[0] is not None and a[0] == a[1]:
        a, b = b, a
    if b[0] is not None and b[0] == b[1]:
        k = b[0]
        if k == 0:
            return (0, 0)
        lo, hi = (a[0], a[1]) if k > 0 else (a[1], a[0])
        return (None if lo is None else lo * k, None if hi is None else hi * k)
    if None not in a and None not in b:
        corners = [x * y for x in a for y in b]  # type: ignore[operator]
        return (min(corners), max(corners))
    if a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] >= 0:
        hi = None if a[1] is None or b[1] is None else a[1] * b[1]
        return (a[0] * b[0], hi)
    return UNBOUNDED


def bound_floordiv(a: Bound, b: Bound) -> Bound:
    lo_b, hi_b = b
    if lo_b is not None and lo_b == hi_b:
        c = lo_b
        if c == 0:
            return UNBOUNDED
        if c > 0:
            return (None if a[0] is None else a[0] // c, None if a[1] is None else a[1] // c)
        return (None if a[1] is None else a[1] // c, None if a[0] is None else a[0] // c)
    if hi_b is not None and lo_b is not None and hi_b < lo_b:
        return UNBOUNDED  # an empty interval: the code is unreachable
    if lo_b is not None and lo_b > 0:
        if None not in a and hi_b is not None:
            corners = [x // y for x in a for y in (lo_b, hi_b)]  # type: ignore[operator]
            return (min(corners), max(corners))
        if a[0] is not None and a[0] >= 0:
            lo = 0 if hi_b is None else a[0] // hi_b
            return (lo, None if a[1] is None else a[1] // lo_b)
    return UNBOUNDED


def bound_floormod(a: Bound, b: Bound) -> Bound:
    lo_b, hi_b = b
    if lo_b is not None and lo_b == hi_b and lo_b > 0:
        c = lo_b
        if a[0] is not None and a[1] is not None and a[0] // c == a[1] // c:
            k = a[0] // c
            return (a[0] - k * c, a[1] - k * c)
        return (0, c - 1)
    if lo_b is not None and lo_b > 0:
        hi = None if hi_b is None else hi_b - 1
        if a[0] is not None and a[0] >= 0:
            hi = _min_known(hi, a[1])
        return (0, hi)
    return UNBOUNDED


def bound_truncdiv(a: Bound, b: Bound) -> Bound:
    if a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] > 0:
        return bound_floordiv(a, b)
    if b[0] is not None and b[0] == b[1] and b[0] > 0:
        c = b[0]

        def tdiv(x: int | None) -> int | None:
            return None if x is None else (abs(x) // c) * (1 if x >= 0 else -1)

        return (tdiv(a[0]), tdiv(a[1]))
    return UNBOUNDED


def bound_truncmod(a: Bound, b: Bound) -> Bound:
    if a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] > 0:
        return bound_floormod(a, b)
    if b[0] is not None and b[0] == b[1] and b[0] != 0:
        m = abs(b[0])
        lo = 0 if a[0] is not None and a[0] >= 0 else -(m - 1)
        hi = 0 if a[1] is not None and a[1] <= 0 else m - 1
        return (lo, hi)
    return UNBOUNDED


def union(a: Bound, b: Bound) -> Bound:
    return (_min_both(a[0], b[0]), _max_both(a[1], b[1]))


def intersect(a: Bound, b: Bound) -> Bound:
    return (_max_known(a[0], b[0]), _min_known(a[1], b[1]))


BoundMemo = dict[int, tuple[PrimExpr, Bound]]


def const_int_bound(e: PrimExpr, lookup: VarLookup, memo: BoundMemo | None = None) -> Bound:
    """Inclusive bounds of integer expression `e`; `(None, None)` when nothing is known.

    `memo` (node id -> (node, bound)) remembers the bounds of sub-expressions for this
    `lookup`, so a sub-expression shared by many parents is bounded once."""
    if isinstance(e, IntImm):
        return (e.value, e.value)
    if isinstance(e, Var):
        return intersect(lookup(e), dtype_bound(e.dtype))
    if memo is None:
        return _bound(e, lookup, None)
    hit = memo.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    out = _bound(e, lookup, memo)
    memo[id(e)] = (e, out)
    return out


def _bound(e: PrimExpr, lookup: VarLookup, memo: BoundMemo | None) -> Bound:
    if isinstance(e, BinOp):
        return _bound_binop(e, lookup, memo)
    if isinstance(e, Not):
        return (0, 1)
    if isinstance(e, Select):
        return union(const_int_bound(e.true_value, lookup, memo),
                     const_int_bound(e.false_value, lookup, memo))
    if isinstance(e, Call) and e.op == intrin.IF_THEN_ELSE and len(e.args) == 3:
        return union(const_int_bound(e.args[1], lookup, memo),
                     const_int_bound(e.args[2], lookup, memo))
    if isinstance(e, Cast):
        return _bound_cast(e, lookup, memo)
    if isinstance(e, Broadcast):
        return const_int_bound(e.value, lookup, memo)
    if isinstance(e, Ramp):
        base = const_int_bound(e.base, lookup, memo)
        last = bound_mul(const_int_bound(e.stride, lookup, memo), (e.lanes - 1, e.lanes - 1))
        out = union(base, (_add(base[0], last[0]), _add(base[1], last[1])))
        return _clip_to_dtype(out, e.dtype) if e.dtype.is_int else out
    if isinstance(e, Shuffle) and e.dtype.is_int:
        out = const_int_bound(e.vectors[0], lookup, memo)
        for v in e.vectors[1:]:
            out = union(out, const_int_bound(v, lookup, memo))
        return out
    if isinstance(e, Let):
        value = const_int_bound(e.value, lookup, memo)

        def inner(v: Var) -> Bound:
            return value if v is e.var else lookup(v)

        return const_int_bound(e.body, inner)  # another lookup: not the same memo
    if e.dtype.is_int or e.dtype.is_bool:
        return dtype_bound(e.dtype)
    return UNBOUNDED


def _bound_binop(e: BinOp, lookup: VarLookup, memo: BoundMemo | None) -> Bound:
    if e.op in ("eq", "ne", "lt", "le", "gt", "ge", "and", "or"):
        return (0, 1)
    a = const_int_bound(e.a, lookup, memo)
    b = const_int_bound(e.b, lookup, memo)
    op = e.op
    if op == "add":
        out = (_add(a[0], b[0]), _add(a[1], b[1]))
    elif op == "sub":
        out = (_add(a[0], _neg(b[1])), _add(a[1], _neg(b[0])))
    elif op == "mul":
        out = bound_mul(a, b)
    elif op == "floordiv":
        out = bound_floordiv(a, b)
    elif op == "floormod":
        out = bound_floormod(a, b)
    elif op in ("truncdiv", "div"):
        out = bound_truncdiv(a, b) if e.dtype.is_int else UNBOUNDED
    elif op == "truncmod":
        out = bound_truncmod(a, b)
    elif op == "min":
        out = (_min_both(a[0], b[0]), _min_known(a[1], b[1]))
    elif op == "max":
        out = (_max_known(a[0], b[0]), _max_both(a[1], b[1]))
    else:
        out = UNBOUNDED
    if not e.dtype.is_int:
        return UNBOUNDED
    return _clip_to_dtype(out, e.dtype)


def _clip_to_dtype(b: Bound, dt: DType) -> Bound:
    """A bound that may leave the dtype's range wraps: then only the dtype range is known.
    An unknown end may leave it too, unless the dtype is int32 or int64, whose arithmetic
    never overflows (compiled code takes it as undefined, as C and TVM do)."""
    lo, hi = int_range(dt)
    if (b[0] is not None and b[0] < lo) or (b[1] is not None and b[1] > hi):
        return dtype_bound(dt)
    if None in b and not no_overflow(dt):
        return dtype_bound(dt)
    return b


def _bound_cast(e: Cast, lookup: VarLookup, memo: BoundMemo | None) -> Bound:
    if not (e.dtype.is_int or e.dtype.is_bool):
        return UNBOUNDED
    src = e.value.dtype
    if e.dtype.is_bool:
        return (0, 1)
    if src.is_int or src.is_bool:
        lo, hi = const_int_bound(e.value, lookup, memo)
        slo, shi = (0, 1) if src.is_bool else int_range(src)
        tlo, thi = int_range(e.dtype)
        if slo < tlo or shi > thi:
            # a cast that may not keep every source value (a narrowing or a change of sign):
            # an unknown end is the source dtype's end, which may wrap in the target (int64
            # values from 2**31 are negative int32s, uint64 ones from 2**63 negative int64s)
            lo, hi = slo if lo is None else lo, shi if hi is None else hi
        return _clip_to_dtype((lo, hi), e.dtype)
    return dtype_bound(e.dtype)
