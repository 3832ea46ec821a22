"""Expressions of the reference interpreter, compiled once into Python closures.

Each PrimExpr becomes a function of the environment (a list of slot values, one slot per
variable and per buffer storage); this is much faster than walking the tree at every step.
Dtype semantics are exact: integers wrap, `//`/`%` floor and `T.truncdiv`/`T.truncmod`
truncate, floats compute in their own precision (float `//` is floor(a / b), `%` is
a - floor(a / b) * b, `T.truncmod` is fmod, as TVM lowers them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    BufferLoad,
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
)
from tirc.ir.interpreter import sparse
from tirc.ir.interpreter.buffer import BufferAccess
from tirc.ir.interpreter.intrin import compile_call
from tirc.ir.interpreter.values import (
    Env,
    Fn,
    InterpreterError,
    Slots,
    Unset,
    int_range,
    make_wrap,
    np_dtype,
    to_scalar,
    to_vector,
)
from tirc.ir.sparse.buffer import SparseBuffer


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _const_fn(value: Any) -> Fn:
    return lambda env: value


class ExprCompiler:
    """Compiles expressions of one function; buffer accesses go through `BufferAccess`."""

    def __init__(self, slots: Slots, externs: dict[str, Callable[..., Any]] | None = None) -> None:
        self.slots = slots
        self.buffers = BufferAccess(slots.of, self.compile, slots.new)
        # Python stand-ins for the C functions `tirc.call_packed` calls, by symbol.
        self.externs = dict(externs or {})
        # The module's compiled loop functions by name, for direct calls (`tirc.call_prim`).
        self.callee: Callable[[str], Any] | None = None

    def compile(self, e: PrimExpr) -> Fn:
        method = getattr(self, "c_" + type(e).__name__, None)
        if method is None:
            raise InterpreterError(f"the interpreter cannot evaluate {type(e).__name__}")
        return method(e)

    def constant(self, e: PrimExpr) -> Any:
        """The value of a constant expression, or None when `e` is not a constant."""
        if isinstance(e, IntImm):
            return bool(e.value) if e.dtype.is_bool else e.value
        if isinstance(e, FloatImm):
            return np_dtype(e.dtype).type(e.value)
        return None

    # ---- leaves ----------------------------------------------------------------------

    def c_IntImm(self, e: IntImm) -> Fn:
        value = self.constant(e)
        return _const_fn(value)

    def c_FloatImm(self, e: FloatImm) -> Fn:
        return _const_fn(self.constant(e))

    def c_StringImm(self, e: StringImm) -> Fn:
        return _const_fn(e.value)

    def c_Var(self, e: Var) -> Fn:
        k = self.slots.of(e)
        name = e.name

        def read(env: Env) -> Any:
            v = env[k]
            if isinstance(v, Unset):
                raise InterpreterError(f"variable '{name}' is used before it is defined")
            return v

        return read

    def c_Let(self, e: Let) -> Fn:
        k = self.slots.of(e.var)
        fv = self.compile(e.value)
        fb = self.compile(e.body)

        def let(env: Env) -> Any:
            env[k] = fv(env)
            return fb(env)

        return let

    # ---- arithmetic ------------------------------------------------------------------

    def c_BinOp(self, e: BinOp) -> Fn:
        fa = self.compile(e.a)
        fb = self.compile(e.b)
        if e.op in ("and", "or"):
            return _logic(e.op, fa, fb, e.dtype.lanes > 1)
        if e.dtype.lanes > 1 or e.a.dtype.lanes > 1:
            return _vector_binop(e.op, fa, fb, e.a.dtype)
        if e.op in ("eq", "ne", "lt", "le", "gt", "ge"):
            return _compare(e.op, fa, fb)
        if e.dtype.is_int:
            return _int_binop(e.op, fa, fb, e.dtype, self.constant(e.b))
        if e.dtype.is_float:
            return _float_binop(e.op, fa, fb, e.dtype)
        if e.dtype.is_bool and e.op in ("min", "max"):
            pick = min if e.op == "min" else max
            return lambda env: pick(fa(env), fb(env))
        raise InterpreterError(f"operator '{e.op}' on {e.dtype} is not supported")

    def c_Not(self, e: Not) -> Fn:
        fa = self.compile(e.a)
        if e.dtype.lanes > 1:
            return lambda env: np.logical_not(fa(env))
        return lambda env: not fa(env)

    def c_Select(self, e: Select) -> Fn:
        fc = self.compile(e.condition)
        ft = self.compile(e.true_value)
        ff = self.compile(e.false_value)
        if e.dtype.lanes > 1:
            return lambda env: np.where(fc(env), ft(env), ff(env))

        def select(env: Env) -> Any:
            # TVM's Select evaluates both operands (T.if_then_else is the lazy one), as the
            # compiled code does: a load out of bounds in the arm not taken is an error.
            c, t, f = fc(env), ft(env), ff(env)
            return t if c else f

        return select

    def c_Cast(self, e: Cast) -> Fn:
        fv = self.compile(e.value)
        dt = e.dtype
        if dt.lanes > 1:
            target = np_dtype(dt)
            return lambda env: np.asarray(fv(env)).astype(target)
        src = e.value.dtype
        if dt.is_int and (src.is_int or src.is_bool):
            lo, hi = int_range(dt)
            wrap = make_wrap(dt)

            def int_cast(env: Env) -> int:
                v = int(fv(env))
                return v if lo <= v <= hi else wrap(v)

            return int_cast
        if dt.is_float:
            ftype = np_dtype(dt).type
            return lambda env: ftype(fv(env))
        if dt.is_bool:
            return lambda env: bool(fv(env))
        return lambda env: to_scalar(fv(env), dt)

    def c_Ramp(self, e: Ramp) -> Fn:
        fb = self.compile(e.base)
        fs = self.compile(e.stride)
        lanes = np.arange(e.lanes, dtype=np.int64)
        target = np_dtype(e.dtype)
        return lambda env: (fb(env) + fs(env) * lanes).astype(target)

    def c_Broadcast(self, e: Broadcast) -> Fn:
        fv = self.compile(e.value)
        n = e.lanes
        target = np_dtype(e.dtype)
        return lambda env: np.full(n, fv(env), dtype=target)

    def c_Shuffle(self, e: Shuffle) -> Fn:
        fns = [self.compile(v) for v in e.vectors]
        picks = np.asarray(e.indices, dtype=np.int64)
        elem, dt = e.dtype.element(), e.dtype

        def pick(env: Env) -> Any:
            lanes = np.concatenate([np.atleast_1d(to_vector(f(env), elem)) for f in fns])
            out = lanes[picks]
            return to_scalar(out[0], dt) if dt.lanes == 1 else out

        return pick

    # ---- memory ----------------------------------------------------------------------

    def c_BufferLoad(self, e: BufferLoad) -> Fn:
        fns = [self.compile(i) for i in e.indices]
        if isinstance(e.buffer, SparseBuffer):
            return sparse.load_fn(self.buffers, e.buffer, fns, e.span, e.indices)
        vector = any(i.dtype.lanes > 1 for i in e.indices)
        return self.buffers.load_fn(e.buffer, fns, vector, e.span)

    def address(self, load: PrimExpr) -> tuple[Buffer, Fn]:
        """The storage slot and offset closure of `E[i]` (for event intrinsics)."""
        if not isinstance(load, BufferLoad):
            raise InterpreterError("an event operation needs a buffer element like E[i]")
        fns = [self.compile(i) for i in load.indices]
        return load.buffer, self.buffers.offset_fn(load.buffer, fns, False)

    # ---- calls -----------------------------------------------------------------------

    def c_Call(self, e: Call) -> Fn:
        return compile_call(self, e)


def _logic(op: str, fa: Fn, fb: Fn, vector: bool) -> Fn:
    if vector:
        np_op = np.logical_and if op == "and" else np.logical_or
        return lambda env: np_op(fa(env), fb(env))
    if op == "and":
        return lambda env: bool(fa(env)) and bool(fb(env))
    return lambda env: bool(fa(env)) or bool(fb(env))


def _compare(op: str, fa: Fn, fb: Fn) -> Fn:
    if op == "lt":
        return lambda env: fa(env) < fb(env)
    if op == "le":
        return lambda env: fa(env) <= fb(env)
    if op == "gt":
        return lambda env: fa(env) > fb(env)
    if op == "ge":
        return lambda env: fa(env) >= fb(env)
    if op == "eq":
        return lambda env: fa(env) == fb(env)
    return lambda env: fa(env) != fb(env)


def _div_zero(op: str) -> InterpreterError:
    return InterpreterError(f"integer division by zero ({op})")


def _int_binop(op: str, fa: Fn, fb: Fn, dt: DType, const_b: Any) -> Fn:
    lo, hi = int_range(dt)
    wrap = make_wrap(dt)
    if op in ("add", "sub", "mul") and isinstance(const_b, int):
        c = const_b
        if op == "add":

            def add_c(env: Env) -> int:
                v = fa(env) + c
                return v if lo <= v <= hi else wrap(v)

            return add_c
        if op == "sub":

            def sub_c(env: Env) -> int:
                v = fa(env) - c
                return v if lo <= v <= hi else wrap(v)

            return sub_c

        def mul_c(env: Env) -> int:
            v = fa(env) * c
            return v if lo <= v <= hi else wrap(v)

        return mul_c
    if op == "add":

        def add(env: Env) -> int:
            v = fa(env) + fb(env)
            return v if lo <= v <= hi else wrap(v)

        return add
    if op == "sub":

        def sub(env: Env) -> int:
            v = fa(env) - fb(env)
            return v if lo <= v <= hi else wrap(v)

        return sub
    if op == "mul":

        def mul(env: Env) -> int:
            v = fa(env) * fb(env)
            return v if lo <= v <= hi else wrap(v)

        return mul
    if op == "min":
        return lambda env: min(fa(env), fb(env))
    if op == "max":
        return lambda env: max(fa(env), fb(env))
    table: dict[str, Callable[[int, int], int]] = {
        "floordiv": lambda a, b: a // b,
        "floormod": lambda a, b: a % b,
        "truncdiv": _trunc_div,
        "div": _trunc_div,
        "truncmod": lambda a, b: a - b * _trunc_div(a, b),
    }
    fn = table.get(op)
    if fn is None:
        raise InterpreterError(f"operator '{op}' on {dt} is not supported")

    def divide(env: Env) -> int:
        a = fa(env)
        b = fb(env)
        if b == 0:
            raise _div_zero(op)
        v = fn(a, b)
        return v if lo <= v <= hi else wrap(v)

    return divide


def _float_binop(op: str, fa: Fn, fb: Fn, dt: DType) -> Fn:
    if op == "add":
        return lambda env: fa(env) + fb(env)
    if op == "sub":
        return lambda env: fa(env) - fb(env)
    if op == "mul":
        return lambda env: fa(env) * fb(env)
    if op == "div":
        return lambda env: fa(env) / fb(env)
    if op == "min":

        def fmin(env: Env) -> Any:
            a = fa(env)
            b = fb(env)
            return a if a < b or a != a else b

        return fmin
    if op == "max":

        def fmax(env: Env) -> Any:
            a = fa(env)
            b = fb(env)
            return a if a > b or a != a else b

        return fmax
    if op == "truncdiv":
        return lambda env: fa(env) / fb(env)
    if op in ("floordiv", "floormod", "truncmod"):
        return lambda env: _float_division(op, fa(env), fb(env))
    raise InterpreterError(f"operator '{op}' on {dt} is not supported")


def _float_division(op: str, a: Any, b: Any) -> Any:
    """Float `floordiv`/`floormod`/`truncmod` of scalars or lanes, as TVM lowers them:
    floor(a / b), a - floor(a / b) * b (each step rounded, as the generated code does) and
    C's fmod."""
    if op == "truncmod":
        return np.fmod(a, b)
    q = np.floor(a / b)
    return q if op == "floordiv" else a - q * b


