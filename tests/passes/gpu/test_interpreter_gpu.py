"""The GPU interpreter: lockstep phases, per-block shared memory, divergence and races."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower
from tirc.ir.interpreter.gpu import GPUInterpreter, InterpreterError, check_races

DIVERGENT = """
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            if tx < 32:
                A[tx] = T.float32(1)
                T.tvm_storage_sync("shared")
"""

UNINITIALISED = """
@T.prim_func
def f(A: T.Buffer((2, 8), "float32")):
    S = T.alloc_buffer((16,), "float32", scope="shared")
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            S[tx] = T.float32(1)
        T.tvm_storage_sync("shared")
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            A[bx, tx] = S[tx + 8]
"""

PER_BLOCK = """
@T.prim_func
def f(A: T.Buffer((3, 4), "float32")):
    S = T.alloc_buffer((4,), "float32", scope="shared")
    for bx in T.thread_binding(3, thread="blockIdx.x"):
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            S[tx] = T.Cast("float32", bx * 10 + tx)
        T.tvm_storage_sync("shared")
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            A[bx, tx] = S[3 - tx]
"""


def test_divergent_barrier_is_reported() -> None:
    mod = lower(DIVERGENT, skip=["verify-gpu"])
    with pytest.raises(InterpreterError, match="finished while 32 wait at a barrier"):
        GPUInterpreter(mod).call("f", np.zeros(64, np.float32))


def test_shared_memory_starts_uninitialised() -> None:
    a = np.zeros((2, 8), np.float32)
    GPUInterpreter(lower(UNINITIALISED)).call("f", a)
    assert np.isnan(a).all()


def test_each_block_has_its_own_shared_memory() -> None:
    a = np.zeros((3, 4), np.float32)
    check_races(lower(PER_BLOCK), "f", [a])
    np.testing.assert_array_equal(a, [[3, 2, 1, 0], [13, 12, 11, 10], [23, 22, 21, 20]])


def test_kernel_launched_directly() -> None:
    mod = lower(PER_BLOCK)
    a = np.zeros(12, np.float32)
    GPUInterpreter(mod).launch("f_kernel", (2, 1, 1), (4, 1, 1), a)
    np.testing.assert_array_equal(a[:8], [3, 2, 1, 0, 13, 12, 11, 10])
    assert (a[8:] == 0).all()


def test_thread_order_must_be_known() -> None:
    with pytest.raises(ValueError, match="thread_order must be 'forward' or 'reverse'"):
        GPUInterpreter(lower(PER_BLOCK), "sideways").call("f", np.zeros((3, 4), np.float32))
