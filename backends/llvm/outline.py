"""Outlining support: which values a region uses from outside, and passing them in a struct."""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from tirc.ir.expr import Var
from tirc.ir.node import Node
from tirc.ir.visitor import post_order_visit


def captured_vars(node: Any, env: dict[Var, ir.Value]) -> list[Var]:
    """Variables used under `node` that are defined outside it (present in `env`), in order."""
    seen: dict[Var, None] = {}

    def note(n: Node) -> None:
        if isinstance(n, Var) and n in env:
            seen[n] = None

    post_order_visit(node, note)
    return list(seen)


def pack(b: ir.IRBuilder, slot: ir.Value, ty: ir.LiteralStructType, first: int,
         values: list[ir.Value]) -> None:
    """Store `values` into struct fields first, first + 1, ... of the struct at `slot`."""
    for i, v in enumerate(values):
        addr = b.gep(slot, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), first + i)],
                     inbounds=True, source_etype=ty)
        b.store(v, addr)


def unpack(b: ir.IRBuilder, slot: ir.Value, ty: ir.LiteralStructType, first: int,
           count: int) -> list[ir.Value]:
    """Load struct fields first .. first + count - 1 of the struct at `slot`."""
    out = []
    for i in range(count):
        addr = b.gep(slot, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), first + i)],
                     inbounds=True, source_etype=ty)
        out.append(b.load(addr, typ=ty.elements[first + i]))
    return out
