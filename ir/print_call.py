"""`R.print` in compiled code: a call through a slot whose dotted name carries the print.

lower-graph writes each `R.print(values..., format=F)` as a `tirc.call_packed`
(tirc.ir.packed_call) of the name `print_symbol(F, structure)`: `tirc.print.x` and the hex
digits of JSON text holding the format and the structure of the values (a list per tuple,
TENSOR, SHAPE or PRIM per leaf). Its tensors are the leaf values, depth first: a tensor
itself, a shape as an int64 tensor of its entries, an `R.Prim` value as a 0-d tensor of its
dtype. The function behind the slot (the loader's, tirc.runtime.printing; the interpreter's
for lowered code) renders them as the interpreter renders the graph's values and prints one
line (docs/abi.md, "Printing"). A library whose slot is empty (a C program that fills none)
skips the print.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

PRINT_PREFIX = "tirc.print.x"
# The kinds of leaf a print's structure names; a tuple is a list of structures.
TENSOR, SHAPE, PRIM = "t", "s", "p"

Structure: TypeAlias = "str | list[Structure]"


def print_symbol(fmt: str, structure: list[Structure]) -> str:
    """The dotted name of the slot of a print with format `fmt` and values `structure`."""
    return PRINT_PREFIX + json.dumps({"format": fmt, "values": structure}).encode().hex()


def is_print_symbol(symbol: str) -> bool:
    """Whether `symbol` names a print's slot (print_symbol)."""
    return symbol.startswith(PRINT_PREFIX)


def print_descriptor(symbol: str) -> dict[str, Any]:
    """The format and structure a print's slot name carries."""
    return json.loads(bytes.fromhex(symbol[len(PRINT_PREFIX):]).decode())  # type: ignore[no-any-return]
