"""lower-blocks: TensorIR blocks become plain loop code.

Each `BlockRealize` is replaced by its block's body, where:
- every iteration variable is replaced by the value bound to it (cast to the variable's dtype);
- `init` (when `lower-init` has not already turned it into an `if`) runs first, under
  `if <every reduce iteration variable is at its domain minimum>:` (always, when the block has
  no reduce variable);
- each `alloc_buffer` becomes an `Allocate` around init and body, except one used only inside
  a `T.parallel` loop no other loop encloses, allocated in each iteration of it
  (tirc.ir.parallel_private);
- each `match_buffer` is resolved: an access `M[i, j]` to a buffer matched to `A[r0, r1, r2]`
  becomes `A[r0.min + .., ..]`, the matched buffer's dimensions lined up with the region's
  non-unit dimensions (then unit ones from the right); variables that name its shape, strides
  or offset are bound to the source's, and its storage (`M.data`) is the source's;
- a `T.where` predicate becomes `if predicate:` around all of it;
- reads, writes, names and block annotations are dropped.
The root block follows the same rule (it only has allocations). Blocks nested in blocks are
lowered inside out. The result holds no Block or BlockRealize.
"""

from __future__ import annotations

from typing import Any

from tirc.ir.analysis.regions import region_offset, row_major_strides
from tirc.ir.arith import Analyzer, construct
from tirc.ir.buffer import Buffer, Range
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import INT64
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var, binop, cast
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.parallel_private import privatize_parallel_buffers
from tirc.ir.rebind import rebind
from tirc.ir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    IfThenElse,
    IterKind,
    MatchBufferRegion,
    Stmt,
    seq,
)
from tirc.ir.visitor import Mutator, any_node
from tirc.passes.pass_base import PassContext, PrimFuncPass


def is_true(e: PrimExpr) -> bool:
    """True for the constant predicate `True` (or any non-zero integer constant)."""
    return isinstance(e, IntImm) and e.value != 0


def _conjunction(conds: list[PrimExpr]) -> PrimExpr | None:
    out: PrimExpr | None = None
    for c in conds:
        out = c if out is None else binop("and", out, c)
    return out


@dataclass
class _Match:
    """How the dimensions of a matched buffer land in its source region."""

    source: Buffer
    mins: list[PrimExpr]
    dims: list[int]  # dims[k]: the source dimension that matched dimension k indexes


def _match_dims(m: MatchBufferRegion) -> list[int]:
    """The source dimension of each matched dimension: non-unit ones, then unit ones."""
    region = m.source.region
    ndim = m.buffer.ndim
    chosen = [k for k, r in enumerate(region) if not construct.is_int_const(r.extent, 1)]
    if len(chosen) > ndim or ndim > len(region):
        raise CompileError(
            f"match_buffer '{m.buffer.name}' has {ndim} dimension(s), but its source region of "
            f"'{m.source.buffer.name}' has {len(chosen)} dimension(s) of extent other than 1 "
            f"(of {len(region)})", m.span or m.source.span)
    for k in reversed(range(len(region))):
        if len(chosen) == ndim:
            break
        if k not in chosen:
            chosen.append(k)
    return sorted(chosen)


def _bind_match_vars(m: MatchBufferRegion, dims: list[int], vmap: dict[Any, Any]) -> None:
    """Bind the variables naming the matched buffer's shape, strides and offset to the source's."""
    src = m.source.buffer
    region: tuple[Range, ...] = m.source.region
    src_strides = list(src.strides) if src.strides else row_major_strides(src.shape)
    buf = m.buffer
    for k, sk in enumerate(dims):
        if k < len(buf.shape) and isinstance(buf.shape[k], Var) and buf.shape[k] not in vmap:
            vmap[buf.shape[k]] = cast(buf.shape[k].dtype, region[sk].extent)
        if k < len(buf.strides) and isinstance(buf.strides[k], Var) and buf.strides[k] not in vmap:
            vmap[buf.strides[k]] = cast(buf.strides[k].dtype, src_strides[sk])
    if buf.data is not src.data and buf.data not in vmap:
        # `M.data` (an extern call's pointer): the source's storage, M's elem_offset from it
        vmap[buf.data] = src.data
    if isinstance(buf.elem_offset, Var) and buf.elem_offset not in vmap:
        vmap[buf.elem_offset] = cast(buf.elem_offset.dtype, region_offset(m.source))
    _check_declared(m, dims, src_strides, vmap)


