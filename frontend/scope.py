"""Lexical scopes: which name means which variable, buffer or graph value at each point."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tirc.frontend.context import NO_PYTHON, BuildError, Context
from tirc.ir.diagnostics import did_you_mean
from tirc.ir.dtype import DType
from tirc.ir.expr import Var
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.span import Span


class Poison:
    """Stands for a name whose definition had an error: uses of it report nothing more."""


POISON = Poison()


@dataclass
class EnvThread:
    """`tx = T.env_thread("threadIdx.x")`: a thread variable waiting for its launch."""

    var: Any  # tirc.ir.expr.Var
    tag: str
    launched: bool = False  # a later launch of the same name binds a fresh variable


class Scope:
    """A stack of frames mapping names to definitions; inner frames may shadow outer ones."""

    def __init__(self, ctx: Context, later: set[str] | None = None) -> None:
        self.ctx = ctx
        self.frames: list[dict[str, Any]] = [{}]
        self.later: set[str] = later or set()  # names defined somewhere in this function

    @contextmanager
    def frame(self) -> Iterator[None]:
        self.frames.append({})
        try:
            yield
        finally:
            self.frames.pop()

    def define(self, name: str, value: Any, span: Span | None) -> None:
        """Bind `name` in the innermost frame; a second definition there is an error."""
        old = self.frames[-1].get(name)
        if old is not None and old is not POISON and value is not POISON:
            self.ctx.report(f"redefinition of '{name}'", span)
        self.frames[-1][name] = value

    def rebind(self, name: str, value: Any, span: Span | None) -> None:
        """Bind `name` again where the old value is of the same kind as `value` (a graph
        binding shadowing an earlier one, `y = R.add(x, y)`, as Relax's parser allows);
        otherwise as `define`."""
        old = self.frames[-1].get(name)
        if old is not None and type(old) is type(value):
            self.frames[-1][name] = value
            return
        self.define(name, value, span)

    def poison(self, name: str) -> None:
        """Mark a name whose definition failed, so its uses raise no further errors."""
        if name not in self.frames[-1]:
            self.frames[-1][name] = POISON

    def lookup(self, name: str) -> Any | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        if name in self.ctx.module_symbols:
            return self.module_symbol(name)
        return None

    def module_symbol(self, name: str) -> Any:
        """A name the file declares at its top with `n = TypeVar("n")`, as TVM prints a
        symbolic size several functions share: in each function an int64 variable of that
        name, defined by its first use (as the string form `"n"` of a shape)."""
        var = Var(name, DType("int", 64))
        self.frames[0][name] = var
        return var

    def require(self, name: str, span: Span | None) -> Any:
        """The definition of `name`, or an `unknown name` error (silent for poisoned names)."""
        value = self.lookup(name)
        if value is POISON:
            raise BuildError(name)
        if value is None:
            if name in self.later:
                self.ctx.error(f"'{name}' is used before its definition", span)
            known = [k for frame in self.frames for k in frame] + sorted(self.later)
            self.ctx.error(f"unknown name '{name}'{did_you_mean(name, known)}", span, NO_PYTHON)
        return value
