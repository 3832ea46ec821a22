"""Writing outputs atomically: a temporary file in the same folder, then a rename.

An error before the rename leaves no partial output, and an existing file keeps its old text.
Paths that are not regular files (`/dev/null`, a named pipe) are written in place.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

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
    target = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    if target.exists() and not target.is_file():
        with open(target, "wb") as special:  # /dev/null, a pipe: never replace those
            special.write(raw)
        return
    folder = target.parent
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, (0o777 if executable else 0o666) & ~umask)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
