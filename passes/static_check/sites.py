"""What the static checks look at: every access and every block binding of a loop function,
with its indices written over the enclosing loop variables.

One walk collects, for each BufferLoad and BufferStore, its indices after substituting the
bindings of the enclosing blocks (so `A[vi, vj + 2]` becomes `A[i, j + 2]`), the loops around
it, and the conditions under which it runs (`if`, `T.where`, the branches of
`T.if_then_else`; not `T.Select`, whose sides are both evaluated, nor `and`/`or`, which compiled
code does not short-circuit); and for each block realize, its binding values over the same
loops. An access through a `T.match_buffer` view also carries its source buffer and indices
(`in_source`), which the race checks compare: views of disjoint tiles touch no common element.
"""

from __future__ import annotations

from dataclasses import field, replace

from tirc.ir import intrinsics as intrin
from tirc.ir.arith import construct
from tirc.ir.buffer import Buffer
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import BufferLoad, Call, Let, Not, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.span import Span
from tirc.ir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    Stmt,
    While,
)
from tirc.ir.visitor import Visitor, substitute


@dataclass(frozen=True)
class Loop:
    """An enclosing loop: its variable and range over the outer loops' variables."""

    var: Var
    min: PrimExpr
    extent: PrimExpr
    node: For


@dataclass(frozen=True)
class Access:
    """A load or store: buffer, indices over loop variables, the loops around it (outermost
    first), the conditions it runs under, and where it is written (a store's value too, over
    the same variables)."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    loops: tuple[Loop, ...]
    guards: tuple[PrimExpr, ...]
    span: Span | None
    is_write: bool
    block: str | None
    node: BufferLoad | BufferStore
    value: PrimExpr | None = None
    # Through a `T.match_buffer` view: the viewed buffer and the indices into it.
    source: tuple[Buffer, tuple[PrimExpr, ...]] | None = None


def in_source(a: Access) -> Access:
    """`a` as an access to the buffer its matched view (if any) views: two views of one
    buffer, or a view and the buffer, touch one element when their source indices agree."""
    if a.source is None:
        return a
    return replace(a, buffer=a.source[0], indices=a.source[1], source=None)


@dataclass(frozen=True)
class Binding:
    """A block iteration variable's value over the loop variables, with the conditions the
    block runs under (its `T.where` among them)."""

    realize: BlockRealize
    index: int
    value: PrimExpr
    loops: tuple[Loop, ...]
    guards: tuple[PrimExpr, ...]


@dataclass
class Sites:
    """Everything one walk of a function found."""

    accesses: list[Access] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    blocks: list[tuple[BlockRealize, tuple[Loop, ...]]] = field(default_factory=list)
    opaque: set[Var] = field(default_factory=set)
    # The loops around the allocation of each buffer allocated in the function (by its data
    # variable): a buffer allocated inside a loop is private to each iteration.
    allocated_in: dict[Var, tuple[Loop, ...]] = field(default_factory=dict)


class _Walker(Visitor):
    """Walks a function keeping loops, substitutions and guards."""

    def __init__(self) -> None:
        self.sites = Sites()
        self.loops: list[Loop] = []
        self.subst: dict[Var, PrimExpr] = {}
        self.guards: list[PrimExpr] = []
        self.block: list[str] = []
        # Each matched view in scope: its source buffer, the region's mins (over loop
        # variables) and the source dimension each of its dimensions indexes.
        self.views: dict[Buffer, tuple[Buffer, list[PrimExpr], list[int]]] = {}

    def here(self, e: PrimExpr) -> PrimExpr:
        return substitute(e, self.subst) if self.subst else e

    def access(self, node: BufferLoad | BufferStore, is_write: bool) -> None:
        indices = tuple(self.here(i) for i in node.indices)
        view = self.views.get(node.buffer)
        source = None if view is None else (view[0], _into(view[1], view[2], indices))
        self.sites.accesses.append(Access(
            node.buffer, indices, tuple(self.loops),
            tuple(self.guards), node.span, is_write, self.block[-1] if self.block else None,
            node, self.here(node.value) if isinstance(node, BufferStore) else None, source))

    def match_views(self, b: Block) -> list[Buffer]:
        """Enter the views `b` matches (a view of an earlier view resolved to its source);
        a match lower-blocks refuses is left out (it reports it)."""
        from tirc.passes.lower_blocks import _match_dims

        entered = []
        for m in b.match_buffers:
            try:
                dims = _match_dims(m)
            except CompileError:
                continue
            src, mins = m.source.buffer, [self.here(r.min) for r in m.source.region]
            outer = self.views.get(src)
            if outer is not None:
                src, mins, dims = outer[0], list(_into(outer[1], outer[2], mins)), \
                    [outer[2][d] for d in dims]
            self.views[m.buffer] = (src, mins, dims)
            entered.append(m.buffer)
        return entered

    def guarded(self, cond: PrimExpr, body: object) -> None:
        self.guards.append(self.here(cond))
        self.visit(body)
        self.guards.pop()

    # ---- statements

    def visit_For(self, s: For) -> None:
        self.visit((s.min, s.extent))
        self.loops.append(Loop(s.loop_var, self.here(s.min), self.here(s.extent), s))
        self.visit(s.body)
        self.loops.pop()

    def visit_Allocate(self, s: Allocate) -> None:
        self.sites.allocated_in[s.buffer.data] = tuple(self.loops)
        self.generic_visit(s)

    def visit_While(self, s: While) -> None:
        self.visit(s.condition)
        self.sites.opaque |= _assigned(s.body)
        self.guarded(s.condition, s.body)

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit(s.condition)
        self.guarded(s.condition, s.then_case)
        if s.else_case is not None:
            self.guarded(Not(s.condition), s.else_case)

    def visit_LetStmt(self, s: LetStmt) -> None:
        self.visit(s.value)
        self.subst[s.var] = self.here(s.value)
        self.visit(s.body)
        del self.subst[s.var]

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.visit((s.value, s.indices))
        self.access(s, True)

    def visit_BlockRealize(self, br: BlockRealize) -> None:
        self.visit((br.iter_values, br.predicate))
        pred = self.here(br.predicate)
        loops, guards = tuple(self.loops), (*self.guards, pred)
        for k, value in enumerate(br.iter_values):
            self.sites.bindings.append(Binding(br, k, self.here(value), loops, guards))
        self.sites.blocks.append((br, loops))
        values = [self.here(v) for v in br.iter_values]
        for iv, v in zip(br.block.iter_vars, values):
            self.subst[iv.var] = v
        self.guards.append(pred)
        self.visit_Block(br.block)
        self.guards.pop()
        for iv in br.block.iter_vars:
            del self.subst[iv.var]

    def visit_Block(self, b: Block) -> None:
        for buf in b.alloc_buffers:
            self.sites.allocated_in[buf.data] = tuple(self.loops)
        self.block.append(b.name)
        entered = self.match_views(b)
        self.visit((b.init, b.body))
        for buf in entered:
            del self.views[buf]
        self.block.pop()

    # ---- expressions

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self.visit(e.indices)
        self.access(e, False)

    def visit_Let(self, e: Let) -> None:
        self.visit(e.value)
        self.subst[e.var] = self.here(e.value)
        self.visit(e.body)
        del self.subst[e.var]

    def visit_Call(self, e: Call) -> None:
        if e.op == intrin.IF_THEN_ELSE and len(e.args) == 3:
            self.visit(e.args[0])
            self.guarded(e.args[0], e.args[1])
            self.guarded(Not(e.args[0]), e.args[2])
        else:
            self.generic_visit(e)


def _into(mins: list[PrimExpr], dims: list[int], indices: tuple[PrimExpr, ...] | list[PrimExpr]
          ) -> tuple[PrimExpr, ...]:
    """Indices into a view's source: the region's mins, plus the view's index in the source
    dimension each view dimension indexes."""
    out = list(mins)
    for idx, sk in zip(indices, dims):
        out[sk] = construct.add(mins[sk], idx)
    return tuple(out)


def _assigned(s: Stmt) -> set[Var]:
    """Variables a while loop's body may change (let-bound inside it): not loop ranges."""
    out: set[Var] = set()

    class _Lets(Visitor):
        def visit_LetStmt(self, n: LetStmt) -> None:
            out.add(n.var)
            self.generic_visit(n)

    _Lets().visit(s)
    return out


def collect_sites(func: PrimFunc) -> Sites:
    """The accesses and bindings of `func`, in program order."""
    w = _Walker()
    w.visit(func.body)
    return w.sites
