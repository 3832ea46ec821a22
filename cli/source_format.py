"""The `.tir` source formatter: the text's own concrete syntax, laid out by ruff's formatter.

A `.tir` file is Python syntax, so it is formatted as Python (black's style, which TVM's own
script printer also uses) by `ruff format`, from its concrete syntax tree: comments, blank-line
structure, import lines, quotes and every name stay the author's, and grammar added to tirc
later is formatted without changes here. The source is never executed. Each result is checked
to have the same Python syntax tree as its input (docstrings compared after cleaning their
indentation, as black does), so a formatter bug can never change a program's meaning.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
from functools import cache

from tirc.ir.diagnostics import CompileError, Diagnostic
from tirc.ir.span import SourceMap, Span

DEFAULT_LINE_LENGTH = 100
_PARSE_ERROR = re.compile(r"Failed to parse (?:\S+:)?(?:at )?(\d+):(\d+): (.*)")


@cache
def ruff_binary() -> str:
    """The path of the `ruff` executable installed with tirc (a dependency of the package)."""
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        raise CompileError("tirc fmt needs the 'ruff' package (pip install ruff)") from None
    try:
        return find_ruff_bin()
    except FileNotFoundError:
        raise CompileError("tirc fmt cannot find the ruff executable of the 'ruff' package"
                           ) from None


def ruff_command(line_length: int) -> list[str]:
    """`ruff format` on stdin with tirc's settings, ignoring any configuration files."""
    return [ruff_binary(), "format", "--isolated", "--line-length", str(line_length),
            "--config", "format.quote-style='preserve'", "-"]


def _syntax_error(stderr: str, text: str, path: str) -> CompileError:
    """ruff's parse error as a `file:line:col: error:` diagnostic with the source line."""
    found = _PARSE_ERROR.search(stderr)
    if found is None:
        return CompileError(f"{path}: cannot format: {stderr.strip()}")
    line, col, message = int(found[1]), int(found[2]), found[3].strip()
    SourceMap.add(path, text)
    return CompileError(Diagnostic("error", f"syntax error: {message}",
                                   Span(path, line, col, line, col + 1)))


def _normalised_tree(text: str) -> str:
    """The Python syntax tree of `text` without positions, docstrings' indentation cleaned."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            doc = body[0].value.value
            body[0].value.value = "\n".join(ln.rstrip() for ln in
                                            inspect.cleandoc(doc).splitlines()).strip()
    return ast.dump(tree, include_attributes=False)


def format_source(text: str, path: str = "<stdin>",
                  line_length: int = DEFAULT_LINE_LENGTH) -> str:
    """`text` formatted; a syntax error is a CompileError at its place in `path`."""
    proc = subprocess.run(ruff_command(line_length), input=text.encode("utf-8"),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise _syntax_error(proc.stderr.decode("utf-8", "replace"), text, path)
    out = proc.stdout.decode("utf-8")
    from tirc.ir.deep_call import deep_call

    deep_call(_check_same_tree, text, out, path)
    return out


def _check_same_tree(text: str, out: str, path: str) -> None:
    """Raise unless `out` has the syntax tree of `text` (skipped when CPython's own parser
    cannot nest as deep as the text does: ruff parsed it, tirc's parser reads deeper)."""
    try:
        before = _normalised_tree(text)
    except (RecursionError, MemoryError):
        return
    except SyntaxError as exc:
        if "too many nested" in str(exc.msg) or "too complex" in str(exc.msg):
            return
        line, col = exc.lineno or 1, exc.offset or 1
        SourceMap.add(path, text)
        raise CompileError(Diagnostic("error", f"syntax error: {exc.msg}",
                                      Span(path, line, col, line, col + 1))) from None
    if _normalised_tree(out) != before:
        raise RuntimeError(f"formatting {path} would change its syntax tree")
