"""gpu-lower-cross-thread-reduction: a reduction whose loop is bound to threads, as phases."""

from __future__ import annotations

import numpy as np
from gpu_support import lower
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.ir.interpreter.gpu import check_races

# MetaSchedule's CrossThreadReduction: the fused reduction split into a serial outer loop and
# an inner one bound to threadIdx.x, the result kept in shared memory.
OUTER_SERIAL = """
@T.prim_func
def norm(A: T.Buffer((1, 8, 8), "float32"), D: T.Buffer((1,), "float32")):
    C_shared = T.alloc_buffer((1,), scope="shared")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for f0 in range(4):
            for f1 in T.thread_binding(16, thread="threadIdx.x"):
                with T.block("C"):
                    v_b = T.axis.spatial(1, 0)
                    v_i = T.axis.reduce(8, (f0 * 16 + f1) // 8)
                    v_j = T.axis.reduce(8, (f0 * 16 + f1) % 8)
                    with T.init():
                        C_shared[v_b] = T.float32(0)
                    C_shared[v_b] = C_shared[v_b] + A[v_b, v_i, v_j] * A[v_b, v_i, v_j]
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            with T.block("D"):
                v_b = T.axis.spatial(1, tx)
                T.where(tx < 1)
                D[v_b] = T.sqrt(C_shared[v_b])
"""


def test_serial_reduction_loop_outside_the_threads_accumulates_its_steps() -> None:
    """Each step of the serial loop adds its threads' sum to what the earlier steps stored;
    the init runs at the first step only (it used to restart the sum at every step)."""
    mod = parse(OUTER_SERIAL)
    a = (np.arange(64, dtype=np.float32).reshape(1, 8, 8) - 30) / 8
    want = np.sqrt(np.array([(a.astype(np.float64) ** 2).sum()], np.float32))
    ref = np.zeros(1, np.float32)
    Interpreter(mod).call("norm", a, ref)
    np.testing.assert_allclose(ref, want, rtol=1e-6)
    for level in (0, 2):
        got = np.zeros(1, np.float32)
        check_races(lower(mod, opt_level=level), "norm", [a, got])
        np.testing.assert_allclose(got, want, rtol=1e-6)
