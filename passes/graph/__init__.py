"""Graph-level passes, in pipeline order (tirc.passes.pipeline):

normalize (struct info), legalize-ops (operators -> call_tir of generated kernels, built with
kernel.Kernel and the legalize_* tables), annotate-op-pattern, fold-constants, fuse-ops,
fuse-tir, dead-code-elim, default-schedule (the schedule rules), memory-plan and
lower-graph (the exported host function).
"""
