"""gpu-lower-cross-thread-reduction: a reduction whose loop is bound to threads, as phases."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower
from lowering_support import ROWSUM_N
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
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


# TVM's tests write a thread-bound reduction with no blockIdx loop around it.
NO_BLOCK_LOOP = """
@T.prim_func
def row_sum(A: T.Buffer((128,), "float32"), B: T.Buffer((1,), "float32")):
    for k in T.thread_binding(0, 128, thread="threadIdx.x"):
        with T.block("B"):
            vk = T.axis.reduce(128, k)
            with T.init():
                B[0] = T.float32(0)
            B[0] = B[0] + A[vk]
"""


def test_reduction_without_a_block_loop_launches_as_one_block() -> None:
    """The phases are one kernel of one block, sharing the tree's shared memory (each phase
    was a kernel of its own, and gpu-storage-scope refused the shared buffer between them)."""
    mod = parse(NO_BLOCK_LOOP)
    lowered = lower(mod, skip=("gpu-split-host-device",))
    text = lowered.script()
    assert text.count('thread="blockIdx.x"') == 1 and "k_block" in text
    a = (np.arange(128, dtype=np.float32) - 60) / 8
    for level in (0, 2):
        got = np.zeros(1, np.float32)
        check_races(lower(mod, opt_level=level), "row_sum", [a, got])
        np.testing.assert_allclose(got, [a.astype(np.float64).sum()], rtol=1e-6)


def test_a_reduction_over_nothing_leaves_its_output_as_the_interpreter_does() -> None:
    """Over n = 0 the block never runs, nor its init: C keeps its values. The lowered tree
    stored the identity (0) whatever n was; its store now needs the first point to exist."""
    mod = parse(ROWSUM_N)  # the GPU default schedule shares each row's sum among threads
    for n in (0, 5, 300):
        a = np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(4, n)
        want = np.full(4, 7.0, np.float32)
        Interpreter(mod).call("rowsum_n", a, want)
        for level in (0, 2):
            got = np.full(4, 7.0, np.float32)
            check_races(lower(mod, opt_level=level), "rowsum_n", [a, got])
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# dlight's reduction rule (TVM's adaptive_avg_pool2d scheduled for CUDA): the cross-thread
# sum goes into a thread-local buffer, and the epilogue after it, outside any threadIdx loop,
# runs in every thread of the block and reads that thread's own copy.
LOCAL_RESULT = """
@T.prim_func
def pool(A: T.Buffer((6, 8), "float32"), B: T.Buffer((6,), "float32")):
    S_local = T.alloc_buffer((6,), scope="local")
    for i in T.thread_binding(6, thread="blockIdx.x"):
        for k in T.thread_binding(4, thread="threadIdx.x"):
            for kk in range(2):
                with T.block("S"):
                    vi = T.axis.spatial(6, i)
                    vk = T.axis.reduce(8, k * 2 + kk)
                    with T.init():
                        S_local[vi] = T.float32(0)
                    S_local[vi] = S_local[vi] + A[vi, vk]
        with T.block("B"):
            vi = T.axis.spatial(6, i)
            B[vi] = S_local[vi] / T.float32(8)
