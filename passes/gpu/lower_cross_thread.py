"""gpu-lower-cross-thread-reduction: a reduction whose loop is bound to threads, as phases.

A schedule binds a reduction loop to threadIdx (`sch.bind(k1, "threadIdx.x")`, checked by
passes/schedule/cross_thread.py) so that the T threads of a block share the reduction of each
output element `X = X op value`. This pass (TVM's LowerCrossThreadReduction, with the
allreduce lowered the way gpu-storage-sync expects) turns the bound loop into phases of the
block, each a loop over the same threads:

    red = shared (T,), acc = local (1,)
    for t in threadIdx (T):  acc = identity; <the loops inside t>: acc = acc op value
                             red[t] = acc
    for half in P/2, P/4, ..., 1 (P the power of two >= T):
        barrier;  for t in threadIdx (T): if t < half and t + half < T: red[t] op= red[t+half]
    barrier;  for t in threadIdx (T): if t == 0: X = init op red[0]

A thread-local X (scope "local") is stored by every thread (`X = init op red[0]` without the
`t == 0`, then a barrier): each thread has its own copy, and the code after the reduction,
which every thread of the block runs, reads it (TVM's allreduce gives every thread the
result; dlight's reductions into `X_local` followed by an epilogue outside the threads).

When a reduction loop of the block lies outside the bound one (MetaSchedule's
CrossThreadReduction splits the fused reduction into a serial loop around a thread-bound one),
the store is `X = (first step ? init : X) op red[0]`: the init runs at the step of those loops
where every reduction variable starts, as the block's `T.init()` does.
A block folding several states together (argmax's index and value, a norm's sum and sum of
squares; the kinds in tuple_reducers.py, as TVM's allreduce over a tuple) gets one `red` and
one `acc` per state, every step folding all of them with the block's combiner.
The block's predicate guards the fold (its terms over the reduction loops) and the store (its
other terms, and that the block ran at all: its terms over the reduction loops held at their
first point, which exists; over n = 0 the output keeps its values, as in the interpreter).
The loop must sit at block level of its kernel (inside blockIdx and serial loops,
not inside another threadIdx loop), or directly inside a loop bound to another threadIdx axis
over the block's rows (dlight's GEMV): then every phase runs inside a copy of that row loop and
each row has its own segment of `red`. The result is the same sum in a different order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from tirc.ir.analysis.regions import and_all, conjuncts, uses_any
from tirc.ir.arith import Analyzer
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import BOOL, HANDLE
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, const, if_then_else
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import barrier, is_block_tag, is_thread_loop
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import (
    Allocate,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    LetStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, substitute
from tirc.passes.gpu.tuple_reducers import TupleReduction, match_tuple_reduction
from tirc.passes.pass_base import PassContext, PrimFuncPass
from tirc.passes.schedule.cross_thread import feeds_reduction
from tirc.passes.schedule.domain_guards import first_point_guards
from tirc.passes.schedule.reducers import binary_identity as identity
from tirc.passes.schedule.reduction import reduction_pattern
from tirc.passes.schedule.state import ScheduleError

PASS = "gpu-lower-cross-thread-reduction"


def _fail(msg: str, node: Any) -> CompileError:
    return CompileError(f"{PASS}: {msg}", getattr(node, "span", None))


def _nest(loop: For) -> tuple[list[For], BlockRealize]:
    """The loops from `loop` down to its one block."""
    loops = [loop]
    s: Stmt = loop.body
    while isinstance(s, For):
        loops.append(s)
        s = s.body
    if not isinstance(s, BlockRealize):
        raise _fail(f"loop {loop.loop_var.name} is bound to {loop.thread_tag} across a "
                    f"reduction but holds more than a nest of loops around one block", loop)
    return loops, s


def _reduction(blk: Any, loop: For) -> TupleReduction:
    """The block's reduction: `X = X op value`, or one over several states (argmax, a sum
    and a sum of squares; see tuple_reducers)."""
    try:
        buf, idx, op, rhs, init_value = reduction_pattern(PASS, blk)
    except ScheduleError as e:  # its message already names the pass
        found = match_tuple_reduction(blk)
        if found is None:
            raise CompileError(str(e), loop.span) from None
        return found

    def combine(a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> list[PrimExpr]:
        return [binop(op, a[0], b[0])]

    return TupleReduction((buf,), (idx,), (init_value,), (rhs,),
                          (identity(op, buf.dtype),), combine)


def _assign(targets: list[tuple[Buffer, tuple[PrimExpr, ...]]], values: list[PrimExpr],
            name: str) -> Stmt:
    """The stores of `values` to `targets`, all values read before any store (through lets
    when there are several: a combiner's outputs read every state)."""
    if len(values) == 1:
        return BufferStore(targets[0][0], values[0], targets[0][1])
    temps = [Var(f"{name}_v{j}", v.dtype) for j, v in enumerate(values)]
    out: Stmt = seq(*(BufferStore(b, t, i) for (b, i), t in zip(targets, temps)))
    for t, v in reversed(list(zip(temps, values))):
        out = LetStmt(t, v, out)
    return out


def lower_loop(loop: For, count: int, outer: For | None = None) -> Stmt:
    """The phases replacing the thread-bound reduction loop `loop`; `outer`: a loop bound to
    another threadIdx axis directly around it (dlight's GEMV: rows on threadIdx.x, the
    reduction on threadIdx.y), whose every thread reduces its own row: each phase runs
    inside a copy of it, and the tree has one segment of `red` per row. A reduction over
    several states (argmax's index and value) keeps one `red` and `acc` per state and folds
    them together with its combiner."""
    loops, br = _nest(loop)
    blk = br.block
    red_of = _reduction(blk, loop)
    lvars = {x.loop_var for x in loops}
    bind = {iv.var: v for iv, v in zip(blk.iter_vars, br.iter_values)}
    for iv, v in zip(blk.iter_vars, br.iter_values):
        if iv.kind != IterKind.REDUCE and uses_any(v, lvars):
            raise _fail(f"block \"{blk.name}\" has spatial variable {iv.var.name} bound to "
                        f"a loop inside the cross-thread reduction loop "
                        f"{loop.loop_var.name}", loop)
    if any(is_thread_loop(x) for x in loops[1:]):
        raise _fail(f"a cross-thread reduction over more than one thread axis (block "
                    f"\"{blk.name}\") is not supported", loop)
    if not isinstance(loop.extent, IntImm):
        raise _fail(f"loop {loop.loop_var.name} has a symbolic extent", loop)
    threads = loop.extent.value
    if outer is not None and not isinstance(outer.extent, IntImm):
        raise _fail(f"loop {outer.loop_var.name} has a symbolic extent", outer)
    rows = 1 if outer is None else outer.extent.value
    several = len(red_of.states) > 1
    reds, accs = [], []
    for j, buf in enumerate(red_of.states):
        suffix = f"{count}_{j}" if several else f"{count}"
        reds.append(Buffer(name=f"{blk.name}_red{suffix}", dtype=buf.dtype,
                           shape=(IntImm(rows * threads, loop.extent.dtype),),
                           data=Var(f"{blk.name}_red{suffix}", HANDLE), scope="shared"))
        accs.append(Buffer(name=f"{blk.name}_acc{suffix}", dtype=buf.dtype,
                           shape=(IntImm(1, loop.extent.dtype),),
                           data=Var(f"{blk.name}_acc{suffix}", HANDLE), scope="local"))
    zero = const(0, loop.extent.dtype)
    fold_terms, store_terms = [], []
    for c in conjuncts(br.predicate):
        (fold_terms if uses_any(c, lvars) else store_terms).append(c)
    acc_at = [(a, (zero,)) for a in accs]
    acc_now = [BufferLoad(a, (zero,), a.dtype) for a in accs]
    values = [substitute(e, bind) for e in red_of.elements]
    fold: Stmt = _assign(acc_at, red_of.combine(acc_now, values), f"{blk.name}_fold")
    if fold_terms or store_terms:
        fold = IfThenElse(and_all(fold_terms + store_terms, br.predicate), fold)
    for x in reversed(loops[1:]):
        fold = For(x.loop_var, x.min, x.extent, ForKind.SERIAL if x.kind != ForKind.UNROLLED
                   else x.kind, fold)
    t = loop.loop_var
    slot = binop("sub", t, loop.min) if not (isinstance(loop.min, IntImm)
                                            and loop.min.value == 0) else t

    def phase(body: Stmt) -> Stmt:
        inner = For(t, loop.min, loop.extent, ForKind.THREAD_BINDING, body, thread_tag=tag,
                    span=loop.span)
        if outer is None:
            return inner
        return For(outer.loop_var, outer.min, outer.extent, ForKind.THREAD_BINDING, inner,
                   thread_tag=outer.thread_tag, span=outer.span)

    def at(i: PrimExpr) -> tuple[PrimExpr]:
        """The element of `red` of slot `i` (in this thread's row)."""
        if outer is None:
            return (i,)
        row = outer.loop_var if isinstance(outer.min, IntImm) and outer.min.value == 0 \
            else binop("sub", outer.loop_var, outer.min)
        return (binop("add", binop("mul", row, threads), i),)

    def red_loads(i: PrimExpr) -> list[PrimExpr]:
        return [BufferLoad(r, at(i), r.dtype) for r in reds]

    tag = loop.thread_tag or "threadIdx.x"
    phases: list[Stmt] = [phase(seq(
        *(BufferStore(a, v, (zero,)) for a, v in zip(accs, red_of.identities)), fold,
        *(BufferStore(r, ld, at(slot)) for r, ld in zip(reds, acc_now))))]
    half = 1
    while half * 2 < threads:
        half *= 2
    while half >= 1:
        other = binop("add", slot, half)
        cond = binop("lt", slot, half)
        if half * 2 > threads:
            cond = binop("and", cond, binop("lt", other, threads))
        phases.append(barrier(loop.span))
        step = _assign([(r, at(slot)) for r in reds],
                       red_of.combine(red_loads(slot), red_loads(other)), f"{blk.name}_tree")
        phases.append(phase(IfThenElse(cond, step)))
        half //= 2
    out_at = [(buf, tuple(substitute(i, bind) for i in idx))
              for buf, idx in zip(red_of.states, red_of.indices)]
    starts = [substitute(v, bind) for v in red_of.inits]
    first = _first_outer_step(blk, br, loops)
    if first is not None:
        # a reduction loop outside the threads (MetaSchedule's `rv_0` serial, `rv_1` bound):
        # the block's init only at its first step, then what the earlier steps stored
        starts = [if_then_else(first, v, BufferLoad(b, i, b.dtype))
                  for v, (b, i) in zip(starts, out_at)]
    write = _assign(out_at, red_of.combine(starts, red_loads(zero)), f"{blk.name}_out")
    # the result is stored only where the block ran at the first point of the thread loop and
    # the loops inside it (so its init ran): over n = 0 the output keeps its values, as the
    # interpreter leaves them, instead of the identity
    ran = first_point_guards(and_all(fold_terms, IntImm(1, BOOL)), loops, [], Analyzer())
    write_terms = store_terms + ran
    if write_terms:
        write = IfThenElse(and_all(write_terms, br.predicate), write)
    phases.append(barrier(loop.span))
    if all(b.scope.startswith("local") for b in red_of.states):
        # every thread has its own X, and code after the loop (run by every thread) reads
        # it: each thread stores the result, as TVM's allreduce gives it to all of them;
        # the barrier keeps a next use of `red` from overwriting red[0] before all have read
        phases += [phase(write), barrier(loop.span)]
    elif any(b.scope.startswith("local") for b in red_of.states):
        raise _fail(f"block \"{blk.name}\" reduces into thread-local and other buffers "
                    "together (unsupported)", loop)
    else:
        phases.append(phase(IfThenElse(binop("eq", slot, 0), write)))
    out: Stmt = seq(*phases)
    for a in reversed(accs):
        out = Allocate(a, out)
    for r in reversed(reds):
        out = Allocate(r, out)
    return out


def _first_outer_step(blk: Any, br: BlockRealize, loops: list[For]) -> PrimExpr | None:
    """When some reduction variable of the block is bound through loops outside the
    cross-thread one: the condition that those loops are at the step where the block's init
    runs (every reduction variable at its minimum once the inner loops are at theirs), as
    the interpreter runs the init; None when the thread loop and the loops inside it cover
    the whole reduction."""
    lvars = {x.loop_var for x in loops}
    terms = [binop("eq", v, iv.dom.min) for iv, v in zip(blk.iter_vars, br.iter_values)
             if iv.kind == IterKind.REDUCE and used_vars(v) - lvars]
    if not terms:
        return None
    inner = {x.loop_var: x.min for x in loops}
    return and_all([substitute(t, inner) for t in terms], terms[0])


def _row_loop(s: For) -> For | None:
    """`s` when it is a loop bound to a threadIdx axis over the rows (spatial) of a
    cross-thread reduction bound to another threadIdx axis directly inside it."""
    inner = s.body
    if not (is_thread_loop(s) and not is_block_tag(s.thread_tag) and isinstance(inner, For)
            and is_thread_loop(inner) and not is_block_tag(inner.thread_tag)
            and inner.thread_tag != s.thread_tag):
        return None
    if feeds_reduction((s,), s) or not feeds_reduction((inner,), inner):
        return None
    return s


class _Lower(Mutator):
    """Lowers every cross-thread reduction loop, checking it sits at block level."""

    def __init__(self) -> None:
        self.count = 0
        self.thread_depth = 0
        self.block_depth = 0

    def generic_visit(self, n: Node) -> Any:
        return super().generic_visit(n) if isinstance(n, Stmt) else n

    def visit_For(self, s: For) -> Any:
        row_loop = _row_loop(s) if not self.thread_depth else None
        if row_loop is not None or (is_thread_loop(s) and not is_block_tag(s.thread_tag)
                                    and feeds_reduction((s,), s)):
            if self.thread_depth:
                raise _fail(f"loop {s.loop_var.name} is bound to {s.thread_tag} across a "
                            f"reduction inside another threadIdx loop (unsupported)", s)
            self.count += 1
            phases = lower_loop(s.body, self.count, s) if row_loop is not None else \
                lower_loop(s, self.count)
            if self.block_depth:
                return phases
            # no blockIdx loop around it (TVM's `for i: for k in threadIdx`): the phases
            # share their shared memory only within one kernel, so they launch as one block
            bx = Var(f"{s.loop_var.name}_block", s.loop_var.dtype)
            return For(bx, const(0, bx.dtype), const(1, bx.dtype), ForKind.THREAD_BINDING,
                       phases, thread_tag="blockIdx.x", span=s.span)
        inner = is_thread_loop(s) and not is_block_tag(s.thread_tag)
        kernel = is_thread_loop(s) and is_block_tag(s.thread_tag)
        self.thread_depth += inner
        self.block_depth += kernel
        try:
            return self.generic_visit(s)
        finally:
            self.thread_depth -= inner
            self.block_depth -= kernel


@dataclass(frozen=True)
class GPULowerCrossThreadReduction(PrimFuncPass):
    """Reductions bound to threads become phases with a tree over shared memory."""

    name: ClassVar[str] = PASS
    description: ClassVar[str] = ("reductions whose loop is bound to threadIdx become per-"
                                  "thread partial folds and a tree over shared memory")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Lower().visit(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
