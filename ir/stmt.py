"""Statements of the loop IR (TensorIR): loops, blocks, stores, control flow."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import field
from typing import Any

from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import BOOL
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import Node


class ForKind(enum.Enum):
    """How a loop's iterations run."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unroll"
    THREAD_BINDING = "thread_binding"


class IterKind(enum.Enum):
    """The role of a block iteration variable (TVM's IterVarType)."""

    SPATIAL = "S"
    REDUCE = "R"
    OPAQUE = "O"


@dataclass(frozen=True)
class Stmt(Node):
    """Base of statements."""


@dataclass(frozen=True)
class BufferStore(Stmt):
    """`buffer[indices] = value`."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]


@dataclass(frozen=True)
class LetStmt(Stmt):
    """`var = value` scoped over `body`."""

    var: Var
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True)
class AssertStmt(Stmt):
    """`assert condition, message`, then `body`; entry points check arguments with it."""

    condition: PrimExpr
    message: str
    body: Stmt


@dataclass(frozen=True)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True)
class While(Stmt):
    condition: PrimExpr
    body: Stmt


@dataclass(frozen=True)
class For(Stmt):
    """A loop over [min, min + extent) of the given kind."""

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_tag: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class SeqStmt(Stmt):
    """Statements in order."""

    seq: tuple[Stmt, ...]


@dataclass(frozen=True)
class Evaluate(Stmt):
    """Evaluate an expression for its effect (intrinsic calls)."""

    value: PrimExpr


# AttrStmt key of `T.device_entry()`: the rest of the function body is device code.
DEVICE_ENTRY = "tirx.device_entry"


@dataclass(frozen=True)
class AttrStmt(Stmt):
    """An attribute over `body`: `T.attr(node, key, value)`, `T.launch_thread(...)`."""

    node: Any
    key: str
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True)
class Allocate(Stmt):
    """Storage for `buffer` over `body` (`T.decl_buffer`, or `T.event_tensor` with `init`)."""

    buffer: Buffer
    body: Stmt
    init: PrimExpr | None = None


@dataclass(frozen=True)
class MatchBufferRegion(Node):
    """A block-local buffer viewing a region of another (`T.match_buffer(A[...], ...)`)."""

    buffer: Buffer
    source: BufferRegion


@dataclass(frozen=True)
class IterVar(Node):
    """A block iteration variable with its domain and role."""

    var: Var
    dom: Range
    kind: IterKind


@dataclass(frozen=True)
class Block(Stmt):
    """A TensorIR block: iteration variables, regions, optional init, local buffers."""

    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Stmt | None = None
    alloc_buffers: tuple[Buffer, ...] = ()
    match_buffers: tuple[MatchBufferRegion, ...] = ()
    annotations: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class BlockRealize(Stmt):
    """A block placed in a loop nest: values bound to its iteration variables."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block


def seq(*stmts: Stmt | None) -> Stmt:
    """A sequence, flattening nested sequences and dropping Nones; one statement stays itself
    and none is `T.evaluate(0)`."""
    out: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            out.extend(s.seq)
        else:
            out.append(s)
    if len(out) == 1:
        return out[0]
    if not out:
        return Evaluate(IntImm(0))  # the empty statement, as `pass` reads
    return SeqStmt(tuple(out))


def inside_root_block(body: Stmt, wrap: Callable[[Stmt], Stmt]) -> Stmt:
    """A function body with `wrap` applied to the statements of its root block (a root block
    is made when the body has none), so what `wrap` adds stays inside the function's scope."""
    if not (isinstance(body, BlockRealize) and body.block.name == "root" and
            not body.block.iter_vars):
        body = BlockRealize((), IntImm(1, BOOL), Block("root", (), (), (), body))
    return body.replace(block=body.block.replace(body=wrap(body.block.body)))
