"""Printing layouts in the short notation and in TVMScript form.

Short: `S[(8, 2):(4@laneid, 1)] + R[2:4@warpid] + 5@warpid`. Script:
`T.TileLayout(T.S[(8, 2):(4 @ Axis.laneid, 1)] + T.R[2:4 @ Axis.warpid] + 5 @ Axis.warpid)`.
Both parse back (`parse_layout`) to a structurally identical layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from tirc.ir.layout.axes import MEMORY, get_axis
from tirc.ir.layout.iters import Iter, on_axis_text, operand_text, term_text
from tirc.ir.layout.symbolic import Sym, Value, format_value


def format_iters(iters: Sequence[Iter], script: bool = False) -> str:
    """The inside of `S[...]`/`R[...]`: `64:1` for one iter, `(a, b):(s, t)` otherwise."""
    if not iters:
        return "()"
    if len(iters) == 1:
        it = iters[0]
        return f"{operand_text(it.extent)}:{it.stride_text(script, bare=False)}"
    extents = ", ".join(format_value(it.extent) for it in iters)
    strides = ", ".join(it.stride_text(script) for it in iters)
    return f"({extents}):({strides})"


def format_offset_term(axis_name: str, value: Value, script: bool = False) -> str:
    """` + 5@warpid`, ` - 3` (on `m`), ` + (K + 1)@laneid`."""
    axis = get_axis(axis_name)
    negative = isinstance(value, int) and value < 0 or (
        isinstance(value, Sym) and len(value.terms) == 1 and value.terms[0][1] < 0
    )
    sign, magnitude = (" - ", -value) if negative else (" + ", value)
    if axis == MEMORY:
        return sign + term_text(magnitude)
    return sign + on_axis_text(magnitude, axis, script)


def format_tile(shard: Sequence[Iter], replica: Sequence[Iter],
                offset: Sequence[tuple[str, Value]], script: bool = False) -> str:
    """The whole `S[..] + R[..] + offsets` sum (no `TileLayout(...)` wrapper)."""
    prefix = "T." if script else ""
    text = f"{prefix}S[{format_iters(shard, script)}]"
    if replica:
        text += f" + {prefix}R[{format_iters(replica, script)}]"
    for axis_name, value in offset:
        text += format_offset_term(axis_name, value, script)
    return text
