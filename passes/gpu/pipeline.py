"""The GPU pipeline: the pass names, in order, that lower a module for a cuda target.

The table of contents of GPU lowering, one step a line. The loop-level steps are the CPU
pipeline's; the GPU steps turn thread-bound loops into kernels and a host launch plan. Names of
passes not registered (yet) are left out, as in tirc.passes.pipeline. The graph-level steps are
the CPU ones (passes/graph/graph_pipeline.py) but for the schedule: gpu-default-schedule binds
the generated kernels to blocks and threads at every -O level (unbound code cannot run on a GPU).
"""

from __future__ import annotations

from tirc.passes.graph.graph_pipeline import graph_steps
from tirc.passes.registry import all_passes


def graph_steps_gpu(opt_level: int) -> list[str]:
    """Pass names, in order, that lower the graph functions of a module for the GPU: the CPU
    graph steps with gpu-default-schedule (element per thread, block per row, tiled matmul)
    instead of the CPU schedule, no CPU megakernel, and gpu-bind-graph-host (the copies and
    constants lower-graph adds -> kernels) after lower-graph."""
    cpu_only = ("default-schedule", "megakernel", "megakernel-runtime")
    steps = [name for name in graph_steps(opt_level) if name not in cpu_only]
    steps.insert(steps.index("dead-code-elim") + 1, "gpu-default-schedule")
    steps.insert(steps.index("lower-graph") + 1, "gpu-bind-graph-host")
    return steps


def gpu_pipeline(opt_level: int) -> list[str]:
    """Pass names, in order, that turn a parsed module into one the NVPTX backend compiles."""
    steps = [
        "verify",                  # the input is well-formed
        "apply-schedules",         # @S.schedule functions (`sch.bind` makes thread bindings)
    ]
    steps += graph_steps_gpu(opt_level)
    steps += [
        "gpu-lower-cross-thread-reduction",  # reductions bound to threads -> shared trees
        "lower-init",              # block `init` -> `if` on the first reduction iteration
        "lower-blocks",            # blocks -> loop nests (thread bindings kept)
        "compact-buffers",         # cached tiles shrunk to what a block or thread touches
        "lower-layouts",           # buffers with layouts -> flat storage, physical offsets
        "flatten-buffers",         # n-d accesses -> 1-d offsets
    ]
    if opt_level >= 1:
        steps += ["simplify"]      # fold index arithmetic (thread bindings kept)
    steps += [
        "gpu-inject-vthread",      # vthread loops -> unrolled loops, cut at barriers
        "gpu-thread-binding",      # check thread-bound loops; start each at 0
        "gpu-launch-dims",         # one extent per thread axis and kernel (guards)
        "gpu-storage-scope",       # shared/local buffers into the kernels that use them
        "gpu-storage-sync",        # barriers between shared-memory phases, where missing
    ]
    if opt_level >= 2:
        steps += [
            "vectorize",           # vectorized loops -> ramps and broadcasts
            "unroll",              # unrolled loops -> straight-line code
            "simplify",            # clean up after them
        ]
    steps += [
        "gpu-split-host-device",   # each launch region -> a kernel; host -> launch plan
        "verify-gpu",              # no parallel loops, launch and shared-memory limits
    ]
    registered = all_passes()
    return [name for name in steps if name in registered]
