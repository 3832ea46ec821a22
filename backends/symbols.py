"""The C names a library exports, chosen so that several tirc libraries link into one program.

Each function is exported under its `global_symbol` (by default its name), with
`--symbol-prefix P` put before every export. A function whose symbol is `main` (a graph
function's usual name, which no C program could declare) becomes `<library>_main`. The two ABI
helpers are exported per library as `<library>_last_error` and `<library>_metadata` (or
`P last_error`, `P metadata`); the unprefixed `tirc_last_error`/`tirc_metadata` stay as aliases
for loaders that look them up through the library's own handle (`dlsym`, ctypes), where another
library's cannot answer. The library name is the input file's name (`mlp.tir` -> `mlp`) from
the command line, else the output file's without `lib` and the suffix.
"""

from __future__ import annotations

import re
from pathlib import Path

from tirc.ir.diagnostics import CompileError
from tirc.ir.lean_dataclass import dataclass

C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
UNPREFIXED_HELPERS = {"last_error": "tirc_last_error", "metadata": "tirc_metadata"}
# The helper of a library that calls functions by dotted names: `void **<library>_extern_slots()`.
EXTERN_SLOTS = "extern_slots"


def library_name_from_path(path: str | Path | None, fallback: str = "module") -> str:
    """A C identifier from a file name: `libmlp.so` and `mlp.tir` give `mlp`."""
    if path is None:
        return fallback
    stem = Path(path).name.split(".")[0]
    if stem.startswith("lib") and len(stem) > 3:
        stem = stem[3:]
    name = re.sub(r"[^A-Za-z0-9_]", "_", stem)
    if not name:
        return fallback
    return name if C_IDENTIFIER.match(name) else f"_{name}"


@dataclass(frozen=True)
class ExportNames:
    """How one library names its exports (see the module docstring)."""

    library: str = "module"
    prefix: str = ""

    def __post_init__(self) -> None:
        if self.prefix and not C_IDENTIFIER.match(self.prefix):
            raise CompileError(f"--symbol-prefix '{self.prefix}' is not the start of a C "
                               "identifier (letters, digits and '_', not starting with a digit)")
        if not C_IDENTIFIER.match(self.library):
            raise CompileError(f"library name '{self.library}' is not a C identifier")

    def function(self, symbol: str) -> str:
        """The exported C name of a function whose `global_symbol` is `symbol`."""
        if self.prefix:
            return self.prefix + symbol
        return f"{self.library}_main" if symbol == "main" else symbol

    def helper(self, what: str) -> str:
        """The exported name of the helper `last_error` or `metadata` of this library."""
        return (self.prefix or f"{self.library}_") + what

    def helpers(self) -> dict[str, str]:
        """Both helpers by role, as the metadata records them."""
        return {what: self.helper(what) for what in UNPREFIXED_HELPERS}
