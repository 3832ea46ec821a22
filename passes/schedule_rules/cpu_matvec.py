"""CPU rule for matrix-vector products (decoding at batch 1): `y[j] = sum_k x[k] * W[k, j]`
or `y[i] = sum_k A[i, k] * x[k]`, a matmul of one row or one column by its regions.

Parallel over the outputs and vectorized along the matrix's contiguous dimension: over the
reduction when it is contiguous (rfactor into vector partial sums, `<block>_lanes`), else over
chunks of `<block>_cols` outputs accumulating in registers while the reduction runs (as a
reduction by columns, see cpu_reduction). The epilogue (bias, activation) runs per chunk.
"""

from __future__ import annotations

from tirc.passes.schedule_rules.block_info import extent_product, matmul_roles
from tirc.passes.schedule_rules.cpu_reduction import schedule_reduction
from tirc.passes.schedule_rules.rule import RuleContext, ScheduleRule, info_of
from tirc.passes.schedule_rules.traced import TracedSchedule


class MatVec(ScheduleRule):
    """A matmul of one row (or one column), as a reduction of its matrix operand."""

    name = "matvec"

    def apply(self, sch: TracedSchedule, anchor: str, ctx: RuleContext) -> list[str] | None:
        info = info_of(sch, anchor)
        roles = matmul_roles(info)
        if roles is None or not info.is_simple_nest:
            return None
        one_row = not roles.i or extent_product(list(roles.i)) == 1
        one_col = not roles.j or extent_product(list(roles.j)) == 1
        if not (one_row or one_col) or (not roles.i and not roles.j):
            return None
        matrix = roles.b if one_row else roles.a
        return schedule_reduction(sch, anchor, ctx, matrix, reductions=False)
