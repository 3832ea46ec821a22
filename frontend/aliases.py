"""The names a file gives TVMScript's namespaces, mapped to the ones the builders read.

`from tvm.script import tirx as T` is the usual spelling, but a file may bind the loop-level
namespace to another name, and TVM's newest programs import its block-level half apart
(`from tvm.script import s_tir as Ts`, `@Ts.function`, `Ts.sblock`, `Ts.axis.remap`). Every
name bound to `tir`, `tirx` or `s_tir` reads as `T`, to `relax` as `R`, to `ir` as `I`;
`relax.op.<name>` (the Python API TVM's tests call inside scripts, `relax.op.add(x, y)`) is
`R.<name>`, and `relax.const(v, dtype)` is `R.const`; `@Ts.function` is
`@T.prim_func(s_tir=True)`, a `T.Tensor(shape, dtype)` parameter is a `T.Buffer`, TVM
main's `T.alloc_tensor` / `T.decl_tensor` are `T.alloc_buffer` / `T.decl_buffer`, and
`T.boolean` (TVM's other name of the dtype) is `T.bool`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.frontend import syntax as S

CANONICAL = {"tir": "T", "tirx": "T", "s_tir": "T", "relax": "R", "ir": "I"}
RENAMED = {"T.Tensor": "T.Buffer", "T.alloc_tensor": "T.alloc_buffer",
           "T.decl_tensor": "T.decl_buffer", "T.boolean": "T.bool"}


def namespace_aliases(stmts: list[S.Stmt]) -> dict[str, str]:
    """Names bound by `from tvm.script import <ns> as <name>` to another canonical name."""
    aliases: dict[str, str] = {}
    for s in stmts:
        if isinstance(s, S.ImportFrom) and s.level == 0 and s.module in (
                "tvm.script", "tvm.script.parser"):
            for n in s.names:
                canonical = CANONICAL.get(n.name)
                bound = n.asname or n.name
                if canonical is not None and bound != canonical:
                    aliases[bound] = canonical
    return aliases


def canonical_names(stmts: list[S.Stmt]) -> list[S.Stmt]:
    """The statements with namespace aliases and TVM's newest spellings rewritten."""
    aliases = namespace_aliases(stmts)
    return [_rewrite(s, aliases) for s in stmts]


def _rewrite(node: Any, aliases: dict[str, str]) -> Any:
    if isinstance(node, list):
        return [_rewrite(x, aliases) for x in node]
    if isinstance(node, S.Name) and node.id in aliases:
        return dataclasses.replace(node, id=aliases[node.id])
    if isinstance(node, S.Attribute):
        value = _rewrite(node.value, aliases)
        if S.dotted(value) == "relax.op":  # `relax.op.add` (tvm.relax.op) is `R.add`
            value = S.Name(value.span, "R")
        elif S.dotted(value) == "relax" and node.attr == "const":  # `relax.const` is `R.const`
            value = S.Name(value.span, "R")
        node = dataclasses.replace(node, value=value) if value is not node.value else node
        dotted = S.dotted(node)
        if dotted in RENAMED:
            head, attr = RENAMED[dotted].split(".")
            return dataclasses.replace(node, value=dataclasses.replace(value, id=head),
                                       attr=attr)
        return node
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, (list, S.Expr, S.Stmt, S.Keyword, S.Param, S.WithItem)):
                new = _rewrite(value, aliases)
                if new is not value:
                    changes[f.name] = new
        node = dataclasses.replace(node, **changes) if changes else node
        return _function(node) if isinstance(node, S.FunctionDef) else node
    return node


def _function(fn: S.FunctionDef) -> S.FunctionDef:
    """`@Ts.function(...)` (read as `@T.function`) is `@T.prim_func(..., s_tir=True)`."""
    decorators = []
    for d in fn.decorators:
        func = d.func if isinstance(d, S.Call) else d
        if S.dotted(func) == "T.function" and isinstance(func, S.Attribute):
            func = dataclasses.replace(func, attr="prim_func")
            flag = S.Keyword("s_tir", S.Constant(d.span, True, "bool"), d.span)
            args = d.args if isinstance(d, S.Call) else []
            keywords = d.keywords if isinstance(d, S.Call) else []
            if not any(k.name == "s_tir" for k in keywords):
                keywords = [*keywords, flag]
            d = S.Call(d.span, func, args, keywords)
        decorators.append(d)
    return dataclasses.replace(fn, decorators=decorators)
