"""gpu-storage-scope: shared/local buffers go inside the kernels that use them."""

from __future__ import annotations

import pytest
from gpu_support import lower
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.gpu.threads import walk_stmts
from tirc.ir.printer import print_function
from tirc.ir.stmt import Allocate

TWO_KERNELS = """
@T.prim_func
def f(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4, 32), "float32")):
    S = T.alloc_buffer((32,), "float32", scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            S[tx] = A[bx, tx]
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[bx, tx] = S[31 - tx]
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            S[tx] = B[bx, tx]
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            B[bx, tx] = S[tx] + T.float32(1)
"""


def test_root_shared_buffer_moves_inside_each_kernel() -> None:
    mod = lower(TWO_KERNELS, skip=["gpu-storage-sync", "gpu-split-host-device", "verify-gpu"])
    lines = [x.strip() for x in print_function(mod["f"])]
    decl = 'S = T.decl_buffer((32,), "float32", scope="shared")'
    at = [k for k, x in enumerate(lines) if x == decl]
    assert len(at) == 2 and lines[1].startswith("def f(")
    # Each opens just inside its blockIdx loop, and nothing is left at the top.
    assert all(lines[k - 1] == 'for bx in T.thread_binding(4, thread="blockIdx.x"):' for k in at)
    allocs = [s.buffer for s in walk_stmts(mod["f"].body) if isinstance(s, Allocate)]
    assert len(allocs) == 2 and allocs[0] is not allocs[1]


def test_global_allocation_inside_a_kernel_is_an_error() -> None:
    with pytest.raises(CompileError) as info:
        lower("""
@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        with T.block("b"):
            v = T.axis.spatial(32, tx)
            tmp = T.alloc_buffer((4,), "float32")
            tmp[0] = A[v]
            A[v] = tmp[0] + T.float32(1)
""")
    assert str(info.value.diagnostics[0].message) == (
        "gpu-storage-scope: buffer 'tmp' is allocated in global memory inside a kernel; give it "
        "scope=\"shared\" or \"local\", or allocate it outside the thread-bound loops")


def test_symbolic_shared_size_is_an_error() -> None:
    with pytest.raises(CompileError) as info:
        lower(parse("""
@T.prim_func
def f(a: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    S = T.alloc_buffer((n,), "float32", scope="shared")
    for tx in T.thread_binding(n, thread="threadIdx.x"):
        S[tx] = A[tx]
        A[tx] = S[tx]
"""), skip=["gpu-split-host-device"])
    assert "shared buffer 'S' has a symbolic size; device buffers need a constant size" in \
        str(info.value)


# Kernel 1 fills shared S; kernel 2 reads it (READ), which shared memory does not allow.
CROSS_KERNEL = """
@T.prim_func
def f(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4, 32), "float32")):
    S = T.alloc_buffer((32,), "float32", scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            S[tx] = A[bx, tx]
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            B[bx, tx] = READ
"""


def test_shared_buffer_read_in_a_kernel_that_never_writes_it_is_an_error() -> None:
    """Shared memory lasts one launch: a copy made in one kernel is gone in the next (the
    schedule rules once produced this; see tests/e2e/test_difftest_regressions.py)."""
    with pytest.raises(CompileError) as info:
        lower(parse(CROSS_KERNEL.replace("READ", "S[tx] + T.float32(1)"), "two.tir"))
    assert str(info.value).startswith(
        "two.tir:10:25: error: gpu-storage-scope: shared buffer 'S' is read in a kernel that "
        "never writes it; shared memory lasts one kernel launch")


@pytest.mark.parametrize("read", ["T.exp(S[tx])", "T.if_then_else(tx < 16, S[tx], T.float32(0))"])
def test_a_read_as_a_call_argument_is_no_write(read: str) -> None:
    """Passing an element's value to a call reads it; only the pointer (bare or address_of)
    lets an intrinsic write."""
    with pytest.raises(CompileError, match="shared buffer 'S' is read in a kernel that never"):
        lower(parse(CROSS_KERNEL.replace("READ", read)))
