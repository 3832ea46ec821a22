"""Writing outputs atomically: a temporary file in the same folder, then a rename.

An error before the rename leaves no partial output, and an existing file keeps its old text.
Paths that are not regular files (`/dev/null`, a named pipe) are written in place.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tirc.backends.link import write_atomic

STDOUT = "-"


def write_output(path: str | Path, data: str | bytes, executable: bool = False) -> None:
    """Write `data` to `path` (or stdout for `-`) so that readers never see half of it."""
    if str(path) == STDOUT:
        if isinstance(data, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(data)
            sys.stdout.flush()
        return
    write_atomic(path, data.encode() if isinstance(data, str) else data, executable)
