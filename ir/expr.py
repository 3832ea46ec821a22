"""Scalar and vector expressions of the loop IR (TensorIR's PrimExpr)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.dtype import BOOL, INT32, INT64, DType, dtype, wrap_int
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import IdentityNode, Node

ARITH_OPS = ("add", "sub", "mul", "div", "floordiv", "floormod", "truncdiv", "truncmod",
             "min", "max")
CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGIC_OPS = ("and", "or")
BINARY_OPS = ARITH_OPS + CMP_OPS + LOGIC_OPS

# Math intrinsics callable as T.<name>(...): name -> number of arguments.
class IRTypeError(TypeError):
    """Operands whose dtypes cannot be combined; the frontend turns it into a diagnostic."""


@dataclass(frozen=True)
class PrimExpr(Node):
    """A typed expression; Python operators build IR (use .eq()/.ne() for equality)."""

    def __add__(self, o: ExprLike) -> PrimExpr:
        return binop("add", self, o)

    def __radd__(self, o: ExprLike) -> PrimExpr:
        return binop("add", o, self)

    def __sub__(self, o: ExprLike) -> PrimExpr:
        return binop("sub", self, o)

    def __rsub__(self, o: ExprLike) -> PrimExpr:
        return binop("sub", o, self)

    def __mul__(self, o: ExprLike) -> PrimExpr:
        return binop("mul", self, o)

    def __rmul__(self, o: ExprLike) -> PrimExpr:
        return binop("mul", o, self)

    def __truediv__(self, o: ExprLike) -> PrimExpr:
        return binop("div", self, o)

    def __floordiv__(self, o: ExprLike) -> PrimExpr:
        return binop("floordiv", self, o)

    def __rfloordiv__(self, o: ExprLike) -> PrimExpr:
        return binop("floordiv", o, self)

    def __mod__(self, o: ExprLike) -> PrimExpr:
        return binop("floormod", self, o)

    def __rmod__(self, o: ExprLike) -> PrimExpr:
        return binop("floormod", o, self)

    def __neg__(self) -> PrimExpr:
        return binop("sub", const(0, self.dtype), self)

    def __lt__(self, o: ExprLike) -> PrimExpr:
        return binop("lt", self, o)

    def __le__(self, o: ExprLike) -> PrimExpr:
        return binop("le", self, o)

    def __gt__(self, o: ExprLike) -> PrimExpr:
        return binop("gt", self, o)

    def __ge__(self, o: ExprLike) -> PrimExpr:
        return binop("ge", self, o)

    def eq(self, o: ExprLike) -> PrimExpr:
        return binop("eq", self, o)

    def ne(self, o: ExprLike) -> PrimExpr:
        return binop("ne", self, o)


ExprLike = PrimExpr | int | float | bool


@dataclass(frozen=True)
class IntImm(PrimExpr):
    """An integer (or bool) constant."""

    value: int
    dtype: DType = INT32


@dataclass(frozen=True)
class FloatImm(PrimExpr):
    """A floating-point constant."""

    value: float
    dtype: DType = field(default_factory=lambda: dtype("float32"))


@dataclass(frozen=True)
class StringImm(PrimExpr):
    """A string argument of an intrinsic call."""

    value: str
    dtype: DType = field(default_factory=lambda: dtype("handle"))


@dataclass(frozen=True, eq=False)
class Var(IdentityNode, PrimExpr):
    """A scalar variable: loop variables, symbolic sizes, lets, handles. Identity-compared."""

    name: str = ""
    dtype: DType = INT32

    def __repr__(self) -> str:
        return f"Var({self.name}: {self.dtype})"

    __hash__ = IdentityNode.__hash__
    __eq__ = IdentityNode.__eq__


@dataclass(frozen=True)
class BinOp(PrimExpr):
    """Arithmetic, comparison or logic on two operands; `op` is one of BINARY_OPS."""

    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: DType


@dataclass(frozen=True)
class Not(PrimExpr):
    """Logical negation."""

    a: PrimExpr
    dtype: DType = BOOL


@dataclass(frozen=True)
class Select(PrimExpr):
    """`T.Select(cond, t, f)`: both sides evaluated, one chosen."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: DType


@dataclass(frozen=True)
class Cast(PrimExpr):
    """Conversion to another dtype."""

    value: PrimExpr
    dtype: DType


