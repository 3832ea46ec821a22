"""What the schedule rules know of a block: its iteration kinds and its access regions.

Rules recognise a kind of block from these alone (never from the text of its expression), as
TVM's dlight does: which iteration variables are spatial or reductions, which buffers the block
reads and writes, and which variables index each dimension of each region. A matmul is a
reduction reading two buffers, one indexed by the rows and the reduction, the other by the
reduction and the columns; a convolution reads a window (a dimension indexed by a spatial plus
a reduction variable); a row reduction reduces the innermost dimension of what it reads.
"""

from __future__ import annotations

from math import prod

from tirc.ir.analysis.access import effective_regions
from tirc.ir.analysis.regions import free_vars
from tirc.ir.attrs import SPARSE_PLAN, SPARSE_TENSORS
from tirc.ir.buffer import Buffer, BufferRegion
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.stmt import Block, BlockRealize, For, ForKind, IterKind, IterVar, Stmt
from tirc.ir.visitor import any_node
from tirc.passes.schedule.dependence import BlockSite, child_sites
from tirc.passes.schedule.tree import Path, loops_in_scope, walk


@dataclass(frozen=True)
class Access:
    """One buffer region of a block: the iteration variables each dimension's index uses."""

    buffer: Buffer
    dims: tuple[frozenset[Var], ...]

    @property
    def vars(self) -> frozenset[Var]:
        return frozenset().union(*self.dims) if self.dims else frozenset()

    @property
    def inner(self) -> Var | None:
        """The one variable of the innermost dimension whose index uses any, else None."""
        for d in reversed(self.dims):
            if d:
                return next(iter(d)) if len(d) == 1 else None
        return None

    @property
    def is_window(self) -> bool:
        """Some dimension is indexed by more than one variable (`oh + ry`)."""
        return any(len(d) > 1 for d in self.dims)


def _access(region: BufferRegion, ivars: set[Var]) -> Access:
    return Access(region.buffer, tuple(
        frozenset(v for v in free_vars(r.min) if v in ivars) for r in region.region))


@dataclass
class BlockInfo:
    """A block of a scope, its loops, and its regions as Accesses."""

    path: Path
    loops: list[For]

    @property
    def realize(self) -> BlockRealize:
        r = self.path[-1]
        assert isinstance(r, BlockRealize)
        return r

    @property
    def block(self) -> Block:
        return self.realize.block

    @property
    def name(self) -> str:
        return self.block.name

    @property
    def spatial(self) -> list[IterVar]:
        return [iv for iv in self.block.iter_vars if iv.kind == IterKind.SPATIAL]

    @property
    def reduce(self) -> list[IterVar]:
        return [iv for iv in self.block.iter_vars if iv.kind == IterKind.REDUCE]

    @property
    def is_spatial(self) -> bool:
        return all(iv.kind == IterKind.SPATIAL for iv in self.block.iter_vars)

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduce) and all(iv.kind != IterKind.OPAQUE
                                         for iv in self.block.iter_vars)

    def regions(self) -> tuple[list[Access], list[Access]]:
        """(reads, writes) as Accesses; reads leave out the buffers the block writes."""
        reads, writes = effective_regions(self.block)
        ivars = {iv.var for iv in self.block.iter_vars}
        written = {r.buffer for r in writes}
        return ([_access(r, ivars) for r in reads if r.buffer not in written],
                [_access(r, ivars) for r in writes])

    @property
    def output(self) -> Access | None:
        """The one buffer the block writes, each dimension a lone iteration variable or a
        constant; None otherwise."""
        writes = self.regions()[1]
        if len(writes) != 1 or any(len(d) > 1 for d in writes[0].dims):
            return None
        return writes[0]

    def extent(self, iv: IterVar) -> int | None:
        e = iv.dom.extent
        return e.value if isinstance(e, IntImm) else None

    @property
    def is_simple_nest(self) -> bool:
        """Each iteration variable bound to its own serial loop of the nest, in order, and no
        other loop or predicate (a nest no schedule has touched)."""
        br = self.realize
        if not (isinstance(br.predicate, IntImm) and br.predicate.value == 1):
            return False
        if len(self.loops) != len(br.iter_values) or any(
                lp.kind != ForKind.SERIAL or lp.annotations for lp in self.loops):
            return False
        return all(v is lp.loop_var for v, lp in zip(br.iter_values, self.loops))


def extent_product(ivs: list[IterVar]) -> int | None:
    """The product of constant extents, or None when one is symbolic."""
    values = [iv.dom.extent.value if isinstance(iv.dom.extent, IntImm) else None for iv in ivs]
    return None if None in values else prod(v for v in values if v is not None)


