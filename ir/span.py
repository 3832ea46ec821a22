"""Source locations: every IR node and diagnostic points back into the text it came from."""

from __future__ import annotations

from tirc.ir.lean_dataclass import dataclass


@dataclass(frozen=True)
class Span:
    """A half-open region of a source file; lines and columns start at 1."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def merge(self, other: Span | None) -> Span:
        """The smallest span covering both (same file assumed)."""
        if other is None:
            return self
        start = min((self.line, self.col), (other.line, other.col))
        end = max((self.end_line, self.end_col), (other.end_line, other.end_col))
        return Span(self.file, start[0], start[1], end[0], end[1])


class SourceMap:
    """The text of every file read, so diagnostics can show the offending line."""

    _texts: dict[str, str] = {}

    @classmethod
    def add(cls, filename: str, text: str) -> None:
        cls._texts[filename] = text

    @classmethod
    def line(cls, filename: str, line: int) -> str | None:
        text = cls._texts.get(filename)
        if text is None:
            return None
        lines = text.splitlines()
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return None
