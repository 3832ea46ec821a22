"""What a pass is: a small named object that turns one IRModule into another.

A pass's options are the fields of its dataclass, as xDSL declares them: `--passes
'unroll{max-extent=8}'` sets `Unroll.max_extent`. An option declared with `option(...,
config="unroll.max-extent")` also reads that `--pass-config` key, which applies where the pass
spec leaves the option at its default (the pass manager calls `configured` before each run).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import field
from typing import Any, ClassVar

from tirc.ir.deep_call import deep_call
from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.span import Span


@dataclass
class PassContext:
    """Everything a pass may consult: optimisation level, target, config, instruments.

    `config` holds `--pass-config KEY=VALUE` entries (strings; each is an alias of a pass
    option, see `option`); `notes` collects remarks a pass wants shown with `--print-changed`
    (e.g. a loop left scalar); `warnings` collects warning diagnostics about the program, which
    the command line prints (and `-Werror` turns into errors).
    """

    opt_level: int = 2
    target: Any = None
    config: dict[str, str] = field(default_factory=dict)
    instruments: list[Any] = field(default_factory=list)
    disabled: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    # Functions apply-schedules ran their own @S.schedule on in this run: the default rules
    # leave them alone (what the user's schedule left plain stays plain).
    scheduled: set[str] = field(default_factory=set)

    def note(self, message: str) -> None:
        self.notes.append(message)

    def warn(self, message: str | Diagnostic, span: Span | None = None) -> None:
        """A warning about the user's program at `span` (a message, or a whole diagnostic);
        the command line prints it, or stops on it under -Werror."""
        self.warnings.append(message if isinstance(message, Diagnostic)
                             else Diagnostic("warning", message, span))


Check = Callable[[Any], "str | None"]


def option(default: Any, *, config: str | None = None, check: Check | None = None,
           parse: Callable[[str], Any] | None = None, doc: str = "") -> Any:
    """A pass option: a dataclass field with its default, the `--pass-config` key that sets it
    (`config`), a `check` of a value (returns what is wrong, or None), a `parse` of the config
    text when the field's type is not enough (raising its own CompileError), and a `doc` line
    for `tirc passes -v`."""
    return field(default=default, metadata={"config": config, "check": check, "parse": parse,
                                            "doc": doc})


def at_least(minimum: int) -> Check:
    """A check that an integer option is at least `minimum` (None means 'not set')."""
    def check(value: Any) -> str | None:
        if value is not None and value < minimum:
            return f"must be at least {minimum}, got {value}"
        return None

    return check


def option_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The options of a pass class (its init fields, in order)."""
    return [f for f in dataclasses.fields(cls) if f.init]


def option_type(f: dataclasses.Field[Any]) -> str:
    """An option's type as written (`int`, `bool`, `int | None`, ...)."""
    t = f.type
    return t if isinstance(t, str) else getattr(t, "__name__", str(t))


def parse_text(text: str, kind: str) -> Any:
    """`text` as a value of the option type `kind` (ValueError when it is not one)."""
    kind = kind.replace(" ", "")
    if kind.endswith("|None"):
        if text.lower() in ("", "none"):
            return None
        kind = kind[:-len("|None")]
    if kind == "bool":
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(text)
        return text.lower() in ("true", "1")
    if kind == "int":
        text = text.strip()
        return int(text) if text.lstrip("+-").isdigit() else int(text, 0)
    if kind == "float":
        return float(text)
    return text


_ARTICLES = {"int": "an integer", "bool": "a boolean", "float": "a number"}


@dataclass(frozen=True)
class Pass:
    """A module-to-module transformation with a kebab-case `name` and a one-line description.

    Dataclass fields of a subclass are its options (see the module docstring). An `optional`
    pass is an optimisation: the module reaches its backend, and computes the same results,
    without it, so `--opt-bisect-limit` may skip it; every other pass is a lowering step or a
    check that always runs.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    optional: ClassVar[bool] = False

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def configured(self, ctx: PassContext) -> Pass:
        """This pass with the `--pass-config` keys of its options applied (to options left at
        their default); a bad value is a CompileError naming the key."""
        changes: dict[str, Any] = {}
        for f in option_fields(type(self)):
            key = f.metadata.get("config")
            if key is None or key not in ctx.config or getattr(self, f.name) != f.default:
                continue
            text = str(ctx.config[key])
            parse = f.metadata.get("parse")
            if parse is not None:
                value = parse(text)
            else:
                kind = option_type(f)
                try:
                    value = parse_text(text, kind)
                except ValueError:
                    wants = _ARTICLES.get(kind.replace(" ", "").removesuffix("|None"), kind)
                    raise CompileError(f"pass config '{key}' wants {wants}, got '{text}'") \
                        from None
            check = f.metadata.get("check")
            problem = check(value) if check is not None else None
            if problem is not None:
                raise CompileError(f"pass config '{key}' {problem}")
            changes[f.name] = value
        return dataclasses.replace(self, **changes) if changes else self

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        """Run the pass on its own, on a big-stack thread (`tirc.ir.deep_call`)."""
        ctx = ctx or PassContext()
        return deep_call(self.configured(ctx).run, mod, ctx)


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
