"""The threads of a GPU block running one task of a megakernel.

On the GPU a task runs on all threads of the block that took it. The task bodies come from the
CPU-style tiling (default-schedule's parallel tiles, their inner loops vectorized), so:
- a vectorized or parallel loop (independent iterations by construction) becomes a loop
  bound to threadIdx.x: iteration i on thread i; a longer one is strided over the threads
  (`for o: for t in threadIdx.x: i = o * T + t`); vectorized loops nested in it run serially;
- anything else at block level that does work (a statement with no vectorized loop inside,
  a block with an `init`) runs on thread 0 alone (`if threadIdx.x == 0`), so a serial
  reduction is done once, not by every thread at the same time;
- loops, conditions and lets around vectorized loops stay uniform: every thread runs them
  (their bounds depend on the task index and the shapes only);
- a barrier (bar.sync) separates consecutive phases when one of them writes memory that is
  not thread-private, and ends each iteration of a loop whose body writes such memory;
- a task's `local` scratch buffer stays thread-private when every access to it sits in a
  thread-bound loop and indexes one dimension with exactly that thread's index: the dimension
  is dropped (each thread keeps its own slice, in registers after unrolling). Otherwise the
  buffer is made `shared` (one per block), and the barriers order its phases.
The event prologue and epilogue of a task (settle, wait, notify) run on thread 0 between
barriers: the wait's acquire and the barrier after it publish the producers' data to the whole
block; the barrier before the notifications makes every thread's writes part of the release.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir import intrinsics as intrin
from tirc.ir.arith import Analyzer
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import HANDLE, INT32
from tirc.ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binop, cast
from tirc.ir.gpu.threads import barrier
from tirc.ir.loop_jumps import before_continues
from tirc.ir.stmt import (
    Allocate,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, any_node, post_order_visit, substitute

THREAD_X = "threadIdx.x"
WARP = 32
PRIVATE_SCOPES = ("local",)
EVENT_OPS = (intrin.EVENT_WAIT, intrin.EVENT_NOTIFY, intrin.EVENT_WAIT_WATCHDOG)
# Loops whose iterations are independent by construction: spread over the threads.
SPREAD_KINDS = (ForKind.VECTORIZED, ForKind.PARALLEL)


def _const(e: PrimExpr) -> int | None:
    """The value of a constant expression, else None."""
    return e.value if isinstance(e, IntImm) else None


def has_vectorized(s: Stmt) -> bool:
    """Whether a vectorized (or parallel) loop sits anywhere under `s`."""
    return any_node(s, lambda n: isinstance(n, For) and n.kind in SPREAD_KINDS)


def block_threads(bodies: list[Stmt], cap: int) -> int:
    """Threads per block: the longest constant vectorized loop of the tasks, rounded up to a
    warp, at least one warp and at most `cap`."""
    longest = 1
    for body in bodies:
        def visit(n: object) -> None:
            nonlocal longest
            if isinstance(n, For) and n.kind in SPREAD_KINDS:
                longest = max(longest, _const(n.extent) or cap)

        post_order_visit(body, visit)
    return max(WARP, min(cap, -(-longest // WARP) * WARP))


def thread_loop(threads: int, body_of: Any, name: str = "tx") -> For:
    """`for tx in T.thread_binding(threads, "threadIdx.x"): body_of(tx)`."""
    tx = Var(name, INT32)
    return For(tx, IntImm(0, INT32), IntImm(threads, INT32), ForKind.THREAD_BINDING,
               body_of(tx), thread_tag=THREAD_X)


def single(s: Stmt, threads: int) -> Stmt:
    """`s` run by thread 0 of the block only."""
    return thread_loop(threads, lambda tx: IfThenElse(binop("eq", tx, IntImm(0, INT32)), s),
                       "t0")


class _Serial(Mutator):
    """Vectorized and parallel loops -> serial loops (inside a loop already spread over the
    threads, or on one thread)."""

    def visit_For(self, s: For) -> Any:
        new = self.generic_visit(s)
        return new.replace(kind=ForKind.SERIAL) if new.kind in SPREAD_KINDS else new


class Spreader:
    """Spreads one task body over the `threads` threads of a block (module docstring)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def spread(self, s: Stmt) -> Stmt:
        """`s`, run by every thread of the block in step, doing its work once."""
        if not has_vectorized(s):
            return single(device_scratch(s, "local"), self.threads)
        if isinstance(s, For) and s.kind in SPREAD_KINDS:
            return self.map_loop(s)
        if isinstance(s, SeqStmt):
            return self.phases(list(s.seq))
        if isinstance(s, For):
            body = self.spread(s.body)
            if _writes_shared_memory(s.body):
                body = seq(before_continues(body, barrier()), barrier())
            return s.replace(body=body)
        if isinstance(s, IfThenElse):
            other = self.spread(s.else_case) if s.else_case is not None else None
            return s.replace(then_case=self.spread(s.then_case), else_case=other)
        if isinstance(s, (LetStmt, AttrStmt)):
            return s.replace(body=self.spread(s.body))
        if isinstance(s, BlockRealize) and not s.block.iter_vars and s.block.init is None:
            return s.replace(block=s.block.replace(body=self.spread(s.block.body)))
        return single(device_scratch(_Serial().visit(s), "local"), self.threads)

    def phases(self, items: list[Stmt]) -> Stmt:
        """Statements in order, with a barrier between two when either writes memory that
        is not thread-private."""
        out: list[Stmt] = []
        for k, item in enumerate(items):
            if k and (_writes_shared_memory(items[k - 1]) or _writes_shared_memory(item)):
                out.append(barrier())
            out.append(self.spread(item))
        return seq(*out)

    def map_loop(self, s: For) -> Stmt:
        """A vectorized or parallel loop on the threads: direct when it fits, else
        strided."""
        body = _Serial().visit(s.body)
        n = _const(s.extent)
        v = s.loop_var
        if n is not None and n <= self.threads:
            if not (isinstance(s.min, IntImm) and s.min.value == 0):
                body = substitute(body, {v: binop("add", v, s.min)})
            return For(v, IntImm(0, v.dtype), s.extent, ForKind.THREAD_BINDING, body,
                       thread_tag=THREAD_X)
        outer = Var(f"{v.name}_o", v.dtype)

        def inner(tx: Var) -> Stmt:
            i = binop("add", binop("mul", outer, self.threads), cast(v.dtype, tx))
            mapped = substitute(body, {v: binop("add", s.min, i)})
            if n is not None and n % self.threads == 0:
                return mapped
            return IfThenElse(binop("lt", i, s.extent), mapped)

        count = binop("floordiv", binop("add", s.extent, self.threads - 1), self.threads)
        return For(outer, IntImm(0, v.dtype), count, ForKind.SERIAL,
                   thread_loop(self.threads, inner, f"{v.name}_t"))


