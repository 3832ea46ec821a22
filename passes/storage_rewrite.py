"""storage-rewrite: allocations placed at their outermost legal scope, sized, and classified.

Placement: an `Allocate` (without `init`) moves outward past serial, vectorized and unrolled
loops, `if`s, lets, `while`s, asserts (constant sizes only) and attribute statements, as long
as its size does not depend on a variable they define, so a buffer is not allocated again in
every iteration. It never leaves a parallel or thread-bound loop (each worker keeps its own
copy), a thread attribute, a megakernel task or its compute (`tirc.task_function`,
`tirc.task_compute`: the backend outlines them into functions of their own), or a block;
allocations with `init` (event tensors) stay where they are, since their initial value is part
of their meaning. Hoisted allocations are opened in the order they first appeared, outermost
first.

Classification: each allocation's body is wrapped in
`T.attr(buffer, "storage_kind", "stack" | "heap")`, placed just inside the `Allocate` (so the
buffer is defined where the attribute names it):
- "stack" when the size in bytes (elements from the shape, or from the strides, times the
  element size) is a constant no larger than the option `stack-limit` (`--pass-config
  storage.stack-limit=N`; default 65536 bytes);
- "heap" otherwise (symbolic or larger sizes).
The CPU backend reads this attribute: stack buffers become entry-block `alloca`s, heap
buffers `malloc`/`free` around the body.
"""

from __future__ import annotations

from tirc.ir.analysis.storage import storage_size
from tirc.ir.arith import construct
from tirc.ir.attrs import LAUNCH_THREAD, OUTLINED, STORAGE_KIND, THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, StringImm, Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BlockRealize,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
    seq,
)
from tirc.ir.structural import structural_equal
from tirc.passes.pass_base import PassContext, PrimFuncPass, at_least, option

THREAD_ATTRS = (THREAD_EXTENT, VIRTUAL_THREAD, LAUNCH_THREAD)
_BARRIER_LOOPS = (ForKind.PARALLEL, ForKind.THREAD_BINDING)


def allocation_bytes(b: Buffer) -> int | None:
    """The constant size of `b`'s storage in bytes, or None when it is symbolic."""
    size = construct.fold(storage_size(b))
    if not isinstance(size, IntImm):
        return None
    return max(size.value, 0) * b.dtype.bytes


@dataclass
class _Placer:
    """Moves allocations outward; `place` returns a statement and the allocations still moving."""

    stack_limit: int

    def open(self, allocs: list[Allocate], body: Stmt) -> Stmt:
        """Wrap `body` in `allocs` (the first outermost), each with its storage kind."""
        seen: set[Buffer] = set()
        for a in reversed(allocs):
            if a.buffer in seen:
                continue
            seen.add(a.buffer)
            body = self.allocate(a, body)
        return body

    def allocate(self, a: Allocate, body: Stmt) -> Stmt:
        b = a.buffer
        size = allocation_bytes(b)
        kind = "stack" if size is not None and size <= self.stack_limit else "heap"
        body = AttrStmt(b, STORAGE_KIND, StringImm(kind), body, span=a.span)
        return Allocate(b, body, a.init, span=a.span)

    def stop(self, moving: list[Allocate], defined: set[Var], barrier: bool,
             constant_only: bool = False) -> tuple[list[Allocate], list[Allocate]]:
        """Split `moving` into those that must open here and those that may go further out."""
        here: list[Allocate] = []
        out: list[Allocate] = []
        for a in moving:
            b = a.buffer
            shape_vars = used_vars(b.shape, b.strides, b.elem_offset)
            blocked = barrier or not shape_vars.isdisjoint(defined) or (
                constant_only and allocation_bytes(b) is None)
            (here if blocked else out).append(a)
        return here, out

    def place(self, s: Stmt) -> tuple[Stmt, list[Allocate]]:
        if isinstance(s, Allocate):
            inner = s.body
            if isinstance(inner, AttrStmt) and inner.node is s.buffer \
                    and inner.key == STORAGE_KIND:
                inner = inner.body  # classified by an earlier run: classify again
            body, moving = self.place(inner)
            if s.init is not None:
                return self.allocate(s, body), moving
            return body, [s, *moving]
        if isinstance(s, SeqStmt):
            parts, moving = [], []
            for x in s.seq:
                stmt, m = self.place(x)
                parts.append(stmt)
                moving.extend(m)
            return seq(*parts), moving
        if isinstance(s, For):
            body, moving = self.place(s.body)
            here, out = self.stop(moving, {s.loop_var}, s.kind in _BARRIER_LOOPS)
            return s.replace(body=self.open(here, body)), out
        if isinstance(s, LetStmt):
            body, moving = self.place(s.body)
            here, out = self.stop(moving, {s.var}, False)
            return s.replace(body=self.open(here, body)), out
        if isinstance(s, IfThenElse):
            then_case, moving = self.place(s.then_case)
            else_case = None
            if s.else_case is not None:
                else_case, more = self.place(s.else_case)
                moving = moving + more
            return s.replace(then_case=then_case, else_case=else_case), moving
        if isinstance(s, While):
            body, moving = self.place(s.body)
            return s.replace(body=body), moving
        if isinstance(s, AssertStmt):
            body, moving = self.place(s.body)
            here, out = self.stop(moving, set(), False, constant_only=True)
            return s.replace(body=self.open(here, body)), out
        if isinstance(s, AttrStmt):
            body, moving = self.place(s.body)
            barrier = s.key in THREAD_ATTRS or s.key in OUTLINED
            defined = {s.node} if isinstance(s.node, Var) else set()
            here, out = self.stop(moving, defined, barrier)
            return s.replace(body=self.open(here, body)), out
        if isinstance(s, BlockRealize):
            blk = s.block
            body, moving = self.place(blk.body)
            return s.replace(block=blk.replace(body=self.open(moving, body))), []
        return s, []

    def function_body(self, body: Stmt) -> Stmt:
        stmt, moving = self.place(body)
        return self.open(moving, stmt)


@dataclass(frozen=True)
class StorageRewrite(PrimFuncPass):
    """Hoist allocations out of loops, size them, and mark each as stack or heap storage."""

    name = "storage-rewrite"
    description = "hoist allocations to their outermost legal scope and choose stack or heap"
    optional = True  # an optimisation (see Pass.optional)

    stack_limit: int = option(64 * 1024, config="storage.stack-limit", check=at_least(0),
                              doc="largest allocation, in bytes, placed on the stack")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Placer(self.stack_limit).function_body(func.body)
        if structural_equal(body, func.body):
            return func
        return func.replace(body=body)  # type: ignore[return-value]