def _check_declared(m: MatchBufferRegion, dims: list[int], src_strides: list[PrimExpr],
                    vmap: dict[Any, Any]) -> None:
    """A shape, stride or elem_offset the matched buffer states as an expression, or as a
    variable bound at another place of the match, must provably be the region's, as TVM's
    LowerMatchBuffer requires (`T.match_buffer(A[i, j], (), elem_offset=0)` and
    `strides=[s, s]` over a row-major region are errors); the interpreter checks the same
    when it runs."""
    buf, region = m.buffer, m.source.region
    declared: list[tuple[str, PrimExpr, PrimExpr]] = []
    for k, sk in enumerate(dims):
        if k < len(buf.shape):
            declared.append((f"dimension {k}", buf.shape[k], region[sk].extent))
        if k < len(buf.strides):
            declared.append((f"stride {k}", buf.strides[k], src_strides[sk]))
    if buf.elem_offset is not None:
        declared.append(("elem_offset", buf.elem_offset, region_offset(m.source)))
    analyzer = Analyzer()
    named: set[Var] = set()
    for what, want, actual in declared:
        if isinstance(want, Var) and want not in named:
            named.add(want)  # bound here (`_bind_match_vars`), or by the block around it
            continue
        # where a variable appears again (`strides=[s, s]`), what it was bound to where it
        # first appeared must be this place's value too
        lhs, rhs = rebind(want, vmap), rebind(actual, vmap)
        if not analyzer.can_prove_equal(cast(INT64, lhs), cast(INT64, rhs)):
            from tirc.ir.printer import print_node  # only on the error path (start-up)

            bound = f" (bound to {print_node(lhs)} where it first appears)" \
                if isinstance(want, Var) else ""
            raise CompileError(
                f"match_buffer '{buf.name}' declares {what} = {print_node(want)}{bound}, but "
                f"its region of '{m.source.buffer.name}' has {print_node(actual)}, which is "
                "not provably the same", m.span or m.source.span)


class _MatchResolver(Mutator):
    """Rewrites accesses to matched buffers into accesses to their sources."""

    def __init__(self, matches: dict[Buffer, _Match]) -> None:
        self.matches = matches

    def _indices(self, m: _Match, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        out = list(m.mins)
        for idx, sk in zip(indices, m.dims):
            out[sk] = construct.add(m.mins[sk], idx)
        return tuple(out)

    def visit_BufferLoad(self, e: BufferLoad) -> Any:
        e = self.generic_visit(e)
        m = self.matches.get(e.buffer)
        if m is None:
            return e
        return BufferLoad(m.source, self._indices(m, e.indices), e.dtype, span=e.span)

    def visit_BufferStore(self, s: BufferStore) -> Any:
        s = self.generic_visit(s)
        m = self.matches.get(s.buffer)
        if m is None:
            return s
        return BufferStore(m.source, s.value, self._indices(m, s.indices), span=s.span)


class _BlockLowerer(Mutator):
    """Replaces every BlockRealize by plain statements, innermost first."""

    def visit_BlockRealize(self, br: BlockRealize) -> Stmt:
        blk: Block = br.block
        body: Stmt = self.visit(blk.body)
        init: Stmt | None = self.visit(blk.init) if blk.init is not None else None
        vmap: dict[Any, Any] = {}
        for iv, value in zip(blk.iter_vars, br.iter_values):
            vmap[iv.var] = cast(iv.var.dtype, value)
        if init is not None:
            at_min = [iv.var.eq(iv.dom.min) for iv in blk.iter_vars if iv.kind == IterKind.REDUCE]
            cond = _conjunction(at_min)
            init_stmt = init if cond is None else IfThenElse(cond, init, span=blk.span)
            body = seq(init_stmt, body)
        for b in reversed(blk.alloc_buffers):
            body = Allocate(b, body, span=blk.span)
        if blk.match_buffers:
            matches: dict[Buffer, _Match] = {}
            for mb in blk.match_buffers:
                dims = _match_dims(mb)
                src = matches.get(mb.source.buffer)
                mins = [r.min for r in mb.source.region]
                if src is not None:  # a match of an earlier match of this block
                    mins = list(_MatchResolver(matches)._indices(src, tuple(mins)))
                    matches[mb.buffer] = _Match(src.source, mins,
                                                [src.dims[d] for d in dims])
                else:
                    matches[mb.buffer] = _Match(mb.source.buffer, mins, dims)
                _bind_match_vars(mb, dims, vmap)
            body = _MatchResolver(matches).visit(body)
        body = rebind(body, vmap)
        if not is_true(br.predicate):
            body = IfThenElse(br.predicate, body, span=br.span)
        return body


def lower_blocks(stmt: Stmt) -> Stmt:
    """`stmt` with every block lowered to plain statements (a block's buffer used only inside
    a `T.parallel` loop allocated in each iteration of it: tirc.ir.parallel_private)."""
    return _BlockLowerer().visit(privatize_parallel_buffers(stmt))


def has_blocks(stmt: Stmt) -> bool:
    """True when `stmt` holds a BlockRealize anywhere."""
    return any_node(stmt, lambda n: isinstance(n, BlockRealize))


@dataclass(frozen=True)
class LowerBlocks(PrimFuncPass):
    """Blocks to plain loops: iteration variables bound, T.where to if, init and allocations."""

    name = "lower-blocks"
    description = "lower TensorIR blocks to plain loops (bind iter vars, T.where to if, allocs)"

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = lower_blocks(func.body)
        return func if body is func.body else func.replace(body=body)  # type: ignore[return-value]
