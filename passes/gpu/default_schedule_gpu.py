"""gpu-default-schedule: GPU thread bindings for every loop function without any, written
directly into the IR, so that every module compiles for CUDA with no schedule (what TVM's
DefaultGPUSchedule and dlight's fallback do).

Applies to each loop function with no thread-bound loop after apply-schedules (a schedule
for target "cuda" runs first and wins; "llvm" schedules are not applied for cuda): the loop
functions legalize-ops and fuse-tir made, and hand-written ones. A function with some loops
bound is its author's: it is left alone (gpu-split-host-device reports the loops left
outside the kernels). When the body is a sequence of perfect loop nests of one block each,
first a spatial block whose intermediate only one later block reads is computed inside that
reader (inline_producers.py). Then each nest becomes one kernel (schedule_matmul_gpu.py,
schedule_reduction.py):

- a spatial block: one element per thread, blocks of 256 threads over the flattened index
  (a bounds check when the count is not a multiple of 256);
- a matmul block (`C[.., i, j] += X * Y`, X without j, Y without i, one reduction iterator):
  tiles of 16 x 16 outputs per block, one output per thread; X and Y tiles are staged in
  shared memory, 16 reduction steps at a time, between barriers; the batch dimensions go to
  blockIdx.z. The elementwise blocks after it that read its result at their own element (bias,
  activation, residual: its epilogue) run in the same kernel, each thread on its output in
  registers; their intermediates used nowhere else are not stored;
- another reduction whose update is `C = C op rhs` (op in + * max min): a block per output
  element; each thread folds a strided slice of the reduction into a register, then a tree of
  halving steps over shared memory, a barrier before each, combines the partial values, and
  thread 0 writes `init op total`. The reductions and elementwise blocks after it that work on
  the same rows (each reads what the group writes only in its own row: softmax's max, exp,
  sum and divide; RMS norm's sum of squares and scaling) run in the same kernel, one stage
  after another with a barrier between them, the elementwise ones strided over the threads;
- any other reduction: one output element per thread, the reduction loops serial.

Other temporaries between the nests stay global buffers (workspaces of the host launch plan).
Any other body (tiled or vectorized nests, blocks whose body is more than a store, imperative
loops, event tensors) gets the schedule of last resort, correct for any nest though not fast
(schedule_fallback.py): each nest's spatial loops fused over a grid of one point per thread,
its other loops serial in each thread; other statements run by one thread.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.ops.sinfo_util import INT64, dim, product
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
from tirc.passes.gpu.inline_producers import inline_producers
from tirc.passes.gpu.schedule_builders import i64, over_grid, spatial_and_reduce, unflatten
from tirc.passes.gpu.schedule_fallback import fallback_schedule
from tirc.passes.gpu.schedule_matmul_gpu import matmul_operands, tiled_matmul
from tirc.passes.gpu.schedule_reduction import (
    block_reduction,
    reduction_update,
    row_group,
    row_kernel,
)
from tirc.passes.gpu.thread_tags import thread_loops
from tirc.passes.graph.default_schedule import SCHEDULED_ATTR
from tirc.passes.graph.kernel import TRUE
from tirc.passes.graph.schedule_matmul import epilogue, realize, tile_local_buffers
from tirc.passes.pass_base import PassContext, PrimFuncPass


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


def _is_true(e):
    return isinstance(e, IntImm) and e.value == 1


def _is_zero(e):
    return isinstance(e, IntImm) and e.value == 0


@dataclass(frozen=True)
class GPUDefaultSchedule(PrimFuncPass):
    """Thread bindings for unbound loop functions: elementwise grids, row reductions, tiled
    matmuls, and one point per thread for any other nest."""

    name = "gpu-default-schedule"
    description = ("GPU schedule for loop functions with no thread bindings: an element per "
                   "thread, a block per reduced row, shared-memory tiled matmul")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if func.attrs.get(SCHEDULED_ATTR) or thread_loops(func.body):
            return func
        new = schedule_gpu_function(func)
        return fallback_schedule(func) if new is None else new


def schedule_gpu_function(func: PrimFunc) -> PrimFunc | None:
    """`func` with each nest bound to blocks and threads, or None when its shape is not
    handled."""
    func = with_root(func)
    found = _nests(func)
    if found is None:
        return None
    root, realizes = found
    blocks, private = inline_producers(root, [r.block for r in realizes])
    scratch: list[Buffer] = []
    out: list[Stmt] = []
    k = 0
    while k < len(blocks):
        blk = blocks[k]
        mm = matmul_operands(blk)
        if mm is None or list(blk.body.indices) != spatial_and_reduce(blk)[0]:  # type: ignore[union-attr]
            rows, group = row_group(blocks, k)
            out.append(row_kernel(group, rows, scratch) if len(group) > 1 else
                       schedule_block(blk, scratch))
            k += len(group)
            continue
        chain = [blocks[j] for j in epilogue(blocks, k)]
        rest = blocks[:k] + blocks[k + 1 + len(chain):]
        local = tile_local_buffers([blk, *chain], rest, root)
        private |= local
        out.append(tiled_matmul(blk, mm[0], mm[1], scratch, chain, local))
        k += 1 + len(chain)
    allocs = tuple(b for b in root.alloc_buffers if b not in private) + tuple(scratch)
    new_root = dataclasses.replace(root, body=seq(*out), alloc_buffers=allocs)
    body = dataclasses.replace(func.body, block=new_root)
    return dataclasses.replace(func, body=body, attrs={**func.attrs, SCHEDULED_ATTR: True})


def with_root(func: PrimFunc) -> PrimFunc:
    """`func` with its body in a root block (a hand-written function may have none)."""
    body = func.body
    if isinstance(body, BlockRealize) and body.block.name == "root":
        return func
    root = Block("root", (), (), (), body)
    return dataclasses.replace(func, body=BlockRealize((), TRUE, root))


def schedule_block(blk: Block, scratch: list[Buffer]) -> Stmt:
    """One kernel for the nest of `blk`; shared and local buffers it needs go to `scratch`."""
    if all(iv.kind == IterKind.SPATIAL for iv in blk.iter_vars):
        return elementwise(blk)
    mm = matmul_operands(blk)
    if mm is not None:
        return tiled_matmul(blk, mm[0], mm[1], scratch)
    if reduction_update(blk) is not None:
        return block_reduction(blk, scratch)
    return thread_per_output(blk)


def elementwise(blk: Block) -> Stmt:
    """One element per thread over the flattened iteration space."""
    ext = [iv.dom.extent for iv in blk.iter_vars]
    return over_grid(product(tuple(ext)) if ext else dim(1), blk.name,
                     lambda flat: realize(blk, unflatten(flat, ext)))


def thread_per_output(blk: Block) -> Stmt:
    """One spatial point per thread; the reduction loops run serially inside the block."""
    _, sp_ext, _, rd_ext = spatial_and_reduce(blk)

    def body(flat: PrimExpr) -> Stmt:
        sp_vals = iter(unflatten(flat, sp_ext))
        loops = [Var(f"{blk.name}_r{k}", INT64) for k in range(len(rd_ext))]
        rd_vals = iter(loops)
        values = [next(sp_vals) if iv.kind == IterKind.SPATIAL else next(rd_vals)
                  for iv in blk.iter_vars]
        stmt: Stmt = realize(blk, values)
        for v, e in reversed(list(zip(loops, rd_ext))):
            stmt = For(v, i64(0), e, ForKind.SERIAL, stmt)
        return stmt

    return over_grid(product(tuple(sp_ext)) if sp_ext else dim(1), blk.name, body)
