"""The backend's steps, timed and announced: LLVM IR generation, LLVM's optimisation, code
generation to an object file, and the link. `tirc -v`, `--time-passes` and the status line
listen to them as they listen to passes."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol


class PhaseListener(Protocol):
    """Told when a backend step starts and how long it took."""

    def phase_started(self, name: str) -> None: ...

    def phase_done(self, name: str, seconds: float) -> None: ...


class Phases:
    """`with phases("llvm-optimize"): ...` times the body and tells every listener."""

    def __init__(self, listeners: Sequence[PhaseListener] = ()) -> None:
        self.listeners = list(listeners)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        for listener in self.listeners:
            listener.phase_started(name)
        start = time.perf_counter()
        yield
        seconds = time.perf_counter() - start
        for listener in self.listeners:
            listener.phase_done(name, seconds)


NO_PHASES = Phases()
