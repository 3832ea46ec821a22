"""IRModule: the unit the compiler works on, a map from names to functions."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir.function import PrimFunc
from tirc.ir.graph import Function
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import Node
from tirc.ir.schedule import Schedule

BaseFunc = PrimFunc | Function


@dataclass(frozen=True)
class IRModule(Node):
    """Functions by name (in source order), schedules, and module attributes.

    `sources` lists every file the module was read from (for `-MD` dependency output);
    `global_infos` holds `I.module_global_infos` entries, such as the device meshes under
    "mesh" that distributed tensors refer to as "mesh[0]".
    `syntax` is the spelling it was read in ("classic": `tir` / `T.block`, TVM up to 0.2x;
    "tirx": `tirx` / `T.sblock`, TVM 0.27) and `header` its `from tvm.script import ...`
    lines as written; both only choose how the module prints, never what it means.
    """

    functions: dict[str, BaseFunc] = field(default_factory=dict, hash=False)
    schedules: tuple[Schedule, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict, hash=False)
    name: str = "Module"
    sources: tuple[str, ...] = field(default=(), compare=False)
    global_infos: dict[str, tuple[Any, ...]] = field(default_factory=dict, hash=False)
    syntax: str = field(default="classic", compare=False)
    header: tuple[str, ...] = field(default=(), compare=False)

    def __getitem__(self, name: str) -> BaseFunc:
        return self.functions[name]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def prim_funcs(self) -> dict[str, PrimFunc]:
        return {k: f for k, f in self.functions.items() if isinstance(f, PrimFunc)}

    def graph_funcs(self) -> dict[str, Function]:
        return {k: f for k, f in self.functions.items() if isinstance(f, Function)}

    def with_function(self, name: str, func: BaseFunc) -> IRModule:
        """A new module with `name` bound to `func` (added at the end if new)."""
        funcs = dict(self.functions)
        funcs[name] = func
        return self.replace(functions=funcs)  # type: ignore[return-value]

    def without_function(self, name: str) -> IRModule:
        funcs = {k: v for k, v in self.functions.items() if k != name}
        return self.replace(functions=funcs)  # type: ignore[return-value]

    def script(self, syntax: str | None = None) -> str:
        """The module printed in the `.tir` language (as TVM's `IRModule.script()`), in
        `syntax` ("classic" or "tirx"; default: the spelling it was read in)."""
        from tirc.ir.printer import print_module

        return print_module(self, syntax=syntax)
