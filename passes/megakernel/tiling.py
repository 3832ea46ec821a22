"""Tiles of a host function: split its body into hoisted scopes and task kinds.

After lower-graph, a host function is a few scoping statements (the workspace, size lets,
shape asserts, constants) around the kernels in order; default-schedule made each kernel's
outer spatial loop a `parallel` loop over tiles. Each top-level parallel loop becomes a task
kind whose tasks are its iterations, grouped `tile` at a time (config key "megakernel.tile",
default 1: default-schedule's tiles); so does a choice between such loops by a condition on
the shapes (`if n == 1: <tiles of one kind> else: <tiles of another>`: the kind has the
chosen branch's tiles). Any other statement becomes a kind with one task.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.ir.dtype import DType
from tirc.ir.expr import IntImm, PrimExpr, Var, binop, minimum, select
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    Block,
    BlockRealize,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from tirc.ir.visitor import post_order_visit, substitute

Wrap = Callable[[Stmt], Stmt]
INDEX = DType("int", 64)


@dataclass
class TaskKind:
    """Tasks `var` in [0, extent) running `body` (which uses `var` as the tile index)."""

    name: str
    var: Var
    extent: PrimExpr
    body: Stmt


def split_host(body: Stmt) -> tuple[list[Wrap], list[Stmt]]:
    """The scoping statements (outermost first) and the kernel statements in order.

    Lets, asserts and allocations anywhere in the top-level sequence are hoisted above all
    kernels: lower-graph only emits size lets, shape asserts and storage there, none of which
    depends on what a kernel computes. Root blocks are opened and their buffers hoisted.
    """
    wraps: list[Wrap] = []
    stages: list[Stmt] = []

    def walk(s: Stmt) -> None:
        if isinstance(s, SeqStmt):
            for x in s.seq:
                walk(x)
        elif isinstance(s, LetStmt):
            wraps.append(lambda b, s=s: LetStmt(s.var, s.value, b))
            walk(s.body)
        elif isinstance(s, AssertStmt):
            wraps.append(lambda b, s=s: AssertStmt(s.condition, s.message, b))
            walk(s.body)
        elif isinstance(s, Allocate):
            wraps.append(lambda b, s=s: Allocate(s.buffer, b, s.init))
            walk(s.body)
        elif isinstance(s, BlockRealize) and not s.block.iter_vars and s.block.init is None \
                and not s.block.match_buffers:
            for buf in s.block.alloc_buffers:
                wraps.append(lambda b, buf=buf: Allocate(buf, b))
            walk(s.block.body)
        elif isinstance(s, IfThenElse) and _opaque(s.then_case) and \
                (s.else_case is None or _opaque(s.else_case)):
            # the variants of a dispatch (`if n == 1:` one schedule, else another), each a
            # block allocating its own intermediates: the allocations are hoisted too
            branches = [s.then_case] + ([s.else_case] if s.else_case is not None else [])
            for br in branches:
                for buf in br.block.alloc_buffers:  # type: ignore[attr-defined]
                    wraps.append(lambda b, buf=buf: Allocate(buf, b))
            stages.append(IfThenElse(s.condition, s.then_case.block.body,  # type: ignore[attr-defined]
                                     None if s.else_case is None else
                                     s.else_case.block.body))  # type: ignore[attr-defined]
        else:
            stages.append(s)

    walk(body)
    return wraps, stages


def _opaque(s: Stmt) -> bool:
    """A block with no iteration variable, init or match buffer (a scope, not a kernel)."""
    return isinstance(s, BlockRealize) and not s.block.iter_vars and s.block.init is None \
        and not s.block.match_buffers


def first_block_name(s: Stmt) -> str | None:
    """The name of the first block under `s`, for naming its task kind."""
    names: list[str] = []

    def visit(n: object) -> None:
        if isinstance(n, Block) and n.name != "root":
            names.append(n.name)

    post_order_visit(s, visit)
    return names[-1] if names else None


def make_kinds(stages: list[Stmt], tile: int = 1) -> list[TaskKind]:
    """One task kind per kernel statement, in program (topological) order."""
    kinds: list[TaskKind] = []
    used: set[str] = set()
    for k, s in enumerate(stages):
        base = first_block_name(s) or f"task{k}"
        name = base
        while name in used:
            name = f"{base}_{len(used)}"
        used.add(name)
        kind = _tileable(name, s, tile)
        if kind is not None:
            kinds.append(kind)
        else:
            kinds.append(TaskKind(name, Var(f"{_ident(name)}_t", INDEX), IntImm(1, INDEX), s))
    return kinds


def _tileable(name: str, s: Stmt, tile: int) -> TaskKind | None:
    """The tasks of a kernel statement that is a parallel loop, or a choice between kernels
    by a condition on the shapes (`if c: <kernel> [else: <kernel>]`, as default-schedule's
    specialisations and lower-graph's empty-extent tests make); None for anything else."""
    if isinstance(s, For) and s.kind == ForKind.PARALLEL:
        return _tiled(name, s, tile)
    if not isinstance(s, IfThenElse):
        return None
    then = _tileable(name, s.then_case, tile)
    if then is None:
        return None
    if s.else_case is None:
        # `if extent > 0: for tile in T.parallel(extent)`: no tasks when the test fails.
        then.extent = select(s.condition, then.extent, IntImm(0, then.extent.dtype))
        return then
    other = _tileable(name, s.else_case, tile)
    if other is None or other.var.dtype != then.var.dtype:
        return None
    body = substitute(other.body, {other.var: then.var})
    return TaskKind(name, then.var, select(s.condition, then.extent, other.extent),
                    IfThenElse(s.condition, then.body, body))


def _tiled(name: str, loop: For, tile: int) -> TaskKind:
    """The iterations of a parallel loop as tasks, `tile` consecutive ones per task."""
    v = loop.loop_var
    if tile <= 1:
        body = loop.body if isinstance(loop.min, IntImm) and loop.min.value == 0 else \
            substitute(loop.body, {v: binop("add", v, loop.min)})
        return TaskKind(name, v, loop.extent, body)
    task = Var(f"{v.name}_task", v.dtype)
    start = binop("add", loop.min, binop("mul", task, tile))
    count = minimum(tile, binop("sub", loop.extent, binop("mul", task, tile)))
    inner = For(v, start, count, ForKind.SERIAL, loop.body)
    extent = binop("floordiv", binop("add", loop.extent, tile - 1), tile)
    return TaskKind(name, task, extent, inner)


def _ident(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)
