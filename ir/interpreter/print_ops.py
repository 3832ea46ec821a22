"""`R.print` for the interpreter: TVM's `relax.run.print`, which renders each value as text
(a tensor as NumPy prints it, a tuple as `(a, b)`) and prints them with Python's print,
through `format.format(...)` when a format string is given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def render(value: Any) -> str:
    """A value as TVM's render_object writes it."""
    if isinstance(value, tuple):
        return "(" + ", ".join(render(v) for v in value) + ")"
    if isinstance(value, np.ndarray):
        return str(value)
    return str(value)


def print_values(values: tuple[Any, ...], format: str = "") -> tuple[()]:  # noqa: A002
    """Print `values` (TVM's R.print) and return the empty tuple, its result."""
    texts = [render(v) for v in values]
    print(format.format(*texts) if format else " ".join(texts), flush=True)
    return ()


PRINT_OPS: dict[str, Callable[..., Any]] = {"print": print_values}
