"""The exception a library's error code becomes."""

from __future__ import annotations


class TircError(RuntimeError):
    """A tirc library function returned an error code; the message is the library's own."""

    def __init__(self, message: str, code: int = -1, function: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.function = function
