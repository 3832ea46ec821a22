"""Loop jumps: `T.break_loop()` and `T.continue_loop()` (Python's `break` and `continue`).

A jump is the statement `Evaluate(Call(break_loop | continue_loop))`. It acts on its target, the
innermost `For` or `While` around it; the path from the jump up to its target crosses no block
(`BlockRealize`), no sparse iteration and no thread launch (a `thread_extent` attribute), and
the target is a `while` loop or a serial or unrolled `for` loop: a jump out of a parallel,
vectorized or thread-bound loop has no meaning (its iterations do not run one after the other).

Passes that copy, peel, unroll, vectorize, parallelize or remove a loop ask
`contains_loop_jump` first and leave a loop with a jump in it as it is (or refuse, for a
schedule primitive); `escaping_loop_jumps` finds the jumps of a statement that target a loop
around it (replacing a loop by its body is wrong when the body has one); `loop_jump_errors` is
the well-formedness rule that the frontend, `verify` and the backends share.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.attrs import THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.expr import Call, PrimExpr
from tirc.ir.intrinsics import BREAK_LOOP, CONTINUE_LOOP
from tirc.ir.node import Node
from tirc.ir.span import Span
from tirc.ir.sparse.iteration import SparseIteration
from tirc.ir.stmt import AttrStmt, BlockRealize, Evaluate, For, ForKind, Stmt, While, seq
from tirc.ir.visitor import Mutator, any_node, children

LOOP_JUMPS = (BREAK_LOOP, CONTINUE_LOOP)
JUMP_TARGET_KINDS = (ForKind.SERIAL, ForKind.UNROLLED)
_SPELLING = {BREAK_LOOP: "'break'", CONTINUE_LOOP: "'continue'"}


def jump_kind(node: Any) -> str | None:
    """`break_loop` or `continue_loop` when `node` is a jump statement, else None."""
    if isinstance(node, Evaluate) and isinstance(node.value, Call) and \
            node.value.op in LOOP_JUMPS:
        return node.value.op
    return None


def contains_loop_jump(node: Any) -> bool:
    """Whether a break or continue occurs anywhere under `node` (`node` included)."""
    return any_node(node, lambda n: isinstance(n, Call) and n.op in LOOP_JUMPS)


def escaping_loop_jumps(node: Any) -> list[Evaluate]:
    """The jumps under `node` that no loop inside `node` encloses: they target a loop around
    `node` (or none)."""
    found: list[Evaluate] = []

    def walk(n: Any) -> None:
        if isinstance(n, (For, While, PrimExpr)):
            return  # a jump is a statement: none is inside an expression
        if isinstance(n, Node):
            if jump_kind(n) is not None:
                found.append(n)  # type: ignore[arg-type]
                return
            for _, v in children(n):
                walk(v)
        elif isinstance(n, (tuple, list)):
            for x in n:
                walk(x)

    walk(node)
    return found


def describe(jump: Evaluate) -> str:
    """`'break'` or `'continue'`, as a message names it."""
    return _SPELLING[jump_kind(jump) or BREAK_LOOP]


def loop_jump_errors(node: Any) -> list[tuple[str, Span | None]]:
    """(message, place) for each jump under `node` that has no valid target (see the module
    docstring); the loops around `node` are not known, so a jump escaping `node` counts as
    outside any loop."""
    errors: list[tuple[str, Span | None]] = []

    def walk(n: Any, target: For | While | None, barrier: str | None) -> None:
        if isinstance(n, Node):
            kind = jump_kind(n)
            if kind is not None:
                what = _SPELLING[kind]
                span = n.span
                if barrier is not None:
                    errors.append((f"{what} cannot leave {barrier}", span))
                elif target is None:
                    errors.append((f"{what} outside a loop", span))
                elif isinstance(target, For) and target.kind not in JUMP_TARGET_KINDS:
                    errors.append((f"{what} in a {target.kind.value} loop (only a serial "
                                   "loop can be left or continued early)", span))
                return
            if isinstance(n, (For, While)):
                walk(n.body, n, None)
                return
            if isinstance(n, BlockRealize):
                walk(n.block, target, "a block")
                return
            if isinstance(n, SparseIteration):  # lowered to loops of its own
                for _, v in children(n):
                    walk(v, target, "a sparse iteration")
                return
            if isinstance(n, AttrStmt) and n.key in (THREAD_EXTENT, VIRTUAL_THREAD):
                walk(n.body, target, "a thread launch")
                return
            for _, v in children(n):
                walk(v, target, barrier)
        elif isinstance(n, (tuple, list)):
            for x in n:
                walk(x, target, barrier)

    walk(node, None, None)
    return errors


def is_jump_statement(s: Stmt) -> bool:
    """Whether `s` is itself a break or continue."""
    return jump_kind(s) is not None


class _BeforeContinues(Mutator):
    def __init__(self, extra: Stmt) -> None:
        self.extra = extra

    def visit_For(self, s: For) -> For:
        return s

    def visit_While(self, s: While) -> While:
        return s

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        return seq(self.extra, s) if jump_kind(s) == CONTINUE_LOOP else s


def before_continues(body: Stmt, extra: Stmt) -> Stmt:
    """`body` (of a loop) running `extra` before each continue that targets its loop: what a
    pass appends to the end of a loop body must also run where an iteration ends early."""
    return _BeforeContinues(extra).visit(body)  # type: ignore[no-any-return]
