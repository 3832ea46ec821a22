"""The default GPU schedule of last resort, for loop functions of any shape the patterned
schedules (elementwise, row reduction, tiled matmul) do not take: correct for every nest,
not fast.

Each top-level statement of the function becomes its own kernel(s), in order (a kernel
boundary is a grid-wide barrier, so the statements keep their order):

- a nest of loops (any kinds but thread bindings; tiled, vectorized, parallel) around one
  block: the loops that only feed spatial iterators of the block are fused into one flat
  index, one point per thread over blocks of up to 256 threads (a bounds check when the count
  is not a multiple), and the other loops (reductions, loops feeding no iterator) run
  serially inside each thread in their order; the block's predicate (`T.where`) stays;
- a sequence of statements: each one, in order;
- storage declared over the rest (`T.decl_buffer`, let): kept around the kernels of its body
  (global storage the host allocates); an event tensor becomes a global counter buffer that
  a first kernel sets to its initial count (no megakernel: tasks run in program order);
- anything else (imperative loops without blocks, data-dependent control flow): one thread
  runs it, its parallel and vectorized loops made serial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tirc.ir.arith.linear import to_linear
from tirc.ir.expr import Cast, PrimExpr, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.ops.sinfo_util import INT64, const_dim, dim, product, simplify_dim
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import (
    Allocate,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, substitute
from tirc.passes.gpu.schedule_builders import over_grid, typed, unflatten


class _Serial(Mutator):
    """Parallel and vectorized loops become serial ones (one thread runs them)."""

    def visit_For(self, s: For) -> Stmt:
        s = self.generic_visit(s)
        if s.kind in (ForKind.PARALLEL, ForKind.VECTORIZED):
            return dataclasses.replace(s, kind=ForKind.SERIAL, annotations={})
        return s


class _Private(Mutator):
    """Global storage of constant size declared inside a kernel becomes the thread's own
    (`local`): each thread runs its own instance of the declaring statement."""

    def visit_Allocate(self, s: Allocate) -> Stmt:
        s = self.generic_visit(s)
        buf = s.buffer
        if buf.scope != "global" or s.init is not None or \
                any(const_dim(d) is None for d in buf.shape):
            return s
        local = dataclasses.replace(buf, scope="local")
        return Allocate(local, substitute(s.body, {buf: local}))


def fallback_body(body: Stmt, name: str) -> Stmt:
    """`body` (a function's body, or its root block's) with every top-level statement bound
    to blocks and threads."""
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"{name}_k{counter[0]}"

    def visit(s: Stmt) -> Stmt:
        if isinstance(s, SeqStmt):
            return seq(*(visit(x) for x in s.seq))
        if isinstance(s, Allocate) and s.init is not None:
            return counters_in_global(s, fresh(), visit)
        if isinstance(s, (Allocate, LetStmt)):
            return dataclasses.replace(s, body=visit(s.body))
        nest = nest_kernel(s, fresh())
        return nest if nest is not None else single_thread(s, fresh())

    return visit(body)


def counters_in_global(s: Allocate, name: str, visit: Callable[[Stmt], Stmt]) -> Stmt:
    """An event tensor around kernels: a global int buffer the host allocates, set to its
    initial count by a kernel first (the kernels run in program order, so each wait finds
    the notifications of the statements before it)."""
    buf = s.buffer
    counters = dataclasses.replace(buf, scope="global")
    shape = [simplify_dim(cast(INT64, d)) for d in buf.shape]

    def init(flat: PrimExpr) -> Stmt:
        return BufferStore(counters, cast(buf.dtype, s.init), tuple(unflatten(flat, shape)))

    start = over_grid(product(tuple(shape)) if shape else dim(1), name, init)
    return Allocate(counters, seq(start, visit(substitute(s.body, {buf: counters}))))


def single_thread(s: Stmt, name: str) -> Stmt:
    """One block of one thread running `s`."""
    body = _Private().visit(_Serial().visit(s))
    return over_grid(dim(1), name, lambda _flat: body)


def nest_kernel(s: Stmt, name: str) -> Stmt | None:
    """The nest `s` (loops around one block) with its spatial loops fused over a grid and the
    others serial in each thread; None when `s` is not such a nest."""
    loops: list[For] = []
    while isinstance(s, For) and s.kind != ForKind.THREAD_BINDING:
        loops.append(s)
        s = s.body
    if not loops or not isinstance(s, BlockRealize):
        return None
    loop_vars = {lp.loop_var for lp in loops}
    if any(used_vars(lp.min, lp.extent) & loop_vars for lp in loops):
        return None  # a loop's range depends on an outer loop of the nest
    spatial_vars = parallel_loops(s, loops)
    spatial = [lp for lp in loops if lp.loop_var in spatial_vars]
    serial = [lp for lp in loops if lp not in spatial]

    extents = [simplify_dim(cast(INT64, lp.extent)) for lp in spatial]

    def body(flat: PrimExpr) -> Stmt:
        at = unflatten(flat, extents)
        mapping = {lp.loop_var: simplify_dim(binop("add", cast(INT64, lp.min), a))
                   for lp, a in zip(spatial, at)}
        stmt: Stmt = _Private().visit(_Serial().visit(substitute(s, typed(mapping))))
        for lp in reversed(serial):
            kind = ForKind.UNROLLED if lp.kind == ForKind.UNROLLED else ForKind.SERIAL
            stmt = For(lp.loop_var, lp.min, lp.extent, kind, stmt)
        return stmt

    total = product(tuple(extents)) if spatial else dim(1)
    return over_grid(total, name, body)


def parallel_loops(realize: BlockRealize, loops: list[For]) -> set[Var]:
    """The loops of the nest whose iterations may run on different threads: those feeding
    only spatial iterators, each bound one-to-one (`injective`) and fed by no other loop (a
    reduction's, or one feeding a reduction iterator too); every other loop runs serially in
    each thread, so two threads never reach the same block instance."""
    loop_vars = {lp.loop_var for lp in loops}
    extents = {lp.loop_var: lp.extent for lp in loops}
    bindings = [(iv.kind == IterKind.SPATIAL, used_vars(v) & loop_vars, v)
                for iv, v in zip(realize.block.iter_vars, realize.iter_values)]
    serial = set().union(*(uses for spatial, uses, v in bindings
                           if not spatial or not injective(v, uses, extents)))
    serial |= loop_vars - set().union(*(uses for _, uses, _ in bindings))
    while True:
        tainted = set().union(*(uses for _, uses, _ in bindings if uses & serial))
        if tainted <= serial:
            return loop_vars - serial
        serial |= tainted


def injective(value: PrimExpr, loops: set[Var], extents: dict[Var, PrimExpr]) -> bool:
    """Whether `value` takes a different value at every point of `loops` (each over
    [0, extent)): a sum of loop * coefficient (+ terms of other variables) whose positive
    coefficients are mixed-radix, each above everything the smaller ones reach (`i0 * 8 +
    i1` for i1 below 8); only the loop of the largest coefficient may have an unknown
    extent."""
    terms = [(_widened(a), c) for a, c in to_linear(value).terms.items()]
    coefs = [(c, a) for a, c in terms if a in loops]
    if any(c <= 0 for c, _ in coefs) or len({a for _, a in coefs}) != len(loops) or \
            len(coefs) != len(loops) or \
            any(used_vars(a) & loops for a, _ in terms if a not in loops):
        return False
    reach = 0
    for k, (c, a) in enumerate(sorted(coefs, key=lambda t: t[0])):
        if c <= reach:
            return False
        e = const_dim(extents[a])
        if e is None:
            return k == len(coefs) - 1
        reach += c * (e - 1)
    return True


def _widened(atom: PrimExpr) -> PrimExpr:
    """The integer variable under a widening cast (`int64(i)` of an int32 loop), else
    `atom`."""
    if isinstance(atom, Cast) and isinstance(atom.value, Var) and atom.dtype.is_int and \
            atom.value.dtype.is_int and atom.dtype.bits >= atom.value.dtype.bits:
        return atom.value
    return atom


def fallback_schedule(func: PrimFunc) -> PrimFunc:
    """`func` (with or without a root block) with every top-level statement a kernel."""
    body = func.body
    if isinstance(body, BlockRealize) and body.block.name == "root":
        root = dataclasses.replace(body.block, body=fallback_body(body.block.body, func.name))
        return dataclasses.replace(func, body=dataclasses.replace(body, block=root))
    return dataclasses.replace(func, body=fallback_body(body, func.name))
