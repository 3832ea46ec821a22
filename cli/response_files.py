"""`@FILE` arguments: the words of FILE in their place, as gcc, clang and MSVC read them.

FILE is split like a shell command line (quotes and backslashes; `#` starts a comment), and may
name other response files; a missing file or a cycle is an error. `@` alone, or a word whose
file does not exist when it is `@` followed by nothing, is left as it is.
"""

from __future__ import annotations

import shlex
from pathlib import Path

MAX_DEPTH = 16


class ResponseFileError(ValueError):
    """A response file that cannot be read."""


def expand_response_files(args: list[str], depth: int = 0) -> list[str]:
    """`args` with every `@FILE` replaced by the arguments written in FILE."""
    out: list[str] = []
    for arg in args:
        if not arg.startswith("@") or arg == "@":
            out.append(arg)
            continue
        if depth >= MAX_DEPTH:
            raise ResponseFileError(f"response files nest more than {MAX_DEPTH} deep at {arg}")
        path = Path(arg[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ResponseFileError(f"cannot read response file '{path}': "
                                    f"{exc.strerror or exc}") from None
        try:
            words = shlex.split(text, comments=True)
        except ValueError as exc:
            raise ResponseFileError(f"response file '{path}': {exc}") from None
        out.extend(expand_response_files(words, depth + 1))
    return out