def _vector_binop(op: str, fa: Fn, fb: Fn, operand: DType) -> Fn:
    """Lane-wise operations on numpy vectors (integer lanes wrap natively in numpy)."""
    if op in ("floordiv", "floormod", "truncdiv", "truncmod") or (op == "div" and operand.is_int):

        def divide(env: Env) -> Any:
            a = fa(env)
            b = fb(env)
            if operand.is_float:
                return a / b if op == "truncdiv" else _float_division(op, a, b)
            if np.any(b == 0):
                raise _div_zero(op)
            if op == "floordiv":
                return np.floor_divide(a, b)
            if op == "floormod":
                return np.mod(a, b)
            rem = np.fmod(a, b)
            if op == "truncmod":
                return rem
            return ((a - rem) // b).astype(a.dtype)

        return divide
    table: dict[str, Callable[[Any, Any], Any]] = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "min": np.minimum, "max": np.maximum, "eq": np.equal, "ne": np.not_equal,
        "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    }
    fn = table.get(op)
    if fn is None:
        raise InterpreterError(f"vector operator '{op}' is not supported")
    return lambda env: fn(fa(env), fb(env))


def eval_expr(e: PrimExpr, bindings: dict[Var, Any] | None = None) -> Any:
    """Evaluate one expression with the given variable values (slow path, for shapes)."""
    slots = Slots()
    compiler = ExprCompiler(slots)
    fn = compiler.compile(e)
    env = slots.fresh_env()
    for var, value in (bindings or {}).items():
        k = slots.index.get(id(var))
        if k is not None:
            env[k] = to_scalar(value, var.dtype)
    with np.errstate(all="ignore"):
        return fn(env)


class ExprEvaluator:
    """Evaluates expressions under variable bindings, compiling each expression node once
    (for checkers that evaluate the same few expressions many times)."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Slots, Fn, PrimExpr]] = {}

    def __call__(self, e: PrimExpr, bindings: dict[Var, Any]) -> Any:
        """The value of `e` with the variables of `bindings` set (others unset)."""
        hit = self.cache.get(id(e))
        if hit is None:
            slots = Slots()
            hit = (slots, ExprCompiler(slots).compile(e), e)
            self.cache[id(e)] = hit
        slots, fn, _ = hit
        env = slots.fresh_env()
        for var, value in bindings.items():
            k = slots.index.get(id(var))
            if k is not None:
                env[k] = to_scalar(value, var.dtype)
        with np.errstate(all="ignore"):
            return fn(env)
