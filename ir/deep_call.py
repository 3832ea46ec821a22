"""Run deep recursive work (visitors, mutators, printer, codegen) on a thread with a big stack.

Lowered IR nests deeply: make-entry opens a LetStmt/AssertStmt scope per parameter and the
megakernel runtime nests its own scopes, so the recursive walks over it go past Python's default
recursion limit (1000). `deep_call(fn, ...)` runs `fn` on a helper thread whose C stack is
`STACK_BYTES` (virtual memory, only touched as far as used) with the recursion limit raised to
`RECURSION_LIMIT`. The library's entry points go through it: run_pipeline, a pass called on its
own, emit/build and the printer with `@deep`; the parser with `@deep_limited` and a lower limit,
so that pathologically nested text is still diagnosed quickly. Neither the API nor the CLI needs
a hand-raised limit. The process's limit is restored when the last concurrent call returns; a
nested call on a helper thread runs directly.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

# 512 MiB of stack for a limit of 200 000: 2.6 KiB a level, over four times the most measured on
# CPython 3.11 (0.6 KiB, when every frame is entered from C as in `map(f, ...)`), so going past
# the limit is a RecursionError, never a crash.
STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 200_000
JOIN_SECONDS = 0.25  # the caller waits in joins this long, so Ctrl-C reaches it

_local = threading.local()  # `.deep` is True on helper threads
_lock = threading.Lock()  # guards the counters below and threading.stack_size
_active = 0  # deep calls running now, on any thread
_saved_limit = 0  # the process's limit before the first of them
_raised_to = 0  # the limit they set (not undone if someone changed it since)


def on_deep_thread() -> bool:
    """True on a helper thread of `deep_call` (where deep recursion is safe)."""
    return bool(getattr(_local, "deep", False))


def deep_call(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)` run on a big-stack helper thread, the recursion limit raised to
    (at least) RECURSION_LIMIT; see `deep_call_limited`."""
    return deep_call_limited(RECURSION_LIMIT, fn, *args, **kwargs)


def deep_call_limited(limit: int, fn: Callable[P, R], /, *args: P.args,
                      **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)` run on a big-stack helper thread, the process's recursion limit
    raised to at least `limit` (at most RECURSION_LIMIT, what the stack is sized for).

    Returns what `fn` returns and raises what it raises (the same exception object, whose
    traceback includes the helper's frames); context variables are copied to the helper.
    On a helper thread it just calls `fn` (raising the limit if `limit` is higher). The
    caller waits in short joins, so Ctrl-C interrupts it, and the helper is a daemon thread
    that does not hold the process open. Where no such thread can be started (address-space
    limits), `fn` runs on the calling thread under the limit it has.
    """
    if not 0 < limit <= RECURSION_LIMIT:
        raise ValueError(f"recursion limit {limit} is outside 1..{RECURSION_LIMIT}")
    if on_deep_thread():
        _raise_nested(limit)
        return fn(*args, **kwargs)
    outcome: dict[str, Any] = {}

    def body() -> None:
        _local.deep = True
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as err:  # handed to the caller unchanged
            outcome["error"] = err

    thread = threading.Thread(target=contextvars.copy_context().run, args=(body,),
                              name="tirc-deep", daemon=True)
    _raise_limit(limit)
    try:
        started = _start(thread)
        while started and thread.is_alive():
            thread.join(JOIN_SECONDS)
    finally:
        _restore_limit()
    if not started:
        return fn(*args, **kwargs)
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome.pop("value")  # type: ignore[no-any-return]


def deep(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator: every call of `fn` goes through `deep_call`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return deep_call_limited(RECURSION_LIMIT, fn, *args, **kwargs)

    return wrapper


def deep_limited(limit: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: every call goes through `deep_call_limited(limit, ...)`, for work whose
    input may be pathologically deep (a parser), where a lower limit diagnoses it sooner."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            return deep_call_limited(limit, fn, *args, **kwargs)

        return wrapper

    return decorate


def _start(thread: threading.Thread) -> bool:
    """Start `thread` with a STACK_BYTES stack; False when the system refuses one."""
    with _lock:
        try:
            previous = threading.stack_size(STACK_BYTES)
        except (ValueError, RuntimeError):
            return False
        try:
            thread.start()
        except (RuntimeError, MemoryError):
            return False
        finally:
            threading.stack_size(previous)
    return True


def _raise_limit(limit: int) -> None:
    """Raise the process's recursion limit to at least `limit` for one more running call."""
    global _active, _saved_limit, _raised_to
    with _lock:
        current = sys.getrecursionlimit()
        if _active == 0:
            _saved_limit = current
        if current < limit:
            sys.setrecursionlimit(limit)
        _raised_to = sys.getrecursionlimit()
        _active += 1


def _raise_nested(limit: int) -> None:
    """On a helper thread: raise the limit for a nested call that wants more (the stack holds
    RECURSION_LIMIT); the outermost call's `_restore_limit` puts it back."""
    global _raised_to
    with _lock:
        if sys.getrecursionlimit() < limit:
            sys.setrecursionlimit(limit)
            _raised_to = limit


def _restore_limit() -> None:
    """One running deep call fewer; the last one puts the process's recursion limit back."""
    global _active
    with _lock:
        _active -= 1
        if _active == 0 and sys.getrecursionlimit() == _raised_to:
            sys.setrecursionlimit(_saved_limit)
