"""How errors reach the user: diagnostics with a caret (coloured on a terminal), exit codes.

A CompileError (bad input) prints its diagnostics and exits 1; any other exception is a bug
in tirc and prints `internal compiler error` (with a traceback only under `--debug`), exit 2.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

import click
from tirc.ir.diagnostics import CompileError, Diagnostic

if TYPE_CHECKING:
    from rich.text import Text

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 2
COLOR_MODES = ("auto", "always", "never")

# Set once per command from --color and -Werror.
_settings = {"color": "auto", "werror": False}


def set_color(mode: str) -> None:
    """`--color=auto|always|never`: colours on a terminal, always, or never (NO_COLOR and
    TERM=dumb also turn `auto` off, as rich reads them)."""
    _settings["color"] = mode


def set_werror(on: bool) -> None:
    """`-Werror`: every warning becomes an error."""
    _settings["werror"] = on


color_option = click.option(
    "--color", type=click.Choice(COLOR_MODES), default="auto", show_default=True,
    help="Colour diagnostics: on a terminal (auto), always, or never.")


def warn(message: str, span: Any = None) -> None:
    """Print a warning (an error under -Werror, which stops the command)."""
    report_warnings([Diagnostic("warning", message, span)])


def report_warnings(diagnostics: Iterable[Diagnostic]) -> None:
    """Print the warnings the passes collected; under -Werror they are errors, all reported
    together, and the command stops."""
    found = list(diagnostics)
    if found and _settings["werror"]:
        raise CompileError([Diagnostic("error", f"{d.message} [-Werror]", d.span, d.notes)
                            for d in found])
    if found:
        print_diagnostics(found)


_SEVERITY_STYLE = {"error": "bold red", "warning": "bold magenta", "note": "bold cyan"}


def _styled(d: Diagnostic) -> list[Text]:
    from rich.text import Text

    """The lines of `d.render()`, with header, source line and caret styled."""
    rendered = d.render().splitlines()
    note_lines = sum(len(n.render().splitlines()) for n in d.notes)
    excerpt = rendered[1:len(rendered) - note_lines]
    where = f"{d.span}: " if d.span is not None else "tirc: "
    lines = [Text.assemble((where, "bold"), (f"{d.severity}:", _SEVERITY_STYLE[d.severity]),
                           (f" {d.message}", "bold"))]
    for i, line in enumerate(excerpt):
        lines.append(Text(line, style="bold green" if i == len(excerpt) - 1 else ""))
    for note in d.notes:
        lines.extend(_styled(note))
    return lines


def print_diagnostics(diagnostics: Iterable[Diagnostic], stream: TextIO | None = None) -> None:
    """Write each diagnostic to `stream` (stderr): rich colours on a terminal, else plain."""
    from rich.console import Console  # imported here: rich is slow to import, errors are rare

    stream = stream or sys.stderr
    mode = _settings["color"]
    console = Console(file=stream, highlight=False, soft_wrap=True,
                      force_terminal=True if mode == "always" else None,
                      no_color=True if mode == "never" else None)
    for d in diagnostics:
        colour = mode == "always" or (mode == "auto" and console.is_terminal and
                                      not console.no_color)
        if colour:
            for line in _styled(d):
                console.print(line)
        else:
            stream.write(d.render() + "\n")
    stream.flush()


def fail(message: str) -> CompileError:
    """A CompileError without a location: printed as `tirc: error: message`."""
    return CompileError(message)


@contextmanager
def reported_errors(debug: bool) -> Iterator[None]:
    """Turn exceptions from the body into diagnostics and the exit status."""
    try:
        yield
    except CompileError as err:
        print_diagnostics(err.diagnostics)
        raise click.exceptions.Exit(EXIT_USER_ERROR) from None
    except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise
    except BrokenPipeError:
        # The reader of our output went away (`tirc ... | head`): stop quietly.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise click.exceptions.Exit(EXIT_USER_ERROR) from None
    except Exception as exc:  # anything else is a bug in tirc
        if debug:
            traceback.print_exc(file=sys.stderr)
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        sys.stderr.write(f"tirc: internal compiler error: {detail}\n")
        if not debug:
            sys.stderr.write("note: rerun with --debug for a traceback\n")
        sys.stderr.flush()
        raise click.exceptions.Exit(EXIT_INTERNAL_ERROR) from None
