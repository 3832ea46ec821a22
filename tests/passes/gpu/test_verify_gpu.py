"""verify-gpu: every rule of the table, with its message."""

from __future__ import annotations

import pytest
from gpu_support import lower
from tirc.ir.diagnostics import CompileError


def _message(src: str, arch: str = "sm_80") -> str:
    with pytest.raises(CompileError) as info:
        lower(src, arch=arch)
    return info.value.diagnostics[0].message


def _kernel(block: str, body: str, shared: str = "") -> str:
    return f"""
@T.prim_func
def f(A: T.Buffer((64, 64), "float32")):
{shared}    for bx in T.thread_binding(4, thread="blockIdx.x"):
{block}{body}
"""


def test_parallel_loop_in_a_kernel() -> None:
    msg = _message("""
@T.prim_func
def f(A: T.Buffer((64, 64), "float32")):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        for j in T.parallel(64):
            A[tx, j] = T.float32(0)
""")
    assert msg == ("verify-gpu: f_kernel: loop 'j' is parallel inside a kernel; bind it to a "
                   "thread axis (blockIdx/threadIdx) instead")


def test_too_many_threads_per_block() -> None:
    msg = _message("""
@T.prim_func
def f(A: T.Buffer((64, 64), "float32")):
    for ty in T.thread_binding(64, thread="threadIdx.y"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            A[ty, tx] = T.float32(0)
""")
    assert msg == "verify-gpu: f_kernel: 4096 threads per block exceed the limit of 1024"


def test_z_axis_limit() -> None:
    msg = _message("""
@T.prim_func
def f(A: T.Buffer((128,), "float32")):
    for tz in T.thread_binding(128, thread="threadIdx.z"):
        A[tz] = T.float32(0)
""")
    assert msg == "verify-gpu: f_kernel: threadIdx.z extent 128 exceeds 64"


def test_symbolic_block_extent() -> None:
    msg = _message("""
@T.prim_func
def f(a: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    for tx in T.thread_binding(n, thread="threadIdx.x"):
        A[tx] = T.float32(0)
""")
    assert msg == ("verify-gpu: f_kernel: threadIdx.x extent n is not a constant; the threads "
                   "of a block are fixed at compile time")


SHARED_100K = """
@T.prim_func
def f(A: T.Buffer((25600,), "float32")):
    S = T.alloc_buffer((25600,), "float32", scope="shared")
    for tx in T.thread_binding(256, thread="threadIdx.x"):
        for i in range(100):
            S[i * 256 + tx] = A[i * 256 + tx]
        for i in range(100):
            A[i * 256 + tx] = S[i * 256 + tx] + T.float32(1)
"""


def test_shared_memory_limit_depends_on_the_arch() -> None:
    assert _message(SHARED_100K, arch="sm_86") == (
        "verify-gpu: f_kernel: 100 KiB of shared memory exceed the 99 KiB a block may use on "
        "sm_86")
    lower(SHARED_100K, arch="sm_90")


def test_barrier_under_a_thread_dependent_condition() -> None:
    msg = _message("""
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            if tx < 32:
                A[tx] = T.float32(1)
                T.tvm_storage_sync("shared")
""")
    assert msg == ("verify-gpu: f_kernel: barrier under a condition on threadIdx.x: not every "
                   "thread of the block reaches it")
