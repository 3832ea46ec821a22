"""TVM's warp shuffles and active mask in kernels: `shfl.sync` with CUDA's clamp operand per
mode and width, every scalar width carried, and the refusals (vector, warp size, width)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gpu_support import lower, require_ptxas
from tirc.driver import compile_ptx
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter.gpu import check_races

KERNEL = """@T.prim_func
def shuffles(A: T.Buffer((64,), "{dtype}"), B: T.Buffer((4, 64), "{dtype}")):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        with T.block("B"):
            vx = T.axis.spatial(64, tx)
            mask = T.tvm_warp_activemask()
            B[0, vx] = T.tvm_warp_shuffle(mask, A[vx], vx % 5, 32, 32)
            B[1, vx] = T.tvm_warp_shuffle_up(mask, A[vx], 2, 8, 32)
            B[2, vx] = T.tvm_warp_shuffle_down(mask, A[vx], 16, 32, 32)
            B[3, vx] = T.tvm_warp_shuffle_xor(mask, A[vx], 4, 16, 32)
"""


def shfl_lines(ptx: str) -> list[tuple[str, str, str]]:
    """(mode, b, c) of each shfl.sync instruction, in order."""
    return re.findall(r"shfl\.sync\.(\w+)\.b32\s+%r\d+, %r\d+, (%r\d+|\d+), (\d+), %r\d+;", ptx)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32", "float16", "int8", "bool"])
def test_a_32_bit_or_narrower_value_is_one_shfl_per_call(dtype: str) -> None:
    result = compile_ptx(parse(KERNEL.format(dtype=dtype)), "cuda -arch=sm_90")
    assert "activemask.b32" in result.ptx
    # the clamp operand: ((32 - width) << 8) | 0x1f, without the low bits for `up`
    got = [(mode, c) for mode, _, c in shfl_lines(result.ptx)]
    assert got == [("idx", "31"), ("up", str(24 << 8)), ("down", "31"),
                   ("bfly", str((16 << 8) | 31))], result.ptx
    require_ptxas()
    assert result.usage()


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_a_64_bit_value_is_shuffled_as_two_halves(dtype: str) -> None:
    result = compile_ptx(parse(KERNEL.format(dtype=dtype)), "cuda -arch=sm_80")
    modes = [mode for mode, _, _ in shfl_lines(result.ptx)]
    assert modes == ["idx", "idx", "up", "up", "down", "down", "bfly", "bfly"], result.ptx
    require_ptxas()
    assert result.usage()


def test_a_width_that_is_not_a_power_of_two_is_refused_at_the_call() -> None:
    src = KERNEL.format(dtype="float32").replace("(mask, A[vx], 2, 8, 32)",
                                                 "(mask, A[vx], 2, 12, 32)")
    with pytest.raises(CompileError) as err:
        compile_ptx(parse(src, "w.tir"), "cuda -arch=sm_90")
    assert err.value.diagnostics[0].render().startswith(
        "w.tir:8:24: error: codegen: T.tvm_warp_shuffle_up: width 12 is not a power of two "
        "from 1 to 32")


@pytest.mark.parametrize("old,new,message", [
    ("(mask, A[vx], 16, 32, 32)", "(mask, A[vx], 16, 32, 64)",
     "T.tvm_warp_shuffle_down on an NVIDIA GPU needs the warp size 32 as its last operand"),
    ("(mask, A[vx], 16, 32, 32)", "(mask, A[vx], 16, 32)",
     "T.tvm_warp_shuffle_down takes (mask, value, lane, width, warp_size), not 4 operand(s)"),
])
def test_a_warp_size_other_than_32_or_missing_operands_are_refused(old: str, new: str,
                                                                   message: str) -> None:
    src = KERNEL.format(dtype="float32").replace(old, new)
    with pytest.raises(CompileError, match=re.escape(message)):
        compile_ptx(parse(src), "cuda -arch=sm_90")


# TVM's LowerThreadAllreduce output for a row sum over 32 threads (its test's expected form):
# a warp reduction by shuffle_down, then lane 0's total broadcast by shuffle.
TVM_LOWERED = """@T.prim_func
def main(A: T.Buffer((128, 32), "float32"), B: T.Buffer(128, "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    A_flat = T.Buffer(4096, data=A.data)
    for i in range(128):
        threadIdx_x = T.launch_thread("threadIdx.x", 32)
        reduce_data = T.allocate([1], "float32", "local")
        reduce = T.Buffer(1, data=reduce_data, scope="local")
        with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope",
                    T.reinterpret("handle", T.uint64(0))):
            mask_data = T.allocate([1], "uint32", "local")
            mask = T.Buffer(1, "uint32", data=mask_data, scope="local")
            t0_data = T.allocate([1], "float32", "local")
            t0 = T.Buffer(1, data=t0_data, scope="local")
            reduce[0] = A_flat[i * 32 + threadIdx_x]
            mask[0] = T.tvm_warp_activemask()
            t0[0] = T.tvm_warp_shuffle_down(mask[0], reduce[0], 16, 32, 32)
            reduce[0] = reduce[0] + t0[0]
            t0[0] = T.tvm_warp_shuffle_down(mask[0], reduce[0], 8, 32, 32)
            reduce[0] = reduce[0] + t0[0]
            t0[0] = T.tvm_warp_shuffle_down(mask[0], reduce[0], 4, 32, 32)
            reduce[0] = reduce[0] + t0[0]
            t0[0] = T.tvm_warp_shuffle_down(mask[0], reduce[0], 2, 32, 32)
            reduce[0] = reduce[0] + t0[0]
            t0[0] = T.tvm_warp_shuffle_down(mask[0], reduce[0], 1, 32, 32)
            reduce[0] = reduce[0] + t0[0]
            reduce[0] = T.tvm_warp_shuffle(mask[0], reduce[0], 0, 32, 32)
        if threadIdx_x == 0:
            B[i] = reduce[0]
"""


def test_tvms_lowered_warp_reduction_runs_and_assembles() -> None:
    """The form TVM prints after lowering a cross-thread reduction: the GPU interpreter (both
    thread orders) gives numpy's row sums, and the kernel assembles."""
    a = np.random.default_rng(0).standard_normal((128, 32)).astype(np.float32)
    b = np.zeros(128, np.float32)
    check_races(lower(parse(TVM_LOWERED)), "main", [a, b])
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-5)
    result = compile_ptx(parse(TVM_LOWERED), "cuda -arch=sm_90")
    assert [mode for mode, _, _ in shfl_lines(result.ptx)] == ["down"] * 5 + ["idx"]
    require_ptxas()
    assert result.usage()
