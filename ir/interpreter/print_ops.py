"""`R.print` for the interpreter: TVM's `relax.run.print`, which renders each value as text
(a tensor as NumPy prints it, a tuple as `(a, b)`) and prints them with Python's print,
through `format.format(...)` when a format string is given."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from tirc.ir.print_call import PRIM, SHAPE, Structure, print_descriptor


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


def _unpack(kind: Structure, leaves: Iterator[np.ndarray]) -> Any:
    """One value of a compiled print's structure, rebuilt from the leaves it takes."""
    if isinstance(kind, list):
        return tuple(_unpack(k, leaves) for k in kind)
    a = next(leaves)
    if kind == SHAPE:
        return tuple(int(x) for x in a.reshape(-1))
    if kind == PRIM:
        value = a.reshape(-1)[0]
        return value if a.dtype.kind == "f" else value.item()
    return a.copy()


def print_packed(symbol: str) -> Callable[..., int]:
    """The interpreter's function for a print's slot in lowered code (tirc.ir.print_call):
    the values rebuilt from the tensors, then printed as `R.print` prints them."""
    desc = print_descriptor(symbol)

    def run(*leaves: np.ndarray) -> int:
        rest = iter(leaves)
        print_values(tuple(_unpack(k, rest) for k in desc["values"]), desc["format"])
        return 0

    return run


PRINT_OPS: dict[str, Callable[..., Any]] = {"print": print_values}
