"""`tirc.ir.deep_call`: work runs on a big-stack helper thread with a raised recursion limit,
returns and raises exactly what the callee does, nests without new threads, and leaves the
process's recursion limit as it found it."""

from __future__ import annotations

import contextvars
import subprocess
import sys
import textwrap
import threading

import pytest
from tirc.ir.deep_call import (
    RECURSION_LIMIT,
    deep,
    deep_call,
    deep_call_limited,
    deep_limited,
    on_deep_thread,
)

DEPTH = 20_000  # twenty times Python's default limit

_colour: contextvars.ContextVar[str] = contextvars.ContextVar("colour", default="none")


def _depth(n: int) -> int:
    """Recurse `n` frames deep, through C on every frame (a generator consumed by sum)."""
    return 0 if n == 0 else 1 + sum(_depth(n - 1) for _ in (0,))


def test_recursion_far_past_the_default_limit_works() -> None:
    assert deep_call(_depth, DEPTH) == DEPTH


def test_the_limit_is_restored_after_a_return_and_after_a_raise() -> None:
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1234)
        seen: list[int] = []
        deep_call(lambda: seen.append(sys.getrecursionlimit()))
        assert seen == [RECURSION_LIMIT]
        assert sys.getrecursionlimit() == 1234
        with pytest.raises(ValueError):
            deep_call(int, "not a number")
        assert sys.getrecursionlimit() == 1234
    finally:
        sys.setrecursionlimit(before)


def test_a_lower_limit_holds_until_a_nested_call_wants_more() -> None:
    before = sys.getrecursionlimit()

    @deep_limited(5000)
    def outer() -> tuple[int, int, int]:
        first = sys.getrecursionlimit()
        nested = deep_call(sys.getrecursionlimit)
        return first, nested, sys.getrecursionlimit()

    assert outer() == (5000, RECURSION_LIMIT, RECURSION_LIMIT)
    assert sys.getrecursionlimit() == before
    with pytest.raises(RecursionError):
        deep_call_limited(5000, _depth, 10_000)
    assert sys.getrecursionlimit() == before
    with pytest.raises(ValueError, match="outside"):
        deep_call_limited(RECURSION_LIMIT + 1, int)


def test_exceptions_come_back_unchanged() -> None:
    err = KeyError("gone")

    def fail() -> None:
        raise err

    with pytest.raises(KeyError) as info:
        deep_call(fail)
    assert info.value is err
    assert any(entry.name == "fail" for entry in info.traceback)  # the helper's frames too
    with pytest.raises(KeyboardInterrupt):
        deep_call(_raise, KeyboardInterrupt())
    with pytest.raises(SystemExit) as stop:
        deep_call(sys.exit, 3)
    assert stop.value.code == 3


def _raise(err: BaseException) -> None:
    """Raise `err` (a helper for lambdas)."""
    raise err


def test_runs_on_a_helper_thread_and_nested_calls_stay_on_it() -> None:
    caller = threading.get_ident()
    assert not on_deep_thread()

    def outer() -> tuple[int, int, bool]:
        return threading.get_ident(), deep_call(threading.get_ident), on_deep_thread()

    helper, nested, flagged = deep_call(outer)
    assert helper != caller and nested == helper and flagged
    assert not on_deep_thread()


def test_arguments_keywords_and_context_variables_pass_through() -> None:
    token = _colour.set("blue")
    try:
        assert deep_call(lambda a, *, b: (a, b, _colour.get()), 1, b=2) == (1, 2, "blue")
    finally:
        _colour.reset(token)


def test_decorator_keeps_name_docstring_and_signature() -> None:
    @deep
    def twice(x: int) -> int:
        """Two times x."""
        return 2 * x

    assert twice(21) == 42
    assert twice.__name__ == "twice" and twice.__doc__ == "Two times x."
    assert "x" in __import__("inspect").signature(twice).parameters


def test_concurrent_calls_restore_the_limit_once_all_are_done() -> None:
    before = sys.getrecursionlimit()
    release = threading.Event()
    inside = threading.Barrier(3)

    def work() -> int:
        inside.wait(timeout=10)
        release.wait(timeout=10)
        return _depth(DEPTH // 4)

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(deep_call(work)))
               for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait(timeout=10)
    assert sys.getrecursionlimit() == RECURSION_LIMIT
    release.set()
    for t in threads:
        t.join(timeout=30)
    assert results == [DEPTH // 4] * 2
    assert sys.getrecursionlimit() == before


def test_going_past_the_raised_limit_is_a_recursion_error_not_a_crash() -> None:
    # In a child process: were the stack too small for the limit, this would be a segfault.
    code = textwrap.dedent("""
        import sys
        from tirc.ir.deep_call import deep_call

        def down(n):
            return list(map(down, [n + 1]))  # each frame entered from C (the most stack)

        before = sys.getrecursionlimit()
        try:
            deep_call(down, 0)
        except RecursionError:
            print("RecursionError")
        print(sys.getrecursionlimit() == before)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["RecursionError", "True"]
