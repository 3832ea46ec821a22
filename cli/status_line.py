"""A one-line status on a terminal for a compile that takes more than about a second.

It says what runs now: `pass 12/40: fuse-ops`, then the backend's steps (`llvm-optimize`,
`llvm-codegen`, `link`), with the time so far; it appears only after DELAY seconds (a quick
compile prints nothing) and only when standard error is a terminal, and is erased at the end.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from tirc.ir.module import IRModule
from tirc.passes.manager import Instrument
from tirc.passes.pass_base import Pass, PassContext

DELAY = 1.0


class StatusLine(Instrument):
    """The status line as a pass instrument and a backend phase listener."""

    def __init__(self, total_passes: int, stream: Any = None, delay: float = DELAY) -> None:
        self.total = total_passes
        self.stream = stream or sys.stderr
        self.delay = delay
        self.start = time.perf_counter()
        self.text = "starting"
        self.count = 0
        self._status: Any = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(delay, self._show)
        self._timer.daemon = True
        self._timer.start()

    @staticmethod
    def wanted(stream: Any = None) -> bool:
        """Whether `stream` (standard error) is a terminal that shows a live line."""
        stream = stream or sys.stderr
        return bool(getattr(stream, "isatty", lambda: False)())

    def _line(self) -> str:
        return f"tirc: {self.text} ({time.perf_counter() - self.start:.1f} s)"

    def _show(self) -> None:
        from rich.console import Console

        with self._lock:
            if self._status is not None or self.text == "done":
                return
            console = Console(file=self.stream, highlight=False)
            self._status = console.status(self._line(), spinner="dots")
            self._status.start()

    def _update(self, text: str) -> None:
        with self._lock:
            self.text = text
            if self._status is not None:
                self._status.update(self._line())

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        self.count += 1
        self._update(f"pass {self.count}/{self.total}: {p.name}")

    def phase_started(self, name: str) -> None:
        self._update(name)

    def phase_done(self, name: str, seconds: float) -> None:
        """Nothing to show: the next step replaces the text."""

    def close(self) -> None:
        """Stop the timer and erase the line."""
        self._timer.cancel()
        with self._lock:
            self.text = "done"
            if self._status is not None:
                self._status.stop()
                self._status = None
