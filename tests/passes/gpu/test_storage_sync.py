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
