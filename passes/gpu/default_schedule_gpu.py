"""gpu-default-schedule: thread bindings for every loop function without any, by the GPU
schedule rules (passes/schedule_rules) through the schedule primitives, so that every module
compiles for CUDA with no schedule (what TVM's DefaultGPUSchedule and dlight do).

Applies to each loop function with no thread-bound loop after apply-schedules (a schedule for
target "cuda" runs first and wins; "llvm" schedules are not applied for cuda), unless it opts
out (`T.func_attr({"tirc.schedule": "none"})`, `-fno-default-schedule`). A function with some
loops bound is its author's: it is left alone (gpu-split-host-device reports the loops left
outside the kernels). Loops a CPU schedule made parallel or vectorized become serial first;
then each block gets its rule (shared-memory tiled matmul, a block per reduced row with a
cross-thread reduction, an element per thread, ...), and what holds no block runs on one
thread (device_launch.py). The schedule applied is reported as a note, as on the CPU.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.attrs import SCHEDULED
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.threads import thread_loops
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.loop_jumps import contains_loop_jump
from tirc.ir.module import IRModule
from tirc.ir.printer import print_node
from tirc.ir.target import parse_target
from tirc.passes.gpu.device_launch import launch_rest, serial_loops
from tirc.passes.pass_base import PassContext, PrimFuncPass
from tirc.passes.schedule.tree import BlockNames, has_unique_block_names
from tirc.passes.schedule_rules.api import opted_out, schedule_function
from tirc.passes.schedule_rules.options import schedule_option


def gpu_target(target: Any) -> Any:
    """The target, or plain CUDA when the context has none (this pass is for the GPU)."""
    return target if getattr(target, "is_gpu", False) else parse_target("cuda")


def schedule_gpu(func: PrimFunc, ctx: PassContext) -> PrimFunc:
    """`func` with its GPU default schedule; the schedule goes to the context's notes. Blocks
    that share a name (TVM allows several unnamed `T.block()`) are renamed apart first: the
    primitives find blocks by name, and a GPU function must be scheduled to run at all."""
    body = serial_loops(func.body)
    if not has_unique_block_names(body):
        body = BlockNames(set()).visit(body)
    func = func.replace(body=body)  # type: ignore[assignment]
    new, trace = schedule_function(func, gpu_target(ctx.target))
    ctx.note(f"default schedule of {func.name} ({trace.summary()}):\n"
             f"{print_node(trace.schedule).rstrip()}")
    return launch_rest(new)


@dataclass(frozen=True)
class GPUDefaultSchedule(PrimFuncPass):
    """The GPU rules' schedule for each loop function with no thread binding."""

    name: ClassVar[str] = "gpu-default-schedule"
    description: ClassVar[str] = ("GPU schedule of loop functions with no thread bindings, by "
                                  "the schedule rules: an element per thread, a block per "
                                  "reduced row, shared-memory tiled matmul")

    schedule: str = schedule_option()

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if func.attrs.get(SCHEDULED) or thread_loops(func.body) or \
                opted_out(func, self.schedule) or contains_loop_jump(func.body):
            return func  # (the primitives refuse loops that break or continue)
        return schedule_gpu(func, ctx)
