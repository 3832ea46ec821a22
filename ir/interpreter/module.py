"""Whole modules in the reference interpreter: loop functions (cached) and graph functions.

    Interpreter(mod).call("main", x, w)       # any function of a module; graph ones return
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tirc.ir.function import PrimFunc
from tirc.ir.interpreter.graph import GraphRunner
from tirc.ir.interpreter.prim_func import DEFAULT_MAX_WHILE, CompiledPrimFunc
from tirc.ir.interpreter.values import InterpreterError
from tirc.ir.module import IRModule


class Interpreter:
    """Runs the functions of a module; loop functions are compiled once and cached.

    `externs` maps `R.call_dps_packed` symbols to Python callables taking the input and
    output arrays (destination-passing style); host loop functions call them through
    `tirc.call_packed` the same way.
    """

    def __init__(self, mod: IRModule, externs: dict[str, Callable[..., Any]] | None = None,
                 max_while_iterations: int = DEFAULT_MAX_WHILE) -> None:
        self.mod = mod
        self.externs = dict(externs or {})
        self.max_while = max_while_iterations
        self._compiled: dict[str, CompiledPrimFunc] = {}
        self.size_checks: dict[int, tuple[Any, tuple[Any, ...]]] = {}  # graph.GraphRunner's

    def prim_func(self, name: str) -> CompiledPrimFunc:
        compiled = self._compiled.get(name)
        if compiled is None:
            func = self.mod.functions.get(name)
            if not isinstance(func, PrimFunc):
                raise InterpreterError(f"no loop function named '{name}' in the module")
            compiled = CompiledPrimFunc(func, self.max_while, self.externs, self.prim_func)
            self._compiled[name] = compiled
        return compiled

    def call(self, name: str, *args: Any) -> Any:
        """Run function `name`: a loop function in place (returning its value, None when it
        has none), a graph function returning its value (an array, or a tuple)."""
        func = self.mod.functions.get(name)
        if func is None:
            raise InterpreterError(f"no function named '{name}' in the module")
        if isinstance(func, PrimFunc):
            return self.prim_func(name)(*args)
        return GraphRunner(self).run(func, list(args))


def run_graph_func(mod: IRModule, name: str, args: Sequence[Any],
                   externs: dict[str, Callable[..., Any]] | None = None) -> Any:
    """Run graph function `name` of `mod` on numpy arrays; returns its result."""
    return Interpreter(mod, externs).call(name, *args)
