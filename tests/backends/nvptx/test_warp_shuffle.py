"""TVM's warp shuffles and active mask in kernels: `shfl.sync` with CUDA's clamp operand per
mode and width, every scalar width carried, and the refusals (vector, warp size, width)."""

from __future__ import annotations

import re

import pytest
from gpu_support import require_ptxas
from tirc.driver import compile_ptx
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError

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
