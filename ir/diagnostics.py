"""Diagnostics: `file:line:col: error: message` with the source line and a caret."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import field

from tirc.ir.lean_dataclass import dataclass
from tirc.ir.span import SourceMap, Span

MAX_ERRORS = 20


@dataclass(frozen=True)
class Diagnostic:
    """One message about the user's program, at a place in it."""

    severity: str  # "error", "warning" or "note"
    message: str
    span: Span | None = None
    notes: tuple[Diagnostic, ...] = field(default=())

    def header(self) -> str:
        where = f"{self.span}: " if self.span is not None else "tirc: "
        return f"{where}{self.severity}: {self.message}"

    def render(self) -> str:
        """Plain text: the header, then the source line and a caret under the span."""
        lines = [self.header()]
        lines.extend(_excerpt(self.span))
        for note in self.notes:
            lines.append(note.render() if note.span is not None else
                         f"{note.severity}: {note.message}")
        return "\n".join(lines)


def _excerpt(span: Span | None) -> list[str]:
    if span is None:
        return []
    text = SourceMap.line(span.file, span.line)
    if text is None:
        return []
    width = span.end_col - span.col if span.end_line == span.line else len(text) - span.col + 1
    return [text, " " * (span.col - 1) + "^" + "~" * max(0, width - 1)]


def close_names(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The names in `known` closest to a misspelt `word` (best first; none when far off)."""
    return difflib.get_close_matches(word, list(dict.fromkeys(known)), n=n, cutoff=0.6)


def did_you_mean(word: str, known: Iterable[str], n: int = 3) -> str:
    """`; did you mean 'x' or 'y'?` for a misspelt `word`, or '' when nothing is close."""
    close = close_names(word, known, n)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


class CompileError(Exception):
    """Raised for errors in the user's program; carries every diagnostic found."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str,
                 span: Span | None = None) -> None:
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic("error", diagnostics, span)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)


class DiagnosticContext:
    """Collects errors so one run reports several of them (up to MAX_ERRORS)."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, span: Span | None = None, note: str | None = None) -> None:
        notes = (Diagnostic("note", note),) if note else ()
        self.diagnostics.append(Diagnostic("error", message, span, notes))
        if len(self.errors()) >= MAX_ERRORS:
            note = f"too many errors, stopping after {MAX_ERRORS}"
            self.diagnostics.append(Diagnostic("note", note))
            raise CompileError(self.diagnostics)

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def check(self) -> None:
        """Raise a CompileError when any error was reported."""
        if self.errors():
            raise CompileError(self.diagnostics)
