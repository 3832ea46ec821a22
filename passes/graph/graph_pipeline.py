"""The graph-level steps of the compiler, in order, for the default pipeline to start with.

They turn graph functions into one exported host loop function each; the loop-level pipeline
(lower-blocks, flatten-buffers, ...) follows.
"""

from __future__ import annotations


def graph_steps(opt_level: int) -> list[str]:
    """Pass names, in order, that lower the graph functions of a module."""
    steps = [
        "normalize",             # struct info of every binding, shape errors at their source
        "legalize-ops",          # operators -> call_tir of generated loop functions
        "lower-sparse-iterations",  # sparse kernels (written or legalized) -> loops, flat storage
        "annotate-op-pattern",   # elementwise / broadcast / injective / reduction / fusable
    ]
    if opt_level >= 1:
        steps += [
            "fold-constants",    # scalar computations on constants at compile time
            "fuse-ops",          # group producers, consumers and epilogues
            "fuse-tir",          # one loop function per group
        ]
    steps += ["dead-code-elim"]          # unused bindings and functions
    if opt_level >= 1:
        steps += ["default-schedule"]    # parallel outer, vectorized inner loops, tiled matmul
    steps += [
        "memory-plan",           # intermediate storage: tokens reused after last use
        "megakernel",            # marked graph functions -> tasks and event tensors
        "lower-graph",           # graph function -> host loop function running the kernels
        "megakernel-runtime",    # task graphs -> one parallel region with a schedule
    ]
    return steps