@dataclass(frozen=True)
class MatmulRoles:
    """A block `C[batch, i, j] += A[batch, i, k] * B[batch, k, j]` by regions: `a` is read at
    the rows `i` and the reductions, `b` at the reductions and the columns `j` (the output's
    innermost variable is a column); `batch` variables index both."""

    a: Access
    b: Access
    out: Access
    batch: tuple[IterVar, ...]
    i: tuple[IterVar, ...]
    j: tuple[IterVar, ...]
    k: tuple[IterVar, ...]


def matmul_roles(info: BlockInfo) -> MatmulRoles | None:
    """The roles of a reduction reading two buffers at lone variables, when every reduction
    variable indexes both, every spatial one the output and one of them; else None."""
    if not info.is_reduction:
        return None
    out = info.output
    reads, _ = info.regions()
    if out is None or len(reads) != 2 or any(r.is_window for r in reads):
        return None
    x, y = reads
    xv, yv = x.vars, y.vars
    red = info.reduce
    if not all(iv.var in xv and iv.var in yv for iv in red):
        return None
    ovars = out.vars
    spatial = info.spatial
    if any(iv.var not in ovars or (iv.var not in xv and iv.var not in yv) for iv in spatial):
        return None
    inner = out.inner
    if inner is not None and inner in xv and inner not in yv:
        x, y, xv, yv = y, x, yv, xv  # b holds the output's innermost (column) variable
    batch = tuple(iv for iv in spatial if iv.var in xv and iv.var in yv)
    i = tuple(iv for iv in spatial if iv.var in xv and iv.var not in yv)
    j = tuple(iv for iv in spatial if iv.var in yv and iv.var not in xv)
    return MatmulRoles(x, y, out, batch, i, j, tuple(red))


def is_window_reduction(info: BlockInfo) -> bool:
    """A reduction reading a window: some input dimension indexed by a spatial and a
    reduction variable together (a convolution or a pooling)."""
    if not info.is_reduction or info.output is None:
        return False
    red = {iv.var for iv in info.reduce}
    sp = {iv.var for iv in info.spatial}
    return any(d & red and d & sp for r in info.regions()[0] for d in r.dims)


def scope_blocks(body: Stmt, path: Path) -> list[BlockInfo]:
    """The blocks directly in the scope at the end of `path` (a block realize; the empty
    path: the function body `body`, when it has no root block), in program order."""
    if path:
        sites = child_sites(path)
    else:
        sites = [BlockSite(p) for p in walk(body) if isinstance(p[-1], BlockRealize)
                 and not any(isinstance(x, BlockRealize) for x in p[:-1])]
    return [BlockInfo(site.path, loops_in_scope(site.path)) for site in sites]


def site_info(site: BlockSite) -> BlockInfo:
    return BlockInfo(site.path, loops_in_scope(site.path))


def intermediates(func: PrimFunc, info: BlockInfo) -> set[Buffer]:
    """Buffers the block writes that are not parameters of the function."""
    params = set(func.buffer_map.values())
    return {r.buffer for r in info.regions()[1] if r.buffer not in params}


def dims_of(e: PrimExpr, ivars: set[Var]) -> frozenset[Var]:
    return frozenset(v for v in free_vars(e) if v in ivars)


def trusted_indices(func: PrimFunc) -> set[str]:
    """Names of the index buffers whose values tell rows apart by construction: the row maps
    of a decomposed format (a row appears in one at most once, except in a chunked bucket,
    whose row variable `decompose_format` makes a reduction) and the `indptr` arrays of sparse
    axes (a row's positions `indptr[i] + j`, j below its length, are its own, as the arrays'
    checks make sure)."""
    params: set[str] = set()
    plan = func.attrs.get(SPARSE_PLAN)
    if isinstance(plan, dict):
        params.update(plan.get("rows", ()))
    tensors = func.attrs.get(SPARSE_TENSORS)
    for tensor in tensors if isinstance(tensors, (list, tuple)) else ():
        for axis in tensor.get("axes", ()) if isinstance(tensor, dict) else ():
            if isinstance(axis, dict) and isinstance(axis.get("indptr"), str):
                params.add(axis["indptr"])
    return {b.name for p, b in func.buffer_map.items() if p.name in params}


def scatter_vars(info: BlockInfo, trusted: set[str], among: set[Var] | None = None
                 ) -> set[Var]:
    """Variables (the block's spatial ones, or those of `among`) that pick, through a loaded
    index, the element the block writes (`out[idx[i], k]`): two of their values may write the
    same element (a duplicate index), so their loops stay serial, as the interpreter runs
    them (loads from `trusted` buffers excepted: trusted_indices)."""
    wanted = among if among is not None else {iv.var for iv in info.spatial}
    found: set[Var] = set()

    def visit(n: object) -> bool:
        if isinstance(n, BufferLoad) and n.buffer.name not in trusted:
            found.update(v for v in free_vars(n) if v in wanted)
        return False

    for reg in info.block.writes:
        for r in reg.region:
            any_node(r.min, visit)
    return found
