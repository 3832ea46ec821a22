"""Compiled method text kept between processes, as `.pyc` files keep modules' code.

`dataclasses` writes each method it adds (`__init__`, a frozen class's `__setattr__` and
`__delattr__`) as Python text and compiles it with `exec`: about 60 us a method, 35 ms of a
compile's start-up for the 240 dataclasses tirc loads. The text depends only on the class's
fields, so a process can reuse the code objects an earlier one compiled: `compile_text` looks
the text up in a table read once from `__pycache__/dataclass-methods.<tag>.marshal` in the
tirc package (tag: the interpreter's, e.g. `cpython-311`, since marshalled code is specific to
it) and compiles only what is missing. `save` writes the table back when something was
added, unless `sys.dont_write_bytecode` is set (PYTHONDONTWRITEBYTECODE, `-B`), as Python does
for `.pyc` files. A missing, unreadable or unwritable file only means compiling as before.
"""

from __future__ import annotations

import atexit
import marshal
import os
import sys
import tempfile
from pathlib import Path
from types import CodeType

# Past this many entries a save keeps only the texts this process used (old classes' texts
# would otherwise accumulate across edits of the source).
MAX_ENTRIES = 4000
_FILE = (Path(__file__).resolve().parent.parent / "__pycache__"
         / f"dataclass-methods.{sys.implementation.cache_tag}.marshal")

_table: dict[str, CodeType] | None = None
_used: dict[str, CodeType] = {}
_added = False


def compile_text(text: str) -> CodeType:
    """The code of `text` as `exec(text)` in a module without `__future__` imports compiles
    it (file name `<string>`), from the table when an earlier process compiled it."""
    global _added
    table = _load()
    code = table.get(text)
    if code is None:
        code = compile(text, "<string>", "exec", dont_inherit=True)
        table[text] = code
        if not _added:
            _added = True
            atexit.register(save)
    _used[text] = code
    return code


def cached_exec(text: object, globals_: dict[str, object] | None = None,
                locals_: dict[str, object] | None = None) -> None:
    """`exec` for `dataclasses`' method text, through `compile_text`; anything but a string
    goes to the builtin unchanged."""
    if isinstance(text, str):
        text = compile_text(text)
    exec(text, globals_, locals_)  # noqa: S102 - the decorator's own text, as it would run it


def save() -> None:
    """Write the table back when this process compiled something new (atomically: a reader
    sees the old file or the new one); a failure to write is ignored."""
    global _added
    if not _added or _table is None or sys.dont_write_bytecode:
        return
    _added = False
    table = _table if len(_table) <= MAX_ENTRIES else _used
    try:
        _FILE.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=_FILE.parent, prefix=".dataclass-methods-")
        try:
            with os.fdopen(fd, "wb") as out:
                marshal.dump(table, out)
            os.chmod(tmp, 0o644)  # readable as the .pyc files beside it are
            os.replace(tmp, _FILE)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return


def _load() -> dict[str, CodeType]:
    """The table, read from the file on first use (empty when it is missing or unreadable)."""
    global _table
    if _table is None:
        _table = {}
        try:
            loaded = marshal.loads(_FILE.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            loaded = None
        if isinstance(loaded, dict):
            _table = {k: v for k, v in loaded.items()
                      if isinstance(k, str) and isinstance(v, CodeType)}
    return _table


__all__ = ["cached_exec", "compile_text", "save"]
