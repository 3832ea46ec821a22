"""Which of TVMScript's two spellings a file is written in, and its `tvm.script` header lines.

TVM up to 0.2x writes `from tvm.script import tir as T` and `with T.block(...)` ("classic");
TVM 0.27 writes `from tvm.script import tirx as T`, `with T.sblock(...)` and
`@T.prim_func(s_tir=True)` ("tirx"). Both build the same IR; the module remembers the
spelling (and the header lines as written, commented or not) so that it prints back the way
it was read.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^(#\s*)?(from\s+tvm(\.\w+)*\s+import\s+[\w ,]+|import\s+tvm(\.\w+)*)\s*$")
_TIR_IMPORT = re.compile(r"from\s+tvm\.script(\.parser)?\s+import\s+(tirx?)\b")
_TIRX_MARKS = re.compile(r"\bT\.sblock(_attr)?\b|\bs_tir\s*=\s*True\b")
_CLASSIC_MARKS = re.compile(r"\bT\.block(_attr)?\s*\(")


def header_lines(text: str) -> tuple[str, ...]:
    """The `from tvm... import ...` / `import tvm` lines (or their `# ` comments) that open
    the file, before its first definition."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _HEADER.match(line):
            lines.append(line)
            continue
        if line.startswith("#"):
            continue
        break
    return tuple(lines)


def detect_syntax(text: str, header: tuple[str, ...]) -> str:
    """"tirx" or "classic": the import of `tir`/`tirx` decides; else the constructs used;
    else classic."""
    for line in header:
        m = _TIR_IMPORT.search(line)
        if m:
            return "tirx" if m.group(2) == "tirx" else "classic"
    if _TIRX_MARKS.search(text):
        return "tirx"
    return "classic"

