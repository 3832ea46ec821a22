"""The status line: shown on a terminal for a compile that lasts, naming the pass or backend
step; never on a stream that is not a terminal; the backend's steps reach -v and --time-passes."""

from __future__ import annotations

import io
import time
from pathlib import Path

from cli_inputs import ADD_ONE
from tirc.cli.status_line import StatusLine
from tirc.passes.verify import Verify


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_shows_the_running_pass_and_step_then_erases() -> None:
    term = Terminal()
    line = StatusLine(2, term, delay=0.0)
    deadline = time.time() + 5
    while line._status is None and time.time() < deadline:
        time.sleep(0.01)
    line.before_pass(Verify(), None, None)  # type: ignore[arg-type]
    time.sleep(0.3)
    line.phase_started("llvm-optimize")
    time.sleep(0.3)
    line.close()
    out = term.getvalue()
    assert "tirc: pass 1/2: verify" in out and "tirc: llvm-optimize" in out


def test_quick_compiles_and_pipes_show_nothing() -> None:
    term = Terminal()
    line = StatusLine(1, term, delay=10.0)
    line.close()
    assert term.getvalue() == ""
    assert StatusLine.wanted(io.StringIO()) is False and StatusLine.wanted(Terminal())


def test_verbose_and_time_passes_include_the_backend(invoke, tmp_path: Path,
                                                     monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("k.tir").write_text(ADD_ONE)
    r = invoke("k.tir", "-o", "k.so", "-v")
    assert r.exit_code == 0, r.output
    for step in ("llvm-ir", "llvm-optimize", "llvm-codegen", "link"):
        assert f"tirc: running {step}\n" in r.stderr and f"tirc: {step} done in " in r.stderr
    r = invoke("k.tir", "-o", "k.so", "--time-passes")
    table = r.stderr[r.stderr.index("pass timing"):]
    assert all(step in table for step in ("llvm-optimize", "llvm-codegen", "link", "verify"))