def _writes_shared_memory(s: Stmt) -> bool:
    """Whether `s` stores to a buffer other threads can see (not a `local` one)."""
    found = False

    def visit(n: object) -> None:
        nonlocal found
        if isinstance(n, BufferStore) and n.buffer.scope not in PRIVATE_SCOPES:
            found = True
        elif isinstance(n, Evaluate) and getattr(n.value, "op", "") in EVENT_OPS:
            found = True

    post_order_visit(s, visit)
    return found


def is_event_stmt(s: Stmt) -> bool:
    """A statement that only settles, waits on and notifies events (a task's prologue or
    epilogue, as the megakernel pass emits them)."""
    ok = True
    found = False

    def visit(n: object) -> None:
        nonlocal ok, found
        op = getattr(n, "op", None)
        if isinstance(n, Evaluate) and op is None:
            op = getattr(n.value, "op", None)
        if op in EVENT_OPS:
            found = True
        elif isinstance(n, Stmt) and not isinstance(n, (For, IfThenElse, SeqStmt, Evaluate,
                                                        LetStmt)):
            ok = False

    post_order_visit(s, visit)
    return ok and found


def spread_task(body: Stmt, threads: int) -> Stmt:
    """One task body on the block: barrier, prologue on thread 0, barrier, the work spread
    over the threads, barrier, epilogue on thread 0 (see the module docstring)."""
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    pre: list[Stmt] = []
    while items and is_event_stmt(items[0]):
        pre.append(items.pop(0))
    post: list[Stmt] = []
    while items and is_event_stmt(items[-1]):
        post.insert(0, items.pop())
    sp = Spreader(threads)
    out: list[Stmt] = [barrier()]
    if pre:
        out += [single(seq(*(coalesce_settle(x) for x in pre)), threads), barrier()]
    if items:
        out.append(device_scratch(privatize(sp.phases(items)), "shared"))
    if post:
        out += [barrier(), single(seq(*post), threads)]
    return seq(*out)