@dataclass(frozen=True)
class Call(PrimExpr):
    """A call of an intrinsic by name: math (`exp`), `if_then_else`, event ops, ..."""

    op: str
    args: tuple[PrimExpr, ...]
    dtype: DType


@dataclass(frozen=True)
class BufferLoad(PrimExpr):
    """Reading `buffer[indices]`; a ramp index makes a vector load."""

    buffer: Any  # tirc.ir.buffer.Buffer (kept Any to avoid an import cycle)
    indices: tuple[PrimExpr, ...]
    dtype: DType


@dataclass(frozen=True)
class Ramp(PrimExpr):
    """The vector base, base+stride, ..., base+(lanes-1)*stride."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int
    dtype: DType


@dataclass(frozen=True)
class Broadcast(PrimExpr):
    """A scalar repeated over `lanes` lanes."""

    value: PrimExpr
    lanes: int
    dtype: DType


@dataclass(frozen=True)
class Shuffle(PrimExpr):
    """`T.Shuffle(vectors, indices)`: the lanes `indices` of the concatenated lanes of
    `vectors` (a scalar is one lane), as TVM's Shuffle (concatenation, lane extraction)."""

    vectors: tuple[PrimExpr, ...]
    indices: tuple[int, ...]
    dtype: DType


@dataclass(frozen=True)
class Let(PrimExpr):
    """`let var = value in body` inside an expression."""

    var: Var
    value: PrimExpr
    body: PrimExpr
    dtype: DType


# ---- construction helpers ---------------------------------------------------------------


def const(value: int | float | bool, dt: DType | str | None = None) -> PrimExpr:
    """A constant of the given dtype (int32/float32/bool by the Python type if omitted)."""
    if dt is None:
        if isinstance(value, bool):
            dt = BOOL
        elif isinstance(value, int):
            dt = INT32 if -(2**31) <= value < 2**31 else INT64
        else:
            dt = dtype("float32")
    dt = dtype(dt)
    if dt.lanes > 1:
        return Broadcast(const(value, dt.element()), dt.lanes, dt)
    if dt.is_float:
        return FloatImm(float(value), dt)
    return IntImm(int(value), dt)


def as_expr(value: ExprLike, like: DType | None = None) -> PrimExpr:
    """Turn a Python number into a constant, taking the dtype of the other operand."""
    if isinstance(value, PrimExpr):
        return value
    if like is not None:
        if isinstance(value, float) and not like.is_float:
            return const(value)
        return const(value, like)
    return const(value)


def _rank(dt: DType) -> tuple[int, int]:
    order = {"bool": 0, "uint": 1, "int": 2, "bfloat": 3, "float": 4}
    return order.get(dt.kind, -1), dt.bits


def _is_literal(e: PrimExpr) -> bool:
    return isinstance(e, (IntImm, FloatImm))


