"""What every builder shares: the diagnostics being collected and the source text.

A builder reports an error with `ctx.error(...)`, which records the diagnostic and raises
BuildError; the statement (or function) being built is abandoned and building continues with
the next one, so one run reports several errors.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NoReturn

from tirc.ir.diagnostics import DiagnosticContext
from tirc.ir.node import IdentityNode, Node
from tirc.ir.span import Span

TOO_DEEP = "this statement is nested too deeply"
# What an unknown name most often is in TVM's own programs: a Python variable of the code
# around the function, which TVMScript reads by running Python and tirc never does.
NO_PYTHON = ("tirc reads TVMScript without running Python: a value from the Python code "
             "around the function must be written out where it is used (or bound inside the "
             "function, e.g. `n = T.meta_var(16)`)")


class BuildError(Exception):
    """A diagnostic has been reported; abandon the construct being built."""


class Context:
    """Diagnostics and source text of the file being built."""

    def __init__(self, filename: str, text: str, diag: DiagnosticContext | None = None) -> None:
        self.filename = filename
        self.text = text
        self.diag = diag if diag is not None else DiagnosticContext()
        self._line_starts: list[int] | None = None
        # `n = TypeVar("n")` at the top of a file: the symbolic sizes TVM prints there
        # (tirc.frontend.builder_module: module_symbol)
        self.module_symbols: set[str] = set()

    def error(self, message: str, span: Span | None, note: str | None = None) -> NoReturn:
        self.diag.error(message, span, note)
        raise BuildError(message)

    def report(self, message: str, span: Span | None) -> None:
        """Record an error without abandoning the current construct."""
        self.diag.error(message, span)

    def unsupported(self, what: str, span: Span | None) -> NoReturn:
        self.error(f"unsupported: {what}", span)

    def source(self, span: Span) -> str:
        """The source text a span covers (for layouts written as expressions)."""
        if self._line_starts is None:
            starts = [0]
            for i, ch in enumerate(self.text):
                if ch == "\n":
                    starts.append(i + 1)
            self._line_starts = starts
        starts = self._line_starts
        if span.line > len(starts) or span.end_line > len(starts):
            return ""
        begin = starts[span.line - 1] + span.col - 1
        end = starts[span.end_line - 1] + span.end_col - 1
        return self.text[begin:end]


def spanned(node: Any, span: Span | None) -> Any:
    """`node` with `span` set on it and on every new child that has none yet.

    Definitions (variables, buffers) are returned unchanged: they keep their identity and the
    span of their definition.
    """
    if not isinstance(node, Node) or isinstance(node, IdentityNode) or node.span is not None:
        return node
    changes: dict[str, Any] = {"span": span}
    for f in dataclasses.fields(node):
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        if isinstance(value, Node) and not isinstance(value, IdentityNode) and value.span is None:
            changes[f.name] = spanned(value, span)
        elif isinstance(value, tuple) and any(
                isinstance(v, Node) and not isinstance(v, IdentityNode) and v.span is None
                for v in value):
            changes[f.name] = tuple(spanned(v, span) for v in value)
    return dataclasses.replace(node, **changes)


def walk(node: Any, fn: Any) -> None:
    """Call `fn` on every node under `node` (parents first)."""
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, Node):
            fn(x)
            stack.extend(reversed([v for _, v in x.node_fields()]))
        elif isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        elif isinstance(x, dict):
            for k, v in reversed(list(x.items())):
                stack.extend((v, k))
