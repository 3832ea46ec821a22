"""Schedules as written in a `.tir` file: a straight-line list of primitive calls."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.ir.lean_dataclass import dataclass
from tirc.ir.node import Node


@dataclass(frozen=True)
class SchedRef(Node):
    """A name bound by an earlier instruction (a block or loop random variable)."""

    name: str


@dataclass(frozen=True)
class SchedLambda(Node):
    """`lambda i, j: (i // 16, j, i % 16)`: an index map argument (body as PrimExprs)."""

    params: tuple[Any, ...]  # tirc.ir.expr.Var
    body: tuple[Any, ...]  # tirc.ir.expr.PrimExpr


@dataclass(frozen=True)
class SchedInstr(Node):
    """`outputs = sch.prim(args, key=value)`; arguments are ints, floats, strings, None,
    bools, SchedRef, SchedLambda, or tuples of these."""

    outputs: tuple[str, ...]
    prim: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict, hash=False)
    unpack: bool = False  # `a, b = ...` (tuple target) rather than `a = ...`


@dataclass(frozen=True)
class Schedule(Node):
    """`@S.schedule("func", target="llvm") def name(sch): ...`."""

    func_name: str
    target: str | None
    name: str
    param: str
    instrs: tuple[SchedInstr, ...]
