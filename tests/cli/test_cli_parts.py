"""The CLI's small parts on their own: Make escaping, atomic writes, coloured diagnostics."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from tirc.cli.depfile import dependency_rule, make_escape
from tirc.cli.diagnostics_output import print_diagnostics
from tirc.cli.emit import kind_from_output
from tirc.cli.output_file import write_output
from tirc.ir.diagnostics import Diagnostic
from tirc.ir.span import SourceMap, Span


def test_make_escape() -> None:
    assert make_escape("a b/$x#1.tir") == "a\\ b/$$x\\#1.tir"


def test_dependency_rule() -> None:
    assert dependency_rule("out.so", ["main.tir", "lib/a b.tir", "main.tir"]) == (
        "out.so: \\\n  main.tir \\\n  lib/a\\ b.tir\n\nlib/a\\ b.tir:\n")


def test_kind_from_output() -> None:
    assert [kind_from_output(p) for p in ("a.so", "a.o", "a.s", "a.ll", "a.h", "a.ptx",
                                           "a.cubin", "a.tir", "a.txt", "-", None)] == [
        "so", "obj", "asm", "ll", "h", "ptx", "cubin", "tir", None, None, None]


def test_write_output_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out.tir"
    target.write_text("old")
    write_output(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.tir"]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_write_output_failure_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        write_output(tmp_path / "out.so", 42)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _diagnostic() -> Diagnostic:
    SourceMap.add("colour.tir", "x = 1\ny = oops\n")
    note = Diagnostic("note", "defined here", Span("colour.tir", 1, 1, 1, 2))
    return Diagnostic("error", "unknown name 'oops'", Span("colour.tir", 2, 5, 2, 9), (note,))


def test_plain_diagnostics_are_the_rendered_text() -> None:
    stream = io.StringIO()
    print_diagnostics([_diagnostic()], stream)
    assert stream.getvalue() == (
        "colour.tir:2:5: error: unknown name 'oops'\ny = oops\n    ^~~~\n"
        "colour.tir:1:1: note: defined here\nx = 1\n^\n")


def test_terminal_diagnostics_are_coloured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    stream = _Terminal()
    print_diagnostics([_diagnostic()], stream)
    text = stream.getvalue()
    assert "\x1b[" in text
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert plain == _diagnostic().render() + "\n"


def test_write_output_to_a_device_writes_in_place() -> None:
    write_output("/dev/null", "text")
    assert Path("/dev/null").is_char_device()