def unify(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """Bring two operands to one dtype: literals adapt, ints widen; else IRTypeError."""
    if a.dtype == b.dtype:
        return a, b
    da, db = a.dtype, b.dtype
    if da.lanes != db.lanes:
        if da.lanes == 1 and db.lanes > 1:
            return unify(Broadcast(a, db.lanes, da.with_lanes(db.lanes)), b)
        if db.lanes == 1 and da.lanes > 1:
            return unify(a, Broadcast(b, da.lanes, db.with_lanes(da.lanes)))
        raise IRTypeError(f"vector lanes differ: {da} and {db}")
    if _is_literal(b) and not (db.is_float and not da.is_float):
        return a, cast(da, b)
    if _is_literal(a) and not (da.is_float and not db.is_float):
        return cast(db, a), b
    if da.is_int and db.is_int:
        wide = da if _rank(da) >= _rank(db) and da.bits >= db.bits else db
        return cast(wide, a), cast(wide, b)
    raise IRTypeError(f"dtype mismatch: {da} and {db}")


def binop(op: str, a: ExprLike, b: ExprLike) -> PrimExpr:
    """Build a binary operation with dtype rules; raises IRTypeError on a mismatch."""
    if op not in BINARY_OPS:
        raise ValueError(f"unknown binary operator {op}")
    if not isinstance(a, PrimExpr):
        a = as_expr(a, b.dtype if isinstance(b, PrimExpr) else None)
    if not isinstance(b, PrimExpr):
        b = as_expr(b, a.dtype)
    a, b = unify(a, b)
    if op in CMP_OPS or op in LOGIC_OPS:
        if op in LOGIC_OPS and not a.dtype.is_bool:
            raise IRTypeError(f"'{op}' needs bool operands, got {a.dtype}")
        return BinOp(op, a, b, BOOL.with_lanes(a.dtype.lanes))
    if a.dtype.is_bool and op not in ("min", "max"):
        raise IRTypeError(f"arithmetic on bool operands ('{op}')")
    if op in ("floordiv", "floormod", "truncdiv", "truncmod") and not (
            a.dtype.is_int or a.dtype.is_float):
        raise IRTypeError(f"'{op}' needs integer or floating-point operands, got {a.dtype}")
    return BinOp(op, a, b, a.dtype)


def shuffle(vectors: tuple[PrimExpr, ...] | list[PrimExpr], indices: tuple[int, ...] | list[int]
            ) -> Shuffle:
    """A Shuffle of `vectors` (one element dtype) at constant `indices`; IRTypeError when
    the element dtypes differ or an index is outside the concatenated lanes."""
    vectors, indices = tuple(vectors), tuple(int(i) for i in indices)
    if not vectors or not indices:
        raise IRTypeError("T.Shuffle needs at least one vector and one index")
    elem = vectors[0].dtype.element()
    for v in vectors[1:]:
        if v.dtype.element() != elem:
            raise IRTypeError(f"T.Shuffle: vectors of different element dtypes: {elem} and "
                              f"{v.dtype.element()}")
    total = sum(v.dtype.lanes for v in vectors)
    for i in indices:
        if not 0 <= i < total:
            raise IRTypeError(f"T.Shuffle: index {i} is out of range for {total} lane(s)")
    return Shuffle(vectors, indices, elem.with_lanes(len(indices)))


def cast(dt: DType | str, value: ExprLike) -> PrimExpr:
    """Convert `value` to `dt`; constants fold, same-dtype casts vanish."""
    dt = dtype(dt)
    value = as_expr(value)
    if value.dtype == dt:
        return value
    if isinstance(value, IntImm) and dt.lanes == 1:
        if dt.is_bool:
            return IntImm(int(bool(value.value)), dt)
        if dt.is_int:
            return IntImm(wrap_int(value.value, dt), dt)  # a narrowing cast wraps
        return const(float(value.value), dt)
    if isinstance(value, FloatImm) and dt.is_float and dt.lanes == 1:
        return FloatImm(value.value, dt)
    return Cast(value, dt)


def call(op: str, *args: ExprLike, dt: DType | str | None = None) -> PrimExpr:
    """An intrinsic call; math intrinsics take the dtype of their first argument."""
    exprs = tuple(as_expr(a) for a in args)
    out = dtype(dt) if dt is not None else (exprs[0].dtype if exprs else dtype("void"))
    return Call(op, exprs, out)


def select(cond: PrimExpr, t: ExprLike, f: ExprLike) -> PrimExpr:
    t_e, f_e = unify(as_expr(t, f.dtype if isinstance(f, PrimExpr) else None),
                     as_expr(f, t.dtype if isinstance(t, PrimExpr) else None))
    return Select(cond, t_e, f_e, t_e.dtype)


def if_then_else(cond: PrimExpr, t: ExprLike, f: ExprLike) -> PrimExpr:
    """`T.if_then_else`: only the chosen side is evaluated (guards out-of-range loads)."""
    s = select(cond, t, f)
    assert isinstance(s, Select)
    return Call(intrin.IF_THEN_ELSE, (cond, s.true_value, s.false_value), s.dtype)


def logical_and(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return binop("and", a, b)


def logical_or(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return binop("or", a, b)


def logical_not(a: PrimExpr) -> PrimExpr:
    return Not(a, a.dtype)


def minimum(a: ExprLike, b: ExprLike) -> PrimExpr:
    return binop("min", a, b)


def maximum(a: ExprLike, b: ExprLike) -> PrimExpr:
    return binop("max", a, b)


def var(name: str, dt: DType | str = INT32) -> Var:
    return Var(name, dtype(dt))


def index_dtype(*exprs: PrimExpr) -> DType:
    """int64 if any operand is int64, else int32: the dtype index arithmetic is done in."""
    return INT64 if any(e.dtype == INT64 for e in exprs) else INT32


def is_const_int(e: Any, value: int | None = None) -> bool:
    """True for an integer constant (equal to `value`, when given)."""
    return isinstance(e, IntImm) and (value is None or e.value == value)