class _Scratch(Mutator):
    """Global allocations inside a task -> `scope` (a kernel cannot allocate global memory)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    def visit_Allocate(self, s: Allocate) -> Any:
        if s.buffer.scope not in ("global", "") or s.init is not None:
            return self.generic_visit(s)
        new = dataclasses.replace(s.buffer, scope=self.scope)
        return Allocate(new, self.visit(substitute(s.body, {s.buffer: new})), s.init)


def device_scratch(s: Stmt, scope: str) -> Stmt:
    """`s` with its task-local global buffers (`T.decl_buffer` inside a task) in `scope`:
    `local` where one thread runs the code, `shared` where the block does."""
    return _Scratch(scope).visit(s)


def coalesce_settle(s: Stmt) -> Stmt:
    """A settle loop `for p: if c(p): T.event_notify(E[i])` (E[i] not depending on p) as one
    notification of the count: one release atomic per event instead of one per producer."""
    if not (isinstance(s, For) and isinstance(s.body, IfThenElse) and
            s.body.else_case is None and isinstance(s.body.then_case, Evaluate)):
        return s
    call = s.body.then_case.value
    if not (isinstance(call, Call) and call.op == intrin.EVENT_NOTIFY and len(call.args) == 1):
        return s
    uses = False

    def visit(n: object) -> None:
        nonlocal uses
        uses = uses or n is s.loop_var

    post_order_visit(call.args[0], visit)
    if uses:
        return s
    count = Buffer(name="settle", shape=(IntImm(1, INT32),), dtype=INT32,
                   data=Var("settle", HANDLE), scope="local")
    zero = IntImm(0, INT32)
    now = BufferLoad(count, (zero,), INT32)
    bump = BufferStore(count, binop("add", now, IntImm(1, INT32)), (zero,))
    notify = Evaluate(Call(intrin.EVENT_NOTIFY, (call.args[0], now), INT32))
    return Allocate(count, seq(BufferStore(count, zero, (zero,)),
                               s.replace(body=s.body.replace(then_case=bump)),
                               IfThenElse(binop("gt", now, zero), notify)))


# ---- thread-private scratch -------------------------------------------------------------

Doms = tuple[tuple[Var, Range], ...]
Found = tuple[tuple[PrimExpr, ...], Var | None, Doms]


class _Accesses:
    """Every access to a task's `local` buffers, with the thread loop around it and the
    ranges of the loops around it."""

    def __init__(self, buffers: list[Buffer]) -> None:
        self.found: dict[Buffer, list[Found]] = {b: [] for b in buffers}

    def walk(self, s: Any, binds: dict[Var, PrimExpr], thread: Var | None, doms: Doms) -> None:
        if isinstance(s, For):
            t = s.loop_var if s.kind == ForKind.THREAD_BINDING and s.thread_tag == THREAD_X \
                else thread
            self.exprs([s.min, s.extent], binds, thread, doms)
            self.walk(s.body, binds, t, (*doms, (s.loop_var, Range(s.min, s.extent))))
        elif isinstance(s, BlockRealize):
            inner = dict(binds)
            for iv, value in zip(s.block.iter_vars, s.iter_values):
                inner[iv.var] = substitute(value, binds)
            self.exprs([s.predicate, *s.iter_values], binds, thread, doms)
            if s.block.init is not None:
                self.walk(s.block.init, inner, thread, doms)
            self.walk(s.block.body, inner, thread, doms)
        elif isinstance(s, BufferStore):
            self.record(s.buffer, s.indices, binds, thread, doms)
            self.exprs([s.value, *s.indices], binds, thread, doms)
        elif isinstance(s, Stmt):
            for _, value in s.node_fields():
                for v in value if isinstance(value, tuple) else (value,):
                    if isinstance(v, Stmt):
                        self.walk(v, binds, thread, doms)
                    elif isinstance(v, PrimExpr):
                        self.exprs([v], binds, thread, doms)

    def exprs(self, es: list[PrimExpr], binds: dict[Var, PrimExpr], thread: Var | None,
              doms: Doms) -> None:
        def visit(n: object) -> None:
            if isinstance(n, BufferLoad):
                self.record(n.buffer, n.indices, binds, thread, doms)

        for e in es:
            post_order_visit(e, visit)

    def record(self, buf: Buffer, indices: tuple[PrimExpr, ...], binds: dict[Var, PrimExpr],
               thread: Var | None, doms: Doms) -> None:
        if buf in self.found:
            self.found[buf].append((tuple(substitute(i, binds) for i in indices), thread, doms))


def _private_dim(accesses: list[Found], ndim: int) -> int | None:
    """The dimension every access indexes with exactly its thread's index, if any."""
    if not accesses or any(t is None for _, t, _ in accesses):
        return None
    checks = []
    for idx, t, doms in accesses:
        an = Analyzer()
        for v, r in doms:
            an.bind(v, r)
        checks.append((idx, t, an))
    for d in range(ndim):
        if all(t is not None and an.can_prove_equal(an.simplify(idx[d]), cast(idx[d].dtype, t))
               for idx, t, an in checks):
            return d
    return None


