"""Copying IR with variables rebound: substitution that reaches into buffer definitions.

`ir.visitor.substitute` treats buffers as leaves; a lowering pass that replaces a block's
iteration variable must also rewrite a buffer whose shape mentions it. `rebind` does both, and
`fresh_copy` also gives every variable and buffer defined inside the copy a new identity, so a
body duplicated by unrolling or loop splitting never defines the same object twice.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.buffer import Buffer
from tirc.ir.expr import Let, PrimExpr, Var
from tirc.ir.node import IdentityNode
from tirc.ir.stmt import Allocate, Block, For, IterVar, LetStmt
from tirc.ir.visitor import Mutator, Visitor


class _Rebinder(Mutator):
    """Replaces mapped variables and buffers; rebuilds buffers whose fields change."""

    def __init__(self, mapping: dict[Any, Any], fresh: bool) -> None:
        self.mapping: dict[Any, Any] = dict(mapping)
        # a mapped buffer's storage handle follows it where the body uses it alone
        # (`T.call_prim(f, A.data, ...)`, a view `T.Buffer(..., data=A.data)`)
        for old, new in mapping.items():
            if isinstance(old, Buffer) and isinstance(new, Buffer):
                self.mapping.setdefault(old.data, new.data)
        self.fresh = fresh

    def visit(self, n: Any) -> Any:
        if isinstance(n, IdentityNode):
            if n in self.mapping:
                return self.mapping[n]
            if isinstance(n, Buffer):
                return self.buffer(n, renew=False)
            return n
        return super().visit(n)

    def buffer(self, b: Buffer, renew: bool) -> Buffer:
        """`b` with its fields rebound (a new object when they change or `renew` is set)."""
        shape = self.visit(b.shape)
        strides = self.visit(b.strides)
        offset = self.visit(b.elem_offset)
        data = self.visit(b.data)
        if renew:  # the storage is defined here: its views in the copy follow it
            data = self.mapping[b.data] = Var(b.data.name, b.data.dtype)
        if not renew and shape is b.shape and strides is b.strides and offset is b.elem_offset \
                and data is b.data:
            new = b
        else:
            new = dataclasses.replace(b, shape=shape, strides=strides, elem_offset=offset,
                                      data=data)
        self.mapping[b] = new
        return new

    def define_var(self, v: Var) -> None:
        if self.fresh:
            self.mapping[v] = Var(v.name, v.dtype)

    def define_buffer(self, b: Buffer) -> None:
        self.buffer(b, renew=self.fresh)

    def visit_For(self, s: For) -> Any:
        self.define_var(s.loop_var)
        return self.generic_visit(s)

    def visit_LetStmt(self, s: LetStmt) -> Any:
        value = self.visit(s.value)
        self.define_var(s.var)
        return s.replace(var=self.visit(s.var), value=value, body=self.visit(s.body))

    def visit_Let(self, e: Let) -> Any:
        value = self.visit(e.value)
        self.define_var(e.var)
        return e.replace(var=self.visit(e.var), value=value, body=self.visit(e.body))

    def visit_Allocate(self, s: Allocate) -> Any:
        self.define_buffer(s.buffer)
        return self.generic_visit(s)

    def visit_IterVar(self, iv: IterVar) -> Any:
        self.define_var(iv.var)
        return self.generic_visit(iv)

    def visit_Block(self, blk: Block) -> Any:
        for b in blk.alloc_buffers:
            self.define_buffer(b)
        for m in blk.match_buffers:
            self.define_buffer(m.buffer)
        return self.generic_visit(blk)


def rebind(node: Any, mapping: dict[Any, Any]) -> Any:
    """Substitute variables (and buffers) everywhere under `node`, buffer shapes included."""
    if not mapping:
        return node
    return _Rebinder(mapping, fresh=False).visit(node)


def fresh_copy(node: Any, mapping: dict[Any, Any] | None = None) -> Any:
    """A copy of `node` with `mapping` applied and new objects for everything defined inside."""
    return _Rebinder(mapping or {}, fresh=True).visit(node)


class _VarUses(Visitor):
    def __init__(self) -> None:
        self.found: set[Var] = set()

    def visit_Var(self, v: Var) -> None:
        self.found.add(v)


def used_vars(*nodes: Any) -> set[Var]:
    """Every variable that appears under `nodes` (buffer shapes and data handles included)."""
    uses = _VarUses()
    for n in nodes:
        uses.visit(n)
    return uses.found


def uses_any(node: Any, variables: set[Var] | dict[Var, Any]) -> bool:
    """True when some variable of `variables` appears under `node`."""
    if not variables:
        return False
    return not used_vars(node).isdisjoint(variables)


def expr_uses(e: PrimExpr, v: Var) -> bool:
    """True when the expression `e` mentions `v`."""
    return v in used_vars(e)
