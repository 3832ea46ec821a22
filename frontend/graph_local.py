"""Local functions of a graph function: `@R.function def inner(...)` in its body, lifted to a
module function as TVM's LambdaLift does.

`inner` of `main` becomes the module function `main_inner` (marked `tirc.lifted`); the outer
variables it uses (a closure's captures) become extra parameters before its own, as TVM's VM
passes a closure's captured values first, and each call `inner(a)` becomes
`Module.main_inner(y, a)`. The outer function's symbolic sizes stay visible inside.
inline-calls inlines the calls and drops the function.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from tirc.frontend import syntax as S
from tirc.frontend.context import BuildError
from tirc.frontend.signature import Sig, check_call
from tirc.ir.attrs import LIFTED
from tirc.ir.expr import Var
from tirc.ir.graph import GCall, GVar
from tirc.ir.lean_dataclass import dataclass

if TYPE_CHECKING:
    from tirc.frontend.builder_graph import GraphBuilder


@dataclass(frozen=True)
class LocalFunction:
    """A local function, lifted to the module function `name`; each call passes `captured`
    (variables of the function that defines it) before its own arguments."""

    name: str
    captured: tuple[GVar, ...]


def lift_local(g: GraphBuilder, fn: S.FunctionDef, in_dataflow: bool) -> None:
    """Build the local function `fn` of `g`'s function as a module function and bind its name
    in `g`'s scope to it."""
    try:
        _check_decorator(g, fn, in_dataflow)
        name = _lifted_name(g, fn.name)
        captured, visible = _captures(g, fn)
        inner = type(g)(g.ctx, fn, g.module)
        inner.qualified_name = name
        inner.module_aliases = set(g.module_aliases)
        params = []
        for n, value in visible.items():
            inner.scope.define(n, value, fn.span)
        for n, outer in captured:
            p = GVar(n, outer.struct_info, False, span=outer.span)
            inner.scope.define(n, p, fn.span)
            inner.captures[outer] = p
            params.append(p)
        for lf in visible.values():  # a sibling's captures this one passes on
            if isinstance(lf, LocalFunction):
                for c in lf.captured:
                    if c not in inner.captures:
                        p = GVar(c.name, c.struct_info, False, span=c.span)
                        inner.captures[c] = p
                        params.append(p)
        func = inner.build()
    except BuildError:
        g.scope.poison(fn.name)
        raise
    func = dataclasses.replace(func, name=name, params=(*params, *func.params),
                               attrs={**func.attrs, LIFTED: True})
    g.module.lifted[name] = func
    g.scope.define(fn.name, LocalFunction(name, tuple(inner.captures)), fn.name_span)


def local_call(g: GraphBuilder, call: S.Call, lf: LocalFunction) -> GCall:
    """`inner(a, b)`: the lifted function called with the captures, then the arguments."""
    assert isinstance(call.func, S.Name)
    check_call(g.ctx, call, call.func.id, Sig(0, None))
    args = tuple(g.operand(a) for a in call.args)
    return GCall(lf.name, (*(g.captures.get(c, c) for c in lf.captured), *args),
                 span=call.span)


def _check_decorator(g: GraphBuilder, fn: S.FunctionDef, in_dataflow: bool) -> None:
    """A local function is `@R.function` (its flags allowed), outside `R.dataflow()`."""
    if in_dataflow:
        g.ctx.error("a local function inside R.dataflow() (define it before the block)",
                    fn.name_span)
    names = [S.dotted(d.func if isinstance(d, S.Call) else d) for d in fn.decorators]
    if names != ["R.function"]:
        g.ctx.unsupported("a local function other than one `@R.function def ...`",
                          fn.decorators[0].span if fn.decorators else fn.name_span)
    deco = fn.decorators[0]
    if isinstance(deco, S.Call):
        check_call(g.ctx, deco, "@R.function", Sig(0, 0, ("pure", "private",
                                                          "check_well_formed")))


def _lifted_name(g: GraphBuilder, local: str) -> str:
    """`outer_local`, numbered when the module already has that name."""
    base = f"{g.qualified_name}_{local}"
    name, k = base, 0
    while name in g.module.functions or name in g.module.lifted:
        k += 1
        name = f"{base}{k}"
    return name


def _captures(g: GraphBuilder, fn: S.FunctionDef
              ) -> tuple[list[tuple[str, GVar]], dict[str, Any]]:
    """The outer graph variables `fn` uses (by name, in order of use), and the outer names
    it sees as they are: symbolic sizes and other local functions."""
    own = {p.name for p in fn.params} | S.assigned_names(fn.body)
    captured: list[tuple[str, GVar]] = []
    visible: dict[str, Any] = {}
    for n in _names_used(fn):
        if n in own or n in visible or any(n == c for c, _ in captured):
            continue
        value = g.scope.lookup(n)
        if isinstance(value, GVar):
            captured.append((n, value))
        elif isinstance(value, (Var, LocalFunction)):
            visible[n] = value
    return captured, visible


def _names_used(node: Any) -> list[str]:
    """Every `Name` in a syntax tree, in order of appearance (first use)."""
    found: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, S.Name):
            if x.id not in found:
                found.append(x.id)
        elif isinstance(x, list):
            for y in x:
                walk(y)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                walk(getattr(x, f.name))

    walk(node)
    return found
