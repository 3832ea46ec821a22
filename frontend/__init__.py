"""tirc.frontend: `.tir` text (TVMScript) -> IRModule.

`parse(text, filename, include_dirs)` and `parse_file(path, include_dirs)` return an IRModule
or raise a CompileError (from tirc.ir) carrying every diagnostic found; `IRModule.sources`
lists every file read, imports included.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tirc.frontend.aliases import canonical_names
from tirc.frontend.builder_module import ModuleBuilder
from tirc.frontend.context import Context
from tirc.frontend.imports import ImportSession
from tirc.frontend.parser import parse_syntax
from tirc.ir.deep_call import deep_limited
from tirc.ir.diagnostics import CompileError
from tirc.ir.module import IRModule
from tirc.ir.span import SourceMap, Span

__all__ = ["PARSE_RECURSION_LIMIT", "parse", "parse_file"]

# Parsing runs on a big-stack thread (`tirc.ir.deep_call`) with this recursion limit: enough for
# a sum of ~7000 terms, 3000 nested calls or 1500 nested ifs (printed IR reads back), while text
# nested deeper still gets its "nested too deeply" diagnostic in a second or two (at the IR's
# limit of 200 000, 70 000 nested calls take minutes to diagnose).
PARSE_RECURSION_LIMIT = 20_000


@deep_limited(PARSE_RECURSION_LIMIT)
def parse(text: str, filename: str = "<string>",
          include_dirs: Iterable[str | Path] = ()) -> IRModule:
    """Parse `.tir` text; imports are searched next to `filename`, then in `include_dirs`.

    `filename` is only used in diagnostics (no file is read), so it is not in the result's
    `sources`; imported files are. Runs on a big-stack thread (PARSE_RECURSION_LIMIT), as the
    parser and builders recurse as deep as the text nests."""
    session = ImportSession(tuple(Path(d) for d in include_dirs))
    if not filename.startswith("<"):
        session.stack.append(Path(filename).resolve())
    return _parse_text(text, filename, session)


@deep_limited(PARSE_RECURSION_LIMIT)
def parse_file(path: str | Path, include_dirs: Iterable[str | Path] = ()) -> IRModule:
    """Read and parse a `.tir` file."""
    session = ImportSession(tuple(Path(d) for d in include_dirs))
    return session.load(Path(path), _load)


def _load(path: Path, session: ImportSession) -> IRModule:
    filename = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CompileError(f"cannot read '{filename}': not UTF-8 text") from None
    except OSError as err:
        raise CompileError(f"cannot read '{filename}': {err.strerror or err}") from None
    session.record(filename)
    return _parse_text(text, filename, session)


def _parse_text(text: str, filename: str, session: ImportSession) -> IRModule:
    SourceMap.add(filename, text)
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise CompileError("the file contains a NUL character", Span(filename, line, 1, line, 2))
    stmts = canonical_names(parse_syntax(text, filename))
    ctx = Context(filename, text)
    module = ModuleBuilder(ctx, session, _load).build(stmts)
    ctx.diag.check()
    return module
