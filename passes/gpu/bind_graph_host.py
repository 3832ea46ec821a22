"""gpu-bind-graph-host: the work lower-graph adds to a host function runs on the GPU too.

lower-graph writes a few computations straight into the host function of a graph function,
outside every kernel: copies of returned values that no call produces (a returned parameter,
a tensor returned twice) as block nests, and stores of scalar constants passed to a call. On a
GPU the host can only launch kernels, so each such nest gets the default GPU schedule of its
block (gpu-default-schedule: an element per thread, a block per reduced row...) and each
constant store becomes a one-thread kernel, in both branches of a graph-level `if` (which
stays on the host: the launch plan branches). A call of a C function (`R.call_dps_packed`) stays
in the host function: the launch plan runs it on the CPU between the kernels (a "host_call"
step). Everything else is left to gpu-split-host-device.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tirc.ir.attrs import GRAPH_FUNC
from tirc.ir.expr import Call, IntImm
from tirc.ir.function import PrimFunc
from tirc.ir.intrinsics import CALL_PACKED
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
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
from tirc.passes.gpu.default_schedule_gpu import gpu_target
from tirc.passes.gpu.device_launch import launch_rest, one_thread
from tirc.passes.pass_base import PassContext, PrimFuncPass
from tirc.passes.schedule_rules.api import schedule_function


@dataclass(frozen=True)
class GPUBindGraphHost(PrimFuncPass):
    """Block nests and constant stores in graph host functions become kernels."""

    name = "gpu-bind-graph-host"
    description = ("copies and constant stores lower-graph puts in a host function become "
                   "GPU kernels")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if not func.attrs.get(GRAPH_FUNC):
            return func
        body = bind_host(func.body, ctx.target)
        return func if body is func.body else dataclasses.replace(func, body=body)


def nest_block(s: Stmt) -> Block | None:
    """The block of a perfect nest of serial loops from 0 (its iteration values the loop
    variables, in order), or None."""
    loops: list[For] = []
    while isinstance(s, For) and s.kind == ForKind.SERIAL and not s.annotations:
        loops.append(s)
        s = s.body
    if not isinstance(s, BlockRealize) or not loops:
        return None
    if list(s.iter_values) != [lp.loop_var for lp in loops] or \
            any(not (isinstance(lp.min, IntImm) and lp.min.value == 0) for lp in loops) or \
            s.block.alloc_buffers or s.block.match_buffers or \
            not isinstance(s.block.body, BufferStore):
        return None
    return s.block


def bind_host(s: Stmt, target: Any = None) -> Stmt:
    """Host statements with every block nest and store moved into a kernel."""
    if isinstance(s, SeqStmt):
        parts = [bind_host(x, target) for x in s.seq]
        return s if all(a is b for a, b in zip(parts, s.seq)) else seq(*parts)
    if isinstance(s, Allocate | LetStmt | AssertStmt | AttrStmt):
        body = bind_host(s.body, target)
        return s if body is s.body else dataclasses.replace(s, body=body)
    if isinstance(s, IfThenElse):  # a graph-level `if`: the launch plan branches on the host
        then = bind_host(s.then_case, target)
        other = bind_host(s.else_case, target) if s.else_case is not None else None
        return s if then is s.then_case and other is s.else_case else \
            dataclasses.replace(s, then_case=then, else_case=other)
    if isinstance(s, BufferStore):
        return one_thread(s, "const")
    if isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == CALL_PACKED:
        return s  # a host step of the launch plan (backends/nvptx/launch_plan.py)
    if isinstance(s, BlockRealize) and not s.iter_values:
        body = bind_host(s.block.body, target)
        return s if body is s.block.body else \
            dataclasses.replace(s, block=dataclasses.replace(s.block, body=body))
    if nest_block(s) is None:
        return s
    nest = PrimFunc("host_copy", (), {}, s)
    return launch_rest(schedule_function(nest, gpu_target(target))[0]).body
