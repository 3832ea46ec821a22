"""The one error type of the layout algebra."""

from __future__ import annotations


class LayoutError(ValueError):
    """A layout that cannot be built, parsed, or transformed as asked; the message says why.

    For parse errors `position` is the 0-based character offset of the problem in the text,
    so a caller that parsed a layout string out of a source file can point at it.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position
