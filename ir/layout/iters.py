"""`Iter`: one `extent:stride@axis` factor of a layout."""

from __future__ import annotations

from tirc.ir.layout.axes import MEMORY, Axis, get_axis
from tirc.ir.layout.errors import LayoutError
from tirc.ir.layout.symbolic import Sym, Value, as_value, format_value, is_atomic, sort_key
from tirc.ir.lean_dataclass import dataclass


@dataclass(frozen=True, init=False)
class Iter:
    """A digit of extent `extent` that moves `stride` units along `axis` per step."""

    extent: Value
    stride: Value
    axis: Axis

    def __init__(self, extent: object, stride: object = 1, axis: str | Axis = MEMORY) -> None:
        ext = as_value(extent, "iter extent")
        if isinstance(ext, int) and ext < 1:
            raise LayoutError(f"iter extent must be positive, got {ext}")
        object.__setattr__(self, "extent", ext)
        object.__setattr__(self, "stride", as_value(stride, "iter stride"))
        object.__setattr__(self, "axis", get_axis(axis))

    def with_(self, extent: Value | None = None, stride: Value | None = None,
              axis: Axis | None = None) -> Iter:
        """A copy with some fields replaced."""
        return Iter(
            self.extent if extent is None else extent,
            self.stride if stride is None else stride,
            self.axis if axis is None else axis,
        )

    def stride_text(self, script: bool = False, bare: bool = True) -> str:
        """The stride as written in the notation: `4@laneid`, or `4` on the memory axis `m`.

        `bare=False` parenthesizes a compound stride on `m` (for the one-iter form `S[e:s]`).
        """
        if self.axis == MEMORY and bare:
            return format_value(self.stride)
        return on_axis_text(self.stride, self.axis, script)

    def sort_key(self) -> tuple:
        """A deterministic order, used to sort replicas in canonical form."""
        return (self.axis.name, sort_key(self.stride), sort_key(self.extent))

    def __str__(self) -> str:
        return f"{operand_text(self.extent)}:{self.stride_text(bare=False)}"


def operand_text(v: Value) -> str:
    """A value as one operand: bare when atomic, parenthesized otherwise."""
    text = format_value(v)
    return text if is_atomic(v) else f"({text})"


def on_axis_text(v: Value, axis: Axis, script: bool = False) -> str:
    """`v@axis` (`v @ Axis.axis` in script form); plain `v` on the memory axis `m`."""
    if axis == MEMORY:
        return operand_text(v)
    if script:
        return f"{operand_text(v)} @ Axis.{axis.name}"
    return f"{operand_text(v)}@{axis.name}"


def term_text(v: Value) -> str:
    """A value as a top-level `+` term: parenthesized when it is itself a sum."""
    text = format_value(v)
    return f"({text})" if isinstance(v, Sym) and len(v.terms) > 1 else text
