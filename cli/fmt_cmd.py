"""`tirc fmt FILE... [-i | --check | --diff] [--line-length N]`: format `.tir` source text.

The source formatter (`tirc.cli.source_format`) lays out the file's own text: comments, blank
lines, imports and spelling stay. `-` reads standard input and writes standard output.
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
@color_option
@click.option("--debug", is_flag=True, help="Show a traceback for internal compiler errors.")
def fmt_command(files: tuple[str, ...], in_place: bool, check: bool, show_diff: bool,
                line_length: int, color: str, debug: bool) -> None:
    """Format .tir FILES (to stdout unless -i, --check or --diff; '-' is stdin)."""
    set_color(color)
    if in_place and (check or show_diff):
        raise click.UsageError("-i cannot be combined with --check or --diff")
    failed = False
    with reported_errors(debug):
        for path in files:
            try:
                old = read_source(path)
                new = format_source(old, "<stdin>" if path == STDOUT else path, line_length)
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
