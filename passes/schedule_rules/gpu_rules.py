"""The GPU schedule rules, most specific first: scatters (the loops that pick the written
element serial in each thread), matmul through shared-memory tiles, matrix-
vector products, norms and reductions shared by the threads of a block, spatial blocks over a
grid, and the fallback (one output per thread, or one thread)."""

from __future__ import annotations

from tirc.passes.schedule_rules.gpu_fallback import GPUFallback
from tirc.passes.schedule_rules.gpu_injective import GPUInjective
from tirc.passes.schedule_rules.gpu_matmul import GPUMatmul
from tirc.passes.schedule_rules.gpu_reduction import GPUMatVec, GPUNorm, GPUReduction
from tirc.passes.schedule_rules.gpu_scatter import GPUScatter
from tirc.passes.schedule_rules.rule import ScheduleRule

GPU_RULES: tuple[ScheduleRule, ...] = (GPUScatter(), GPUMatmul(), GPUMatVec(), GPUNorm(),
                                       GPUReduction(), GPUInjective(), GPUFallback())
