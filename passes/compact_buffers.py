"""compact-buffers: an allocation moved to where its buffer is used and shrunk to what is touched.

Runs on lowered loops (after lower-blocks). For each `Allocate` (no `init`, no layout, no
strides or offset, its data handle used only through loads and stores):
- Placement: the allocation moves down to the innermost statement that holds every access
  (through sequences, lets, ifs, attributes, other allocations and loops). It enters a loop
  only when the iterations touch disjoint elements (each iteration's region, relaxed over
  the loops inside, is separated from every other iteration's along some dimensions), so a
  private copy per iteration keeps the meaning, and it stays only where its size is a constant
  (no heap allocation per iteration): it may pass a loop whose iterations each touch a
  symbolic amount on the way to one inside where the amount is constant. It enters a
  thread-bound loop only where the GPU keeps a copy per iteration anyway: shared and local
  storage a blockIdx loop, local storage a threadIdx loop (so a shared-memory tile or a
  register accumulator a GPU schedule caches shrinks to what one block or thread touches);
  never a thread attribute or a `while`.
- Compaction: each dimension shrinks to the bounding box of the accesses under the new place,
  when its width is a constant smaller than the old extent; indices are shifted by the box's
  start. The box takes in the guards an access runs under (`if t1 * 16 + t0 < 64:` around a
  tile copy spread over more threads than the tile has elements bounds `t1` by 3).
This is TVM's PlanAndUpdateBufferAllocationLocation plus CompactBufferAllocation. It is why a
`cache_write(..., "local")` tile, which the schedule allocates full-size at the function root,
ends as a small stack buffer inside the tile loop that LLVM keeps in registers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.analysis.regions import (
    Bounds,
    bounds_width,
    conjuncts,
    iterations_disjoint,
    like,
    relax,
    union_bounds,
)
from tirc.ir.arith import Analyzer
from tirc.ir.attrs import LAUNCH_THREAD, THREAD_EXTENT, VIRTUAL_THREAD
from tirc.ir.buffer import Buffer
from tirc.ir.expr import BinOp, BufferLoad, IntImm, PrimExpr, Var, binop, is_const_int
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.node import Node
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from tirc.ir.visitor import Mutator, Visitor, field_names
from tirc.passes.pass_base import PassContext, PrimFuncPass

THREAD_ATTRS = (THREAD_EXTENT, VIRTUAL_THREAD, LAUNCH_THREAD)


@dataclass
class _Access:
    """One load or store of the buffer: the statements around it (outermost first), indices."""

    path: tuple[Stmt, ...]
    indices: tuple[PrimExpr, ...]


class _EscapedError(Exception):
    """The buffer's data handle is used other than by a load or store: leave it alone."""


_NONE: frozenset[int] = frozenset()


class _Mentions:
    """Which allocated buffers (and their data handles) occur anywhere under a node.

    Computed once per node (memoised by identity, the node kept alive beside its answer), so
    the walks for each allocation skip every subtree that cannot hold one of its accesses
    instead of walking the whole function again per allocation."""

    def __init__(self, tracked: set[int]) -> None:
        self.tracked = tracked  # ids of the allocated buffers and of their data vars
        self.memo: dict[int, tuple[Any, frozenset[int]]] = {}

    def of(self, node: Any) -> frozenset[int]:
        """The tracked ids reachable from `node` through its fields (as a Visitor walks)."""
        if isinstance(node, Node):
            hit = self.memo.get(id(node))
            if hit is not None and hit[0] is node:
                return hit[1]
            found = frozenset((id(node),)) if id(node) in self.tracked else _NONE
            names = field_names(type(node))
            values = (v for _, v in node.node_fields()) if names is None else \
                (getattr(node, n) for n in names)
            for value in values:
                inner = self.of(value)
                if inner and not inner <= found:
                    found = found | inner
            self.memo[id(node)] = (node, found)
            return found
        if isinstance(node, (tuple, list)):
            found = _NONE
            for item in node:
                inner = self.of(item)
                if inner and not inner <= found:
                    found = found | inner
            return found
        if isinstance(node, dict):
            return self.of(tuple(node.keys())) | self.of(tuple(node.values()))
        return _NONE

    def knows(self, buf: Buffer) -> bool:
        """Whether `buf` was tracked from the start (else its walks cannot be pruned)."""
        return id(buf) in self.tracked and id(buf.data) in self.tracked

    def may_hold(self, node: Any, buf: Buffer) -> bool:
        """False only when neither `buf` nor its data handle occurs under `node`."""
        found = self.of(node)
        return id(buf) in found or id(buf.data) in found


