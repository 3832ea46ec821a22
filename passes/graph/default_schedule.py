"""default-schedule: CPU loop structure for the generated kernels, written directly into the IR.

Applies to loop functions made by legalize-ops and fuse-tir (those with an `op_pattern`) whose
body is a sequence of perfect loop nests, one block each; others are left alone. Per nest:

- a spatial block: its outer dimensions fused into one `T.parallel` loop, the innermost one
  `T.vectorized`;
- a multiply-accumulate (matmul) block whose last dimension has a constant extent divisible by
  8, with the elementwise blocks after it (its epilogue): tiled, accumulated in registers,
  parallel over tiles (see schedule_matmul);
- any other reduction: its outermost spatial loop made parallel, and its init a block of its own
  before the reduction loops when they may have no iteration.

These are what `sch.fuse`, `sch.split`, `sch.parallel`, `sch.vectorize`,
`sch.decompose_reduction` and `sch.reverse_compute_at` would do, applied without a schedule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir.arith import Analyzer
from tirc.ir.attrs import OP_PATTERN, SCHEDULED
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var, binop
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.stmt import (
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IterKind,
    SeqStmt,
    Stmt,
    seq,
)
from tirc.ir.visitor import substitute
from tirc.passes.graph.kernel import ZERO
from tirc.passes.graph.schedule_matmul import (
    epilogue,
    fused_loop,
    is_matmul,
    realize,
    tile_local_buffers,
    tiled_matmul,
)
from tirc.passes.pass_base import PassContext, PrimFuncPass


@dataclass(frozen=True)
class DefaultSchedule(PrimFuncPass):
    """Parallel outer loops, vectorized inner loops and tiled matmuls for generated kernels."""

    name = "default-schedule"
    description = "CPU schedule for generated kernels: parallel, vectorized, tiled matmul"

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if OP_PATTERN not in func.attrs or func.attrs.get(SCHEDULED):
            return func
        if ctx.target is not None and getattr(ctx.target, "is_gpu", False):
            return func
        new = schedule_function(func)
        return func if new is None else new


def _nests(func: PrimFunc) -> tuple[Block, list[BlockRealize]] | None:
    """The root block and its nests' block realizes, when every nest is perfect."""
    root = func.body
    if not (isinstance(root, BlockRealize) and root.block.name == "root"):
        return None
    body = root.block.body
    stmts = list(body.seq) if isinstance(body, SeqStmt) else [body]
    realizes = []
    for s in stmts:
        loops: list[For] = []
        while isinstance(s, For) and s.kind == ForKind.SERIAL and not s.annotations:
            loops.append(s)
            s = s.body
        if not isinstance(s, BlockRealize) or not _is_true(s.predicate):
            return None
        if [lp.loop_var for lp in loops] != list(s.iter_values) or \
                len(loops) != len(s.block.iter_vars) or s.block.alloc_buffers or \
                s.block.match_buffers or not isinstance(s.block.body, BufferStore) or \
                any(not _is_zero(lp.min) for lp in loops):
            return None
        for lp, iv in zip(loops, s.block.iter_vars):
            if not _is_zero(iv.dom.min) or iv.dom.extent != lp.extent:
                return None
        realizes.append(s)
    return root.block, realizes


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def schedule_function(func: PrimFunc) -> PrimFunc | None:
    """The function with every nest scheduled, or None when its shape is not handled."""
    found = _nests(func)
    if found is None:
        return None
    root, realizes = found
    blocks = [r.block for r in realizes]
    out: list[Stmt] = []
    local: set[Buffer] = set()
    k = 0
    while k < len(blocks):
        blk = blocks[k]
        if is_matmul(blk):
            chain = epilogue(blocks, k)
            group = [blk] + [blocks[j] for j in chain]
            others = blocks[:k] + blocks[k + 1 + len(chain):]
            tile_local = tile_local_buffers(group, others, root)
            local |= tile_local
            out.extend(tiled_matmul(blk, group[1:], tile_local))
            k = (chain[-1] if chain else k) + 1
        elif all(iv.kind == IterKind.SPATIAL for iv in blk.iter_vars):
            out.append(_spatial(blk))
            k += 1
        else:
            out.append(_reduction(blk))
            k += 1
    allocs = tuple(b for b in root.alloc_buffers if b not in local)
    new_root = dataclasses.replace(root, body=seq(*out), alloc_buffers=allocs)
    body = dataclasses.replace(func.body, block=new_root)
    return dataclasses.replace(func, body=body, attrs={**func.attrs, SCHEDULED: True})


# ---- loop construction --------------------------------------------------------------------


def _spatial(blk: Block) -> Stmt:
    """Outer dimensions fused into a parallel loop, the innermost vectorized."""
    ext = [iv.dom.extent for iv in blk.iter_vars]
    if not ext:
        return realize(blk, [])
    inner = Var("i_inner", ext[-1].dtype)  # a loop variable has its extent's dtype
    zero = IntImm(0, ext[-1].dtype)
    if len(ext) == 1:
        return For(inner, zero, ext[0], ForKind.VECTORIZED, realize(blk, [inner]))
    f, values, total = fused_loop(ext[:-1], "i_outer")
    body = For(inner, zero, ext[-1], ForKind.VECTORIZED, realize(blk, values + [inner]))
    return For(f, ZERO, total, ForKind.PARALLEL, body)


def _reduction(blk: Block) -> Stmt:
    """Original loop order, the outermost spatial loop parallel. When the reduction may have
    no iteration (a symbolic extent that can be 0, as a sum over an empty batch), its init
    becomes a block `<name>_init` of its own before the reduction loops (what
    `sch.decompose_reduction` makes), so that an empty reduction still yields the init value:
    as an `if` on the first reduction iteration it would never run."""
    loops = [Var(f"l{k}", iv.dom.extent.dtype) for k, iv in enumerate(blk.iter_vars)]
    spatial = 0
    while spatial < len(loops) and blk.iter_vars[spatial].kind == IterKind.SPATIAL:
        spatial += 1
    an = Analyzer()
    split = blk.init is not None and spatial < len(loops) and \
        all(iv.kind == IterKind.REDUCE for iv in blk.iter_vars[spatial:]) and \
        not all(an.can_prove(binop("ge", iv.dom.extent, IntImm(1, iv.dom.extent.dtype)))
                for iv in blk.iter_vars[spatial:])
    stmt: Stmt = realize(dataclasses.replace(blk, init=None) if split else blk, list(loops))
    for k in range(len(loops) - 1, -1, -1):
        iv = blk.iter_vars[k]
        kind = ForKind.PARALLEL if k == 0 and iv.kind == IterKind.SPATIAL else ForKind.SERIAL
        if split and k == spatial - 1:
            stmt = seq(_init_block(blk, spatial, loops[:spatial]), stmt)
        stmt = For(loops[k], IntImm(0, iv.dom.extent.dtype), iv.dom.extent, kind, stmt)
    if split and spatial == 0:
        stmt = seq(_init_block(blk, 0, []), stmt)
    return stmt


def _init_block(blk: Block, spatial: int, loops: list[Var]) -> Stmt:
    """`blk`'s init as a block over its first `spatial` (spatial) iterators, bound to
    `loops`."""
    ivs = blk.iter_vars[:spatial]
    fresh = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in ivs}
    assert blk.init is not None
    init = Block(name=f"{blk.name}_init",
                 iter_vars=tuple(dataclasses.replace(iv, var=fresh[iv.var]) for iv in ivs),
                 reads=(), writes=tuple(substitute(w, fresh) for w in blk.writes),
                 body=substitute(blk.init, fresh))
    return realize(init, list(loops))
