"""Values in the reference interpreter and their dtype semantics.

Scalars: integers are Python ints wrapped to their dtype, bools are Python bools, floats are
numpy scalars of their own precision (float32 arithmetic stays float32, as in compiled code).
Vectors (lanes > 1) are 1-D numpy arrays of the element dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType
from tirc.ir.expr import PrimExpr
from tirc.ir.span import Span

Env = list[Any]
Fn = Callable[[Env], Any]


class InterpreterError(RuntimeError):
    """The interpreted program failed: out-of-bounds access, failed assert, bad argument...

    `span` is the source location of the failing access or statement, when known.
    """

    def __init__(self, message: str, span: Span | None = None) -> None:
        super().__init__(message)
        self.span = span


class ReturnValue(Exception):  # noqa: N818 (control flow, not an error)
    """`T.ret(value)` unwinding a loop function's body to its caller with `value`."""

    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


class LoopJump(Exception):  # noqa: N818 (control flow, not an error)
    """`T.break_loop()` / `T.continue_loop()` unwinding to the innermost loop that runs it."""


class BreakLoop(LoopJump):
    """Leave the innermost loop."""


class ContinueLoop(LoopJump):
    """Go on with the next iteration of the innermost loop."""


class Unset:
    """The value of a variable slot before its definition runs."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<unset {self.name}>"


def np_dtype(dt: DType) -> np.dtype:
    """The numpy dtype of one element of `dt` (bfloat16 and the narrow floats through
    ml_dtypes)."""
    name = dt.element().numpy_name()
    if name == "bfloat16" or dt.is_narrow_float:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def int_range(dt: DType) -> tuple[int, int]:
    if dt.kind == "uint":
        return 0, (1 << dt.bits) - 1
    half = 1 << (dt.bits - 1)
    return -half, half - 1


def make_wrap(dt: DType) -> Callable[[int], int]:
    """Reduce a Python int to the range of integer dtype `dt` (two's complement)."""
    lo, _ = int_range(dt)
    mask = (1 << dt.bits) - 1

    def wrap(v: int) -> int:
        return ((v - lo) & mask) + lo

    return wrap


def to_scalar(value: Any, dt: DType) -> Any:
    """Convert a Python or numpy number to the interpreter's scalar of dtype `dt`."""
    if dt.is_bool:
        return bool(value)
    if dt.is_int:
        if isinstance(value, (float, np.floating)):
            if not math.isfinite(float(value)):
                raise InterpreterError(f"cannot convert {value} to {dt}")
            value = math.trunc(float(value))
        return make_wrap(dt)(int(value))
    if dt.is_float:
        return np_dtype(dt).type(value)
    return value


def to_vector(value: Any, dt: DType) -> np.ndarray:
    """Convert lanes to a numpy vector of the element dtype."""
    return np.asarray(value).astype(np_dtype(dt), copy=False)


def format_index(idx: list[Any]) -> str:
    parts = []
    for i in idx:
        if isinstance(i, np.ndarray):
            parts.append("[" + ", ".join(str(int(x)) for x in i) + "]")
        else:
            parts.append(str(int(i)))
    return ", ".join(parts)


def format_shape(dims: list[int] | tuple[int, ...]) -> str:
    return str(tuple(int(d) for d in dims))


class Slots:
    """Environment slots: one per variable (by identity) and per named internal value."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.names: list[str] = []
        self.keep: list[Any] = []

    def of(self, obj: Any, name: str | None = None) -> int:
        k = self.index.get(id(obj))
        if k is None:
            k = len(self.names)
            self.index[id(obj)] = k
            self.names.append(name if name is not None else getattr(obj, "name", "?"))
            self.keep.append(obj)
        return k

    def new(self, name: str) -> int:
        return self.of(object(), name)

    def fresh_env(self) -> Env:
        return [Unset(n) for n in self.names]


class Compiler(Protocol):
    """What intrinsic and external-call rules need of the expression compiler
    (tirc.ir.interpreter.expr.ExprCompiler)."""

    slots: Slots
    externs: dict[str, Callable[..., Any]]
    # The module's loop functions by name, for `tirc.call_prim` (None outside a module).
    callee: Callable[[str], Any] | None

    def compile(self, e: PrimExpr) -> Fn:
        """The closure computing `e` from an environment."""

    def address(self, load: PrimExpr) -> tuple[Buffer, Fn]:
        """The buffer of `E[i]` and the closure computing its offset."""
