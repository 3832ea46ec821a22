"""`tirc fmt FILE... [-i] [--check]`: print files in the canonical format (parse, then print)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from tirc.cli.diagnostics_output import (
    EXIT_USER_ERROR,
    fail,
    print_diagnostics,
    reported_errors,
)
from tirc.cli.output_file import write_output
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


def format_text(text: str, path: str, syntax: str | None = None) -> str:
    """The canonical text of a file: its own definitions printed, its imports kept as imports;
    in `syntax` ("classic" or "tirx"), by default the one the file is written in."""
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


def formatted(path: str, syntax: str | None = None) -> tuple[str, str]:
    """The file's text as it is, and as the printer writes it (in `syntax`, if given)."""
    if not Path(path).is_file():
        raise fail(f"no such file: {path}")
    text = Path(path).read_text()
    from tirc.frontend import PARSE_RECURSION_LIMIT
    from tirc.ir.deep_call import deep_call_limited

    # On a big-stack thread: its parse_syntax call is not the frontend's (deep) parse.
    return text, deep_call_limited(PARSE_RECURSION_LIMIT, format_text, text, path, syntax)


@click.command("fmt")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-i", "in_place", is_flag=True, help="Rewrite each file in place.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 naming each file that is not formatted.")
@click.option("--syntax", type=click.Choice(["tirx", "classic"]), default=None,
              help="Print in TVM 0.27's spelling (tirx: T.sblock) or the classic one (tir: "
                   "T.block); by default the one each file is written in.")
@click.option("--debug", is_flag=True, help="Show a traceback for internal compiler errors.")
def fmt_command(files: tuple[str, ...], in_place: bool, check: bool, syntax: str | None,
                debug: bool) -> None:
    """Format .tir FILES (to stdout unless -i or --check)."""
    if in_place and check:
        raise click.UsageError("-i and --check cannot be combined")
    failed = False
    with reported_errors(debug):
        for path in files:
            try:
                old, new = formatted(path, syntax)
            except CompileError as err:
                print_diagnostics(err.diagnostics)
                failed = True
                continue
            if check:
                if old != new:
                    sys.stderr.write(f"tirc: {path} is not formatted\n")
                    failed = True
            elif in_place:
                if old != new:
                    write_output(path, new)
            else:
                sys.stdout.write(new)
    if failed:
        raise click.exceptions.Exit(EXIT_USER_ERROR)
