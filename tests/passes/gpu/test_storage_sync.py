"""gpu-storage-sync: the barriers shared memory needs are inserted where missing."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import GPU_SAMPLES_DIR, REFS, lower
from tirc.frontend import parse
from tirc.ir.interpreter.gpu import InterpreterError, check_races
from tirc.ir.printer import print_function

REVERSE = """
@T.prim_func
def reverse(A: T.Buffer((2, 64), "float32"), B: T.Buffer((2, 64), "float32")):
    S = T.alloc_buffer((64,), "float32", scope="shared")
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            S[tx] = A[bx, tx]
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            B[bx, tx] = S[63 - tx]
"""

PRIVATE = """
@T.prim_func
def private(A: T.Buffer((2, 64), "float32"), B: T.Buffer((2, 64), "float32")):
    S = T.alloc_buffer((64,), "float32", scope="shared")
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            S[tx] = A[bx, tx]
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            B[bx, tx] = S[tx] * T.float32(2)
"""


def _kernel_lines(mod, name: str) -> list[str]:
    return [x.strip() for x in print_function(mod[name + "_kernel"])]


def test_barrier_between_phases_that_exchange_data() -> None:
    lines = _kernel_lines(lower(REVERSE), "reverse")
    sync = lines.index('T.tvm_storage_sync("shared")')
    assert lines[sync - 1] == "S[tx] = A[bx * 64 + tx]"
    assert lines[sync + 2] == "B[bx * 64 + tx] = S[63 - tx]"
    a, b = np.arange(128, dtype=np.float32).reshape(2, 64), np.zeros((2, 64), np.float32)
    check_races(lower(REVERSE), "reverse", [a, b])
    np.testing.assert_array_equal(b, a[:, ::-1])


def test_without_the_pass_the_race_is_caught() -> None:
    a, b = np.arange(128, dtype=np.float32).reshape(2, 64), np.zeros((2, 64), np.float32)
    with pytest.raises(InterpreterError, match="differs between forward and reverse thread "
                       "order"):
        check_races(lower(REVERSE, skip=["gpu-storage-sync"]), "reverse", [a, b])


def test_thread_private_elements_need_no_barrier() -> None:
    lines = _kernel_lines(lower(PRIVATE), "private")
    assert 'T.tvm_storage_sync("shared")' not in lines


@pytest.mark.parametrize("name", ["row_sum_shared", "matmul_tiled"])
def test_sample_without_its_barriers_gets_them_back(name: str) -> None:
    text = (GPU_SAMPLES_DIR / f"{name}.tir").read_text()
    stripped = "\n".join(x for x in text.splitlines() if "tvm_storage_sync" not in x)
    sample = REFS.gpu_sample(name)
    inputs = sample.inputs(sample.interp_sizes)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    check_races(lower(parse(stripped)), sample.func, args)
    assert sample.matches(args, want)
    with pytest.raises(InterpreterError):
        check_races(lower(parse(stripped), skip=["gpu-storage-sync"]), sample.func,
                    sample.arguments(inputs, want))


def test_loop_carried_reuse_of_tiles_gets_a_barrier() -> None:
    text = (GPU_SAMPLES_DIR / "matmul_tiled.tir").read_text()
    stripped = "\n".join(x for x in text.splitlines() if "tvm_storage_sync" not in x)
    lines = _kernel_lines(lower(parse(stripped), opt_level=0), "matmul_tiled")
    head = lines.index("for ko in range((k + T.int64(15)) // T.int64(16)):")
    assert lines[head + 1] == 'T.tvm_storage_sync("shared")'
    assert lines.count('T.tvm_storage_sync("shared")') == 2


# MetaSchedule's kernel form: one threadIdx loop around everything, the tiles fetched by a
# loop bound to the same axis inside it (a cooperative fetch), a virtual thread around both.
COOPERATIVE = """
@T.prim_func
def mm(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
       C: T.Buffer((8, 8), "float32")):
    C_local = T.alloc_buffer((8, 8), scope="local")
    A_shared = T.alloc_buffer((8, 8), scope="shared")
    B_shared = T.alloc_buffer((8, 8), scope="shared")
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for vt in T.thread_binding(2, thread="vthread.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                for j in range(2):
                    with T.block("init"):
                        vi = T.axis.spatial(8, vt * 4 + tx // 2)
                        vj = T.axis.spatial(8, bx * 4 + tx % 2 * 2 + j)
                        C_local[vi, vj] = T.float32(0)
                for k0 in range(2):
                    for f0 in range(4):
                        for f1 in T.thread_binding(8, thread="threadIdx.x"):
                            with T.block("A_shared"):
                                v0 = T.axis.spatial(8, (f0 * 8 + f1) // 4)
                                v1 = T.axis.spatial(8, k0 * 4 + (f0 * 8 + f1) % 4)
                                A_shared[v0, v1] = A[v0, v1]
                    for f0 in range(2):
                        for f1 in T.thread_binding(8, thread="threadIdx.x"):
                            with T.block("B_shared"):
                                v0 = T.axis.spatial(8, k0 * 4 + (f0 * 8 + f1) // 4)
                                v1 = T.axis.spatial(8, bx * 4 + (f0 * 8 + f1) % 4)
                                B_shared[v0, v1] = B[v0, v1]
                    for k1, j in T.grid(4, 2):
                        with T.block("update"):
                            vi = T.axis.spatial(8, vt * 4 + tx // 2)
                            vj = T.axis.spatial(8, bx * 4 + tx % 2 * 2 + j)
                            vk = T.axis.reduce(8, k0 * 4 + k1)
                            C_local[vi, vj] = C_local[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]
                for j in range(2):
                    with T.block("store"):
                        vi = T.axis.spatial(8, vt * 4 + tx // 2)
                        vj = T.axis.spatial(8, bx * 4 + tx % 2 * 2 + j)
                        C[vi, vj] = C_local[vi, vj]
"""


def test_cooperative_fetch_gets_barriers_inside_the_thread_loop() -> None:
    """As TVM's ThreadSync places them: before each tile's fetch (the previous k step still
    reads it) and before the compute reading the tiles; none inside the fetch loops."""
    mod = lower(COOPERATIVE, opt_level=0)
    lines = _kernel_lines(mod, "mm")
    head = lines.index("for k0 in range(2):")
    assert lines[head + 1] == 'T.tvm_storage_sync("shared")'
    assert lines[head + 2] == "for f0 in range(4):"
    compute = lines.index("for k1, j in T.grid(4, 2):")
    assert lines[compute - 1] == 'T.tvm_storage_sync("shared")'
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    c = np.zeros((8, 8), np.float32)
    check_races(mod, "mm", [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


ROTATE = """
@T.prim_func
def rotate(A: T.Buffer((3, 4), "float32"), B: T.Buffer((4,), "float32")):
    for tx in T.thread_binding(4, thread="threadIdx.x"):
        with T.sblock("b"):
            S = T.sblock_alloc_buffer((4,), scope="shared")
            acc = T.sblock_alloc_buffer((1,), scope="local")
            acc[0] = T.float32(0)
            for it in range(3):
                S[tx] = A[it, tx]
                T.tvm_storage_sync("shared")
                for j in range(4):
                    acc[0] = acc[0] + S[(tx + j) % 4] * T.Cast("float32", j + 1)
            B[tx] = acc[0]
"""


def test_thread_loop_with_its_own_barriers_gets_the_missing_one() -> None:
    """A hand-written kernel (TVM's decode attention) places the barrier after filling a
    tile but leaves the one before the next iteration overwrites it to the compiler, as TVM's
    ThreadSync inserts it: the thread loop is walked although it has barriers."""
    from tirc.ir.interpreter.gpu import GPUInterpreter

    mod = lower(ROTATE)
    text = "\n".join(print_function(mod["rotate_kernel"]))
    assert text.count("T.tvm_storage_sync") == 2
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = np.zeros(4, np.float32)
    GPUInterpreter(mod).call("rotate", a, got)
    want = [sum(a[it, (tx + j) % 4] * (j + 1) for it in range(3) for j in range(4))
            for tx in range(4)]
    np.testing.assert_array_equal(got, want)
