"""`tirc fmt FILE... [-i | --check | --diff] [--line-length N] [--syntax tirx|classic]`: format
`.tir` source text.

The source formatter (`tirc.cli.source_format`) lays out the file's own text: comments, blank
lines, imports and spelling stay. `--syntax` instead prints the module in TVM's current
(`tirx`, `T.sblock`) or classic (`tir`, `T.block`) spelling, imports of other `.tir` files kept
as imports, and formats that. `-` reads standard input and writes standard output.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import click
from tirc.cli.diagnostics_output import (
    EXIT_USER_ERROR,
    color_option,
    fail,
    print_diagnostics,
    reported_errors,
    set_color,
)
from tirc.cli.output_file import STDOUT, write_output
from tirc.cli.source_format import DEFAULT_LINE_LENGTH, format_source
from tirc.ir.diagnostics import CompileError


def import_lines(text: str, path: str) -> list[str]:
    """The file's imports of other `.tir` files, each as one canonical line."""
    from tirc.frontend import syntax as S
    from tirc.frontend.parser import parse_syntax

    lines = []
    for stmt in parse_syntax(text, path):
        if isinstance(stmt, S.ImportFrom) and not (
                stmt.level == 0 and (stmt.module == "tvm" or stmt.module.startswith("tvm."))):
            names = ", ".join(n.name + (f" as {n.asname}" if n.asname else "")
                              for n in stmt.names)
            lines.append(f"from {'.' * stmt.level}{stmt.module} import {names}")
    return lines


def printed_text(text: str, path: str, syntax: str) -> str:
    """The file's own definitions as the printer writes them in `syntax` ("classic" or
    "tirx"), its imports kept as imports."""
    from tirc.frontend import parse

    mod = parse(text, path)
    imports = import_lines(text, path)
    if not imports:
        return mod.script(syntax)

    def own(node: object) -> bool:
        span = getattr(node, "span", None)
        return span is None or span.file == path

    mine = mod.replace(functions={k: f for k, f in mod.functions.items() if own(f)},
                       schedules=tuple(s for s in mod.schedules if own(s)))
    header, _, body = mine.script(syntax).partition("\n\n")
    return f"{header}\n\n" + "\n".join(imports) + f"\n\n\n{body}"


def in_spelling(text: str, path: str, syntax: str) -> str:
    """`printed_text` on a big-stack thread (its parse_syntax call is not the frontend's)."""
    from tirc.frontend import PARSE_RECURSION_LIMIT
    from tirc.ir.deep_call import deep_call_limited

    return deep_call_limited(PARSE_RECURSION_LIMIT, printed_text, text, path, syntax)


def read_source(path: str) -> str:
    """The text of `path` (standard input for `-`); a missing file is a user error."""
    if path == STDOUT:
        return sys.stdin.read()
    if not Path(path).is_file():
        raise fail(f"no such file: {path}")
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise fail(f"cannot read '{path}': not UTF-8 text") from None


def unified_diff(old: str, new: str, path: str) -> str:
    """`diff -u` of a file before and after formatting."""
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"{path}\t(original)", f"{path}\t(formatted)"))


@click.command("fmt")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-i", "in_place", is_flag=True, help="Rewrite each file in place.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 naming each file that is not formatted.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print what formatting would change, as a unified diff.")
@click.option("-l", "--line-length", type=click.IntRange(20, 400), default=DEFAULT_LINE_LENGTH,
              show_default=True, help="Wrap lines longer than this.")
@click.option("--syntax", type=click.Choice(["tirx", "classic"]), default=None,
              help="Print the module in TVM 0.27's spelling (tirx: T.sblock) or the classic one "
                   "(tir: T.block) instead of keeping the file's text (comments are not kept).")
@color_option
@click.option("--debug", is_flag=True, help="Show a traceback for internal compiler errors.")
def fmt_command(files: tuple[str, ...], in_place: bool, check: bool, show_diff: bool,
                line_length: int, syntax: str | None, color: str, debug: bool) -> None:
    """Format .tir FILES (to stdout unless -i, --check or --diff; '-' is stdin)."""
    set_color(color)
    if in_place and (check or show_diff):
        raise click.UsageError("-i cannot be combined with --check or --diff")
    failed = False
    with reported_errors(debug):
        for path in files:
            try:
                old = read_source(path)
                name = "<stdin>" if path == STDOUT else path
                text = old if syntax is None else in_spelling(old, name, syntax)
                new = format_source(text, name, line_length)
            except CompileError as err:
                print_diagnostics(err.diagnostics)
                failed = True
                continue
            if show_diff:
                sys.stdout.write(unified_diff(old, new, path))
            if check or show_diff:
                if old != new:
                    sys.stderr.write(f"tirc: {path} is not formatted\n")
                    failed = True
            elif in_place and path != STDOUT:
                if old != new:
                    write_output(path, new)
            else:
                sys.stdout.write(new)
    if failed:
        raise click.exceptions.Exit(EXIT_USER_ERROR)
