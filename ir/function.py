"""Loop-level functions (TensorIR's PrimFunc)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DType
from tirc.ir.expr import Var
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import Node
from tirc.ir.stmt import Stmt


@dataclass(frozen=True)
class PrimFunc(Node):
    """A loop function: parameters (handles or scalars), the buffers behind handles, a body.

    `buffer_map` maps a handle parameter to the buffer it is matched to; `attrs` holds
    `T.func_attr` entries (e.g. "global_symbol", "tir.noalias"). `private` is
    `@T.prim_func(private=True)`: a helper that other functions call, not exported.
    `s_tir` remembers `@T.prim_func(s_tir=True)` as written (TVM 0.27's mark of a function
    with blocks); it only affects printing. `ret_dtype` is the dtype of the value the
    function returns (`-> T.float32` with `return value`), None when it returns nothing.
    """

    name: str
    params: tuple[Var, ...]
    buffer_map: dict[Var, Buffer] = field(hash=False)
    body: Stmt = field(hash=False)
    attrs: dict[str, Any] = field(default_factory=dict, hash=False)
    private: bool = False
    s_tir: bool = field(default=False, compare=False)
    ret_dtype: DType | None = None

    def buffer_of(self, param: Var) -> Buffer | None:
        return self.buffer_map.get(param)

    @property
    def buffers(self) -> list[Buffer]:
        """The parameter buffers in parameter order."""
        return [self.buffer_map[p] for p in self.params if p in self.buffer_map]