class _Privatize(Mutator):
    """Drop dimension `dims[buf]` of each private buffer; other locals become shared."""

    def __init__(self, private: dict[Buffer, tuple[Buffer, int]], shared: dict[Buffer, Buffer]
                 ) -> None:
        self.private = private
        self.shared = shared

    def visit_Buffer(self, b: Buffer) -> Buffer:
        if b in self.private:
            return self.private[b][0]
        return self.shared.get(b, b)

    def _index(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        d = self.private[buf][1]
        return tuple(IntImm(0, i.dtype) if k == d else i for k, i in enumerate(indices))

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        new = self.generic_visit(e)
        if e.buffer in self.private:
            return dataclasses.replace(new, indices=self._index(e.buffer, new.indices))
        return new

    def visit_BufferStore(self, s: BufferStore) -> Any:
        new = self.generic_visit(s)
        if s.buffer in self.private:
            return dataclasses.replace(new, indices=self._index(s.buffer, new.indices))
        return new

    def visit_BufferRegion(self, r: BufferRegion) -> Any:
        new = self.generic_visit(r)
        if r.buffer in self.private:
            d = self.private[r.buffer][1]
            one = Range(IntImm(0, r.region[d].min.dtype), IntImm(1, r.region[d].min.dtype))
            return dataclasses.replace(new, region=tuple(
                one if k == d else x for k, x in enumerate(new.region)))
        return new


def privatize(body: Stmt) -> Stmt:
    """`body` with its blocks' `local` buffers kept per thread where that is exact, else
    made `shared` (see the module docstring)."""
    locals_: list[Buffer] = []

    def visit(n: object) -> None:
        if isinstance(n, Block):
            locals_.extend(b for b in n.alloc_buffers if b.scope in PRIVATE_SCOPES)

    post_order_visit(body, visit)
    if not locals_:
        return body
    acc = _Accesses(locals_)
    acc.walk(body, {}, None, ())
    private: dict[Buffer, tuple[Buffer, int]] = {}
    shared: dict[Buffer, Buffer] = {}
    for buf in locals_:
        d = _private_dim(acc.found[buf], len(buf.shape))
        if d is None:
            shared[buf] = dataclasses.replace(buf, scope="shared")
        else:
            shape = tuple(IntImm(1, x.dtype) if k == d else x for k, x in enumerate(buf.shape))
            private[buf] = (dataclasses.replace(buf, shape=shape), d)
    return _Privatize(private, shared).visit(body)


__all__ = ["Spreader", "block_threads", "device_scratch", "has_vectorized", "is_event_stmt",
           "privatize",
           "single", "spread_task", "thread_loop"]
