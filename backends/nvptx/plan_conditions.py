"""The condition of a branch of a GPU launch plan, as the runtime evaluates it on the host.

A graph-level `if` stays in the host function (gpu-split-host-device); its condition becomes
a Python-syntax expression over the plan's names (`"c"`, `"(n > 2)"`, `"(not c) and (f == 1)"`):
integers, booleans, symbolic sizes, scalar parameters, `+ - * // %`, `min`/`max`, the six
comparisons, `and`, `or`, `not`. An element of a tensor the condition reads (a 0-d boolean
tensor held on the device) is a load, named `tirc_load<k>` in the expression, that the runtime
copies to the host after the kernels before the branch finished:
`{"name": "tirc_load0", "kind": "workspace", "workspace": "W", "offset": 16, "dtype": "bool"}`
(or `"kind": "buffer"` with the parameter's `"index"`), `offset` in bytes (an expression).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from tirc.ir.arith import construct
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import INT64
from tirc.ir.expr import BinOp, BufferLoad, Cast, FloatImm, IntImm, Not, PrimExpr, Var, cast

_OPS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%", "eq": "==",
        "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "and", "or": "or"}
_ARITH = ("add", "sub", "mul", "floordiv", "floormod", "min", "max")


class ConditionWriter:
    """Writes one plan's branch conditions; `load_place(buffer)` says where a tensor lives
    (its plan argument, without the offset) or raises CompileError."""

    def __init__(self, func_name: str, bound: set[Var],
                 load_place: Callable[[Any, PrimExpr], dict[str, Any]],
                 offset_text: Callable[[PrimExpr], int | str]) -> None:
        self.func_name = func_name
        self.bound = bound
        self.load_place = load_place
        self.offset_text = offset_text
        self.count = 0

    def error(self, e: PrimExpr, what: str) -> CompileError:
        """A condition the host cannot evaluate."""
        return CompileError(f"codegen: {self.func_name}: the condition of a branch of the GPU "
                            f"launch plan {what} (a host condition is built from sizes, scalar "
                            "parameters and elements of device tensors, with integer "
                            "arithmetic, comparisons, and, or, not)", e.span)

    def condition(self, e: PrimExpr) -> dict[str, Any]:
        """`{"cond": text, "loads": [...]}` for the condition `e` of one branch."""
        loads: list[dict[str, Any]] = []
        text = self.text(e, loads)
        if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
            text = text[1:-1]
        return {"cond": text, "loads": loads}

    def text(self, e: PrimExpr, loads: list[dict[str, Any]]) -> str:
        """The Python text of `e`, parenthesised unless atomic."""
        if isinstance(e, IntImm):
            return str(int(e.value))
        if isinstance(e, FloatImm):  # the constant's own value: comparisons stay exact
            value = float(e.value)
            if e.dtype.bits == 32:
                value = struct.unpack("<f", struct.pack("<f", value))[0]
            return repr(value)
        if isinstance(e, Var):
            if e not in self.bound:
                raise self.error(e, f"uses '{e.name}', which is not a size or a scalar "
                                 "parameter")
            return e.name
        if isinstance(e, Cast):
            inner = self.text(e.value, loads)
            if e.dtype.is_bool and not e.value.dtype.is_bool:
                return f"({inner} != 0)"
            if e.dtype.is_float != e.value.dtype.is_float:
                raise self.error(e, f"converts {e.value.dtype} to {e.dtype}")
            return inner
        if isinstance(e, Not):
            return f"(not {self.text(e.a, loads)})"
        if isinstance(e, BinOp) and e.op in _OPS:
            if e.op in _ARITH and e.dtype.is_float:
                raise self.error(e, "computes with floats")
            return f"({self.text(e.a, loads)} {_OPS[e.op]} {self.text(e.b, loads)})"
        if isinstance(e, BinOp) and e.op in ("min", "max"):
            if e.dtype.is_float:
                raise self.error(e, "computes with floats")
            return f"{e.op}({self.text(e.a, loads)}, {self.text(e.b, loads)})"
        if isinstance(e, BufferLoad):
            return self.load(e, loads)
        raise self.error(e, f"holds a {type(e).__name__}")

    def load(self, e: BufferLoad, loads: list[dict[str, Any]]) -> str:
        """A load of one element from the device: its entry in `loads`, and its name."""
        buf = e.buffer
        if e.dtype.kind == "bfloat" or e.dtype.is_narrow_float:
            raise self.error(e, f"reads a {e.dtype} element")
        if len(e.indices) != 1 or e.dtype.lanes != 1:
            raise self.error(e, f"reads '{buf.name}' with {len(e.indices)} indices (flat "
                             "buffers only)")
        index: PrimExpr = cast("int64", e.indices[0])
        if buf.elem_offset is not None:
            index = construct.add(cast("int64", buf.elem_offset), index)
        name = f"tirc_load{self.count}"
        self.count += 1
        entry = {"name": name, **self.load_place(buf, e),
                 "offset": self.offset_text(construct.mul(index, IntImm(buf.dtype.bytes, INT64))),
                 "dtype": str(e.dtype)}
        loads.append(entry)
        return name


def _balanced(text: str) -> bool:
    """Whether the parentheses of `text` balance without going below zero."""
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0
