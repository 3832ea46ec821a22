"""What a pass is: a small named object that turns one IRModule into another."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from tirc.ir.deep_call import deep_call
from tirc.ir.diagnostics import Diagnostic
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule


@dataclass
class PassContext:
    """Everything a pass may consult: optimisation level, target, config, instruments.

    `config` holds `--pass-config KEY=VALUE` entries (strings; passes parse their own);
    `notes` collects remarks a pass wants shown with `--print-changed` (e.g. a loop left scalar);
    `warnings` collects warning diagnostics about the program, which the command line prints
    (and `-Werror` turns into errors).
    """

    opt_level: int = 2
    target: Any = None
    config: dict[str, str] = field(default_factory=dict)
    instruments: list[Any] = field(default_factory=list)
    disabled: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)

    def note(self, message: str) -> None:
        self.notes.append(message)

    def warn(self, diagnostic: Diagnostic) -> None:
        self.warnings.append(diagnostic)


@dataclass(frozen=True)
class Pass:
    """A module-to-module transformation with a kebab-case `name` and a one-line description.

    Dataclass fields of a subclass are its options.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        """Run the pass on its own, on a big-stack thread (`tirc.ir.deep_call`)."""
        return deep_call(self.run, mod, ctx or PassContext())


@dataclass(frozen=True)
class PrimFuncPass(Pass):
    """A pass that rewrites each loop function on its own."""

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed = False
        funcs = {}
        for name, func in mod.functions.items():
            if isinstance(func, PrimFunc):
                new = self.transform(func, mod, ctx)
                changed |= new is not func
                funcs[name] = new
            else:
                funcs[name] = func
        return mod.replace(functions=funcs) if changed else mod  # type: ignore[return-value]

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        raise NotImplementedError