class _Allocations(Visitor):
    """The buffers of every `Allocate` under a statement (statements are walked, not
    expressions: an allocation is always a statement)."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self.keep: list[Buffer] = []

    def visit(self, node: Any) -> None:
        if isinstance(node, Stmt) or (isinstance(node, (tuple, list)) and node
                                      and isinstance(node[0], Stmt)):
            super().visit(node)

    def visit_Allocate(self, a: Allocate) -> None:
        self.ids.update((id(a.buffer), id(a.buffer.data)))
        self.keep.append(a.buffer)
        self.visit(a.body)


class _Accesses(Visitor):
    """Every access to `buf` under a statement, with the statements that enclose it."""

    def __init__(self, buf: Buffer, mentions: _Mentions | None = None) -> None:
        self.buf = buf
        self.stack: list[Stmt] = []
        self.found: list[_Access] = []
        self.mentions = mentions if mentions is not None and mentions.knows(buf) else None

    def visit(self, node: Any) -> None:
        if self.mentions is not None and isinstance(node, (Node, tuple, list, dict)) \
                and not self.mentions.may_hold(node, self.buf):
            return  # nothing under here touches the buffer
        if isinstance(node, Stmt):
            self.stack.append(node)
            super().visit(node)
            self.stack.pop()
            return
        super().visit(node)

    def _record(self, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> None:
        if buffer is self.buf:
            self.found.append(_Access(tuple(self.stack), indices))
        else:
            self.visit(buffer)
        self.visit(indices)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self._record(e.buffer, e.indices)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self._record(s.buffer, s.indices)
        self.visit(s.value)

    def visit_Var(self, v: Var) -> None:
        if v is self.buf.data:
            raise _EscapedError


def _region(accesses: list[_Access], first: int, ndim: int, an: Analyzer,
            shared_by: tuple[For, ...] = ()) -> list[Bounds | None]:
    """Inclusive bounds per dimension of the accesses, relaxed over the loops from `path[first]`
    inward and over `shared_by` (the thread loops around the allocation whose threads share
    one copy); None where a let or an unknown form stands in the way. A loop outside of one
    iteration stands for its start (a blockIdx loop of extent 1 around a tile), as TVM's
    analyzer binds it."""
    per_dim: list[list[Bounds]] = [[] for _ in range(ndim)]
    unknown = [False] * ndim
    for acc in accesses:
        dom: dict[Var, Bounds] = {s.loop_var: (s.min, s.min) for s in acc.path[:first]
                                  if isinstance(s, For) and is_const_int(s.extent, 1)}
        lets: set[Var] = set()
        for s in (*shared_by, *acc.path[first:]):
            if isinstance(s, For):
                dom[s.loop_var] = (s.min, binop("sub", binop("add", s.min, s.extent), 1))
            elif isinstance(s, LetStmt):
                lets.add(s.var)
        _tighten(dom, acc.path, an)
        inner = set(dom) | lets
        for k, idx in enumerate(acc.indices):
            r = None if _mentions(idx, lets) or idx.dtype.lanes != 1 else relax(idx, dom)
            for _ in dom:  # bounds of a loop that depend on an outer one inside (a triangle)
                if r is None or not (_mentions(r[0], inner) or _mentions(r[1], inner)):
                    break
                lo, hi = relax(r[0], dom), relax(r[1], dom)
                r = None if lo is None or hi is None else (lo[0], hi[1])
            if r is not None and (_mentions(r[0], inner) or _mentions(r[1], inner)):
                r = None
            if r is None:
                unknown[k] = True
            else:
                per_dim[k].append((an.simplify(r[0]), an.simplify(r[1])))
    return [None if unknown[k] or not per_dim[k] else union_bounds(per_dim[k], an)
            for k in range(ndim)]


def _tighten(dom: dict[Var, Bounds], path: tuple[Stmt, ...], an: Analyzer) -> None:
    """Lower the upper bounds of `dom`'s loops by the guards the access runs under: from
    `sum(c * v) + k < 0` with positive constant `c` and constant lower bounds, each `v` is at
    most what the guard leaves it when the others are at their least (a copy of a tile
    spread over more threads than it has elements reads only the tile)."""
    for at, node in enumerate(path[:-1]):
        if not (isinstance(node, IfThenElse) and path[at + 1] is node.then_case):
            continue
        for c in conjuncts(node.condition):
            if not isinstance(c, BinOp) or c.op not in ("lt", "le", "gt", "ge") \
                    or not c.a.dtype.is_int:
                continue
            lhs, rhs = (c.b, c.a) if c.op in ("gt", "ge") else (c.a, c.b)
            lin = an.to_linear(binop("sub", lhs, rhs))
            lows: dict[Var, int] = {}
            for atom, coef in lin.terms.items():
                lo = dom.get(atom)[0] if isinstance(atom, Var) and atom in dom else None
                if coef <= 0 or not isinstance(lo, IntImm):
                    break
                lows[atom] = lo.value  # type: ignore[index]
            else:
                limit = -lin.const - (1 if c.op in ("lt", "gt") else 0)
                least = sum(lin.terms[v] * lo for v, lo in lows.items())
                for v, lo in lows.items():
                    top = (limit - least + lin.terms[v] * lo) // lin.terms[v]
                    old = an.simplify(dom[v][1])
                    if not isinstance(old, IntImm) or top < old.value:
                        dom[v] = (dom[v][0], IntImm(max(top, lo - 1), v.dtype))


class _Find(Visitor):
    """Whether any of some variables occurs under a node (the walk stops at the first)."""

    def __init__(self, vs: set[Var]) -> None:
        self.vs = vs
        self.found = False

    def visit(self, node: Any) -> None:
        if not self.found:
            super().visit(node)

    def visit_Var(self, v: Var) -> None:
        if v in self.vs:
            self.found = True


def _mentions(e: PrimExpr, vs: set[Var]) -> bool:
    if not vs:
        return False
    finder = _Find(vs)
    finder.visit(e)
    return finder.found


BLOCK_SCOPED = ("shared", "shared.dyn", "local")  # one copy per GPU block or thread
THREAD_SCOPED = ("local",)                       # one copy per GPU thread
SHARED_SCOPED = ("shared", "shared.dyn")          # one copy for all threads of a block


def _per_copy(s: For, buf: Buffer) -> bool:
    """A thread-bound loop that gives every iteration its own copy of `buf` anyway: a
    blockIdx loop for shared and local storage, a threadIdx loop for local storage."""
    tag = s.thread_tag or ""
    if tag.startswith("blockIdx"):
        return buf.scope in BLOCK_SCOPED
    return tag.startswith("threadIdx") and buf.scope in THREAD_SCOPED


def _shared_pass(s: Stmt, buf: Buffer) -> bool:
    """A threadIdx loop (or a vthread loop of one iteration) that a shared-memory allocation
    may pass on its way to a serial loop inside: all the loop's threads keep using the block's
    one copy, so its box covers them (TVM places a matmul's shared tiles inside the threadIdx
    loops, in the reduction loop's body, and relaxes them over the threads)."""
    if not (isinstance(s, For) and s.kind == ForKind.THREAD_BINDING
            and buf.scope in SHARED_SCOPED):
        return False
    tag = s.thread_tag or ""
    return tag.startswith("threadIdx") or (tag.startswith("vthread")
                                           and is_const_int(s.extent, 1))


def _can_enter(s: Stmt, buf: Buffer) -> bool:
    """Statements an allocation may move into (loops only after the disjointness check)."""
    if isinstance(s, For):
        one_vthread = (s.thread_tag or "").startswith("vthread") and is_const_int(s.extent, 1)
        return s.kind != ForKind.THREAD_BINDING or _per_copy(s, buf) or \
            _shared_pass(s, buf) or one_vthread  # one virtual thread: a plain loop
    if isinstance(s, AttrStmt):
        return s.key not in THREAD_ATTRS
    return isinstance(s, (SeqStmt, LetStmt, IfThenElse, Allocate, AssertStmt))


def _placement(accesses: list[_Access], buf: Buffer, an: Analyzer,
               shared_by: tuple[For, ...] = ()) -> tuple[int, tuple[For, ...]]:
    """How deep (an index into every access's path) the allocation can go, and the thread
    loops it then sits in whose threads share its one copy (`shared_by` and those it passed).
    It passes a loop whose iterations touch disjoint elements even when each touches a
    symbolic amount (the rows of a tile loop nested in a loop over column panels), but settles
    only where it has a constant size (no allocation on the heap in every iteration of a
    parallel loop). Shared memory passes threadIdx loops but settles only inside a serial loop
    under them (a tile per step of a reduction loop), where it shrinks further: one that all
    the threads run alike (bounds, conditions and lets on the way not depending on the
    threads), so that a barrier can separate its steps, which now reuse the tile."""
    depth = 0
    settled, settled_by = 0, shared_by
    constant = True  # the size at the current depth is a constant (or it is the start)
    in_threads = False  # passed thread loops since the last serial loop entered
    threads: set[Var] = set()  # the passed thread loops' variables, and lets of them
    while True:
        node = accesses[0].path[depth]
        if any(len(a.path) <= depth + 1 for a in accesses):
            return settled, settled_by  # an access in this statement's own expressions
        child = accesses[0].path[depth + 1]
        if any(a.path[depth + 1] is not child for a in accesses) or not _can_enter(node, buf):
            return settled, settled_by
        if threads and _varies(node, threads):
            return settled, settled_by  # the threads would not step through it together
        if isinstance(node, LetStmt) and threads and _mentions(node.value, threads):
            threads.add(node.var)
        if isinstance(node, For) and _shared_pass(node, buf):
            shared_by = (*shared_by, node)
            threads.add(node.loop_var)
            in_threads = True
        elif isinstance(node, For):
            per_iteration = _region(accesses, depth + 1, buf.ndim, an, shared_by)
            if any(b is None for b in per_iteration) or not (
                    (node.kind == ForKind.THREAD_BINDING and _per_copy(node, buf))
                    or iterations_disjoint(node, per_iteration, an)):
                return settled, settled_by  # a private copy per iteration would not be safe
            constant = all(bounds_width(b, an) is not None for b in per_iteration)
            in_threads = False
        depth += 1
        if constant and not in_threads:
            settled, settled_by = depth, shared_by


def _varies(s: Stmt, threads: set[Var]) -> bool:
    """Whether the threads may run `s` differently: a serial loop's bounds or a condition
    depend on them."""
    if isinstance(s, For) and s.kind != ForKind.THREAD_BINDING:
        return _mentions(s.min, threads) or _mentions(s.extent, threads)
    if isinstance(s, IfThenElse):
        return _mentions(s.condition, threads)
    return False


class _Rewrite(Mutator):
    """Moves the allocation to `place` as `new` and shifts every access by `starts`."""

    def __init__(self, old: Buffer, new: Buffer, starts: list[PrimExpr | None], place: Stmt,
                 alloc: Allocate, an: Analyzer, mentions: _Mentions | None = None) -> None:
        self.old, self.new, self.starts, self.place = old, new, starts, place
        self.alloc, self.an = alloc, an
        self.mentions = mentions if mentions is not None and mentions.knows(old) else None

    def visit(self, node: Any) -> Any:
        if node is self.place:
            inner = super().visit(node)
            return Allocate(self.new, inner, span=self.alloc.span)
        if self.mentions is not None and isinstance(node, (Node, tuple)) \
                and id(self.old) not in self.mentions.of(node):
            return node  # no access of the buffer (nor the place, which holds them) below
        return super().visit(node)

    def _shift(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        out = []
        for idx, start in zip(indices, self.starts):
            out.append(idx if start is None else
                       self.an.simplify(binop("sub", idx, like(start, idx))))
        return tuple(out)

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e = self.generic_visit(e)
        if e.buffer is not self.old:
            return e
        return BufferLoad(self.new, self._shift(e.indices), e.dtype, span=e.span)

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s = self.generic_visit(s)
        if s.buffer is not self.old:
            return s
        return BufferStore(self.new, s.value, self._shift(s.indices), span=s.span)


def _compactable(b: Buffer) -> bool:
    offset_zero = b.elem_offset is None or (isinstance(b.elem_offset, IntImm) and
                                            b.elem_offset.value == 0)
    return b.layout is None and not b.strides and offset_zero and b.scope != "event"


def compact(alloc: Allocate, mentions: _Mentions | None = None,
            shared_by: tuple[For, ...] = ()) -> Stmt:
    """`alloc` with its allocation moved inward and its buffer shrunk (or unchanged);
    `mentions` (over the allocations of the enclosing function) lets the walks skip subtrees
    that do not use the buffer; `shared_by`: the threadIdx and vthread loops around a
    shared-memory allocation, whose threads all use its one copy (the box covers them all,
    as TVM relaxes them)."""
    b = alloc.buffer
    if alloc.init is not None or not _compactable(b):
        return alloc
    finder = _Accesses(b, mentions)
    try:
        finder.visit(alloc.body)
    except _EscapedError:
        return alloc
    accesses = finder.found
    if not accesses:
        return alloc
    an = Analyzer()
    depth, shared_by = _placement(accesses, b, an, shared_by)
    place = accesses[0].path[depth]
    region = _region(accesses, depth, b.ndim, an, shared_by)
    shape: list[PrimExpr] = []
    starts: list[PrimExpr | None] = []
    for dim, bounds in zip(b.shape, region):
        width = None if bounds is None else bounds_width(bounds, an)
        full = dim.value if isinstance(dim, IntImm) else None
        if width is None or width <= 0 or (full is not None and width >= full):
            shape.append(dim)
            starts.append(None)
        else:
            assert bounds is not None
            shape.append(IntImm(width, dim.dtype))
            starts.append(bounds[0])
    if depth == 0 and all(s is None for s in starts):
        return alloc
    new = dataclasses.replace(b, shape=tuple(shape), data=Var(b.data.name, b.data.dtype))
    return _Rewrite(b, new, starts, place, alloc, an, mentions).visit(alloc.body)


class _Compactor(Mutator):
    """Compacts every allocation, inner ones first."""

    def __init__(self, mentions: _Mentions) -> None:
        self.mentions = mentions
        self.loops: list[For] = []

    def visit_For(self, s: For) -> Any:
        self.loops.append(s)
        try:
            return self.generic_visit(s)
        finally:
            self.loops.pop()

    def visit_Allocate(self, a: Allocate) -> Any:
        a = self.generic_visit(a)
        return compact(a, self.mentions, self.shared_by(a.buffer))

    def shared_by(self, buf: Buffer) -> tuple[For, ...]:
        """The threadIdx and vthread loops (inside the innermost blockIdx one) around an
        allocation of shared memory: one copy serves all their threads."""
        if buf.scope not in SHARED_SCOPED:
            return ()
        out: list[For] = []
        for loop in self.loops:
            tag = (loop.thread_tag or "") if loop.kind == ForKind.THREAD_BINDING else ""
            if tag.startswith("blockIdx"):
                out.clear()
            elif tag.startswith(("threadIdx", "vthread")):
                out.append(loop)
        return tuple(out)


def compact_buffers(body: Stmt) -> Stmt:
    """`body` with every allocation placed and compacted."""
    allocations = _Allocations()
    allocations.visit(body)
    out = _Compactor(_Mentions(allocations.ids)).visit(body)
    assert isinstance(out, Node)
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class CompactBuffers(PrimFuncPass):
    """Move each allocation to where its buffer is used and shrink it to the touched region."""

    name = "compact-buffers"
    description = "move allocations to the innermost scope of their uses and shrink them to it"
    optional = True  # an optimisation (see Pass.optional)

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = compact_buffers(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