"""


def test_thread_local_result_reaches_every_thread() -> None:
    """Every thread stores the total into its own copy of the local buffer, so the epilogue
    reads it in every thread (only thread 0 stored it, and the others read garbage: NaN)."""
    mod = parse(LOCAL_RESULT)
    a = (np.arange(48, dtype=np.float32).reshape(6, 8) - 20) / 8
    for level in (0, 2):
        got = np.zeros(6, np.float32)
        check_races(lower(mod, opt_level=level), "pool", [a, got])
        np.testing.assert_allclose(got, a.astype(np.float64).mean(axis=1), rtol=1e-6)


# TOPI's argmax scheduled by dlight: a reduction of two buffers at once across the threads.
TUPLE_REDUCTION = """
@T.prim_func
def argmax(A: T.Buffer((4, 64), "float32"), I: T.Buffer((4,), "int32")):
    V = T.alloc_buffer((4,), scope="local")
    for i in T.thread_binding(4, thread="blockIdx.x"):
        for k in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("red"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    I[vi] = -1
                    V[vi] = T.min_value("float32")
                I[vi] = T.Select(V[vi] >= A[vi, vk], I[vi], vk)
                V[vi] = T.max(V[vi], A[vi, vk])
"""


def test_reduction_of_two_buffers_is_one_diagnostic() -> None:
    """Not lowered (ties go to whichever thread's partial comes first, not to the first
    index: not one of TVM's known combiners): one diagnostic naming the pass once."""
    with pytest.raises(CompileError) as err:
        lower(parse(TUPLE_REDUCTION))
    message = err.value.diagnostics[0].message
    assert message.startswith('gpu-lower-cross-thread-reduction: block "red" is not a reduction')
    assert message.count("gpu-lower-cross-thread-reduction") == 1


# dlight's GEMV: the rows on one threadIdx axis, the reduction on another directly inside it.
ROWS_ON_THREADS = """
@T.prim_func
def gemv(A: T.Buffer((2, 4, 24), "float32"), x: T.Buffer((24,), "float32"),
         y: T.Buffer((2, 4), "float32")):
    for b in T.thread_binding(2, thread="blockIdx.x"):
        for i in T.thread_binding(4, thread="threadIdx.y"):
            for k in T.thread_binding(24, thread="threadIdx.x"):
                with T.block("y"):
                    vb, vi, vk = T.axis.remap("SSR", [b, i, k])
                    with T.init():
                        y[vb, vi] = T.float32(1)
                    y[vb, vi] = y[vb, vi] + A[vb, vi, vk] * x[vk]
"""


def test_reduction_inside_a_row_loop_on_another_thread_axis() -> None:
    """Every threadIdx.y row reduces over threadIdx.x with a tree of its own (one segment
    of the shared buffer per row); the loop was refused as nested in another thread loop."""
    mod = parse(ROWS_ON_THREADS)
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 8, (2, 4, 24)).astype(np.float32)
    x = rng.integers(-8, 8, 24).astype(np.float32)
    for level in (0, 2):
        got = np.zeros((2, 4), np.float32)
        check_races(lower(mod, opt_level=level), "gemv", [a, x, got])
        np.testing.assert_array_equal(got, a @ x + 1)


# LegalizeOps' argmax (topi's combiner: ties to the first index) as dlight schedules it, the
# new states bound by lets; and its group norm's sum and sum of squares in one block.
ARGMAX = """
@T.prim_func
def argmax(A: T.Buffer((2, 40), "float32"), I: T.Buffer((2,), "int32")):
    I_s = T.alloc_buffer((2,), "int32", scope="shared")
    V_s = T.alloc_buffer((2,), "float32", scope="shared")
    for b in T.thread_binding(2, thread="blockIdx.x"):
        for ko in range(2):
            for t in T.thread_binding(16, thread="threadIdx.x"):
                with T.block("red"):
                    vi = T.axis.spatial(2, b)
                    vk = T.axis.reduce(40, ko * 16 + t)
                    T.where(ko * 16 + t < 40)
                    with T.init():
                        I_s[vi] = -1
                        V_s[vi] = T.float32(-3.4028234663852886e38)
                    i_new: T.int32 = T.Select(V_s[vi] > A[vi, vk] or V_s[vi] == A[vi, vk]
                                              and I_s[vi] < vk, I_s[vi], vk)
                    v_new: T.float32 = T.Select(V_s[vi] > A[vi, vk], V_s[vi], A[vi, vk])
                    I_s[vi] = i_new
                    V_s[vi] = v_new
        for t in T.thread_binding(16, thread="threadIdx.x"):
            with T.block("out"):
                vi = T.axis.spatial(2, b)
                T.where(t < 1)
                I[vi] = I_s[vi]
"""

MOMENTS = """
@T.prim_func
def moments(A: T.Buffer((3, 20), "float32"), S: T.Buffer((3,), "float32"),
            Q: T.Buffer((3,), "float32")):
    for b in T.thread_binding(3, thread="blockIdx.x"):
        for t in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("red"):
                vi, vk = T.axis.remap("SR", [b, t])
                T.where(t < 20)
                with T.init():
                    S[vi] = T.float32(0)
                    Q[vi] = T.float32(1)
                s0: T.float32 = S[vi] + A[vi, vk]
                s1: T.float32 = A[vi, vk] * A[vi, vk] + Q[vi]
                S[vi] = s0
                Q[vi] = s1
"""


def test_argmax_over_index_and_value_is_one_tree_ties_to_the_first_index() -> None:
    """An (index, value) reduction is lowered as TVM's allreduce over a tuple: one shared
    buffer per state, each tree step folding both with the block's combiner; with ties
    spread over threads and steps, the first index still wins, as in numpy."""
    mod = parse(ARGMAX)
    a = np.zeros((2, 40), np.float32)
    a[0, [7, 23, 36]] = 5  # a tie across threads and steps
    a[1] = np.arange(40) % 9  # 8 at 8, 17, 26, 35
    want = np.argmax(a, axis=1).astype(np.int32)
    ref = np.zeros(2, np.int32)
    Interpreter(mod).call("argmax", a, ref)
    np.testing.assert_array_equal(ref, want)
    for level in (0, 3):
        lowered = lower(mod, opt_level=level)
        assert "red_red1_1" in lowered.script()
        got = np.zeros(2, np.int32)
        check_races(lowered, "argmax", [a, got])
        np.testing.assert_array_equal(got, want)


def test_sum_and_sum_of_squares_in_one_block_are_reduced_together() -> None:
    """Two independent sums of one block (a norm's moments), each after its own init."""
    mod = parse(MOMENTS)
    a = (np.arange(60, dtype=np.float32).reshape(3, 20) - 25) / 4
    for level in (0, 3):
        s, q = np.zeros(3, np.float32), np.zeros(3, np.float32)
        check_races(lower(mod, opt_level=level), "moments", [a, s, q])
        np.testing.assert_allclose(s, a.sum(1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(q, 1 + (a * a).sum(1), rtol=1e-5)
