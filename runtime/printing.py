"""The functions behind a library's print slots: `R.print` in compiled code.

A print's slot is named `tirc.print.x` and the hex digits of JSON text holding the print's
format and the structure of its values (tirc.ir.print_call; the runtime reads it itself, as
it imports nothing of the compiler). The library calls it with one array per leaf value,
depth first: a tensor, a shape as an int64 array of its entries, an `R.Prim` value as a 0-d
array. Each value is rendered as the interpreter renders it (TVM's relax.run.print: a tensor
as NumPy's `str`, a tuple or shape as `(a, b)`, a scalar as a number), and the line is printed
with Python's print, flushed, so it comes in order with the program's other output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

PRINT_PREFIX = "tirc.print.x"


def _render(kind: Any, leaves: Iterator[np.ndarray]) -> str:
    """One value of the structure, from the leaves it takes."""
    if isinstance(kind, list):
        return "(" + ", ".join(_render(k, leaves) for k in kind) + ")"
    a = next(leaves)
    if kind == "s":
        return "(" + ", ".join(str(int(x)) for x in a.reshape(-1)) + ")"
    if kind == "p":
        return str(a.reshape(-1)[0])
    return str(a)


def print_function(name: str) -> Callable[..., None] | None:
    """The function printing for the slot `name`, or None when it is not a print's."""
    if not name.startswith(PRINT_PREFIX):
        return None
    desc = json.loads(bytes.fromhex(name[len(PRINT_PREFIX):]).decode())
    fmt = desc["format"]

    def print_values(*leaves: np.ndarray) -> None:
        rest = iter(leaves)
        texts = [_render(k, rest) for k in desc["values"]]
        print(fmt.format(*texts) if fmt else " ".join(texts), flush=True)

    return print_values
