"""NVPTX code generation: kernels, special registers, address spaces, barriers, math, PTX."""

from __future__ import annotations

import pytest
from gpu_support import require_ptxas, sample_module
from tirc.backends.nvptx.math import FLOAT_MATH
from tirc.driver import compile_ptx
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError


def test_kernel_is_a_ptx_entry_reading_special_registers() -> None:
    result = compile_ptx(sample_module("silu_bias_2d"), "cuda -arch=sm_90")
    assert "define ptx_kernel void @silu_bias_2d_kernel(" in result.ll
    for reg in ("tid.x", "tid.y", "ctaid.x", "ctaid.y"):
        assert f"@llvm.nvvm.read.ptx.sreg.{reg}()" in result.ll
        assert f"%{reg}" in result.ptx
    assert ".visible .entry silu_bias_2d_kernel(" in result.ptx
    assert "ld.global" in result.ptx and "st.global" in result.ptx


def test_shared_memory_and_barriers() -> None:
    result = compile_ptx(sample_module("row_sum_shared"), "cuda -arch=sm_80")
    assert "addrspace(3) global [128 x float]" in result.ll
    assert "@llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)" in result.ll
    assert ".shared .align 16 .b8" in result.ptx
    assert result.ptx.count("bar.sync") >= 2
    assert "st.shared" in result.ptx and "ld.shared" in result.ptx
    assert result.kernels[0].static_shared == 512 and result.kernels[0].dynamic_shared == 0


BIG_SHARED = """
@T.prim_func
def big(A: T.Buffer((25600,), "float32")):
    S = T.alloc_buffer((25600,), "float32", scope="shared")
    for tx in T.thread_binding(256, thread="threadIdx.x"):
        for i in range(100):
            S[i * 256 + tx] = A[i * 256 + tx]
        for i in range(100):
            A[i * 256 + tx] = S[i * 256 + tx] * T.float32(2)
    for tx in T.thread_binding(256, thread="threadIdx.x"):
        for i in range(100):
            S[25599 - i * 256 - tx] = A[i * 256 + tx]
        for i in range(100):
            A[i * 256 + tx] = S[25599 - i * 256 - tx] + T.float32(1)
"""


def test_more_than_48_kib_of_shared_memory_is_dynamic() -> None:
    result = compile_ptx(parse(BIG_SHARED), "cuda -arch=sm_90")
    assert ".extern .shared .align 16 .b8 tirc_dynamic_shared[]" in result.ptx
    (launch0, launch1) = result.metadata["functions"][0]["launches"]
    assert launch0["shared_bytes"] == 102400 and launch1["shared_bytes"] == 102400
    require_ptxas()
    assert len(result.usage()) == 2


def test_local_buffer_is_per_thread_storage() -> None:
    result = compile_ptx(parse("""
@T.prim_func
def f(A: T.Buffer((64, 4), "float32")):
    L = T.alloc_buffer((4,), "float32", scope="local")
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        for i in range(4):
            L[i] = A[tx, i] * T.float32(2)
        for i in range(4):
            A[tx, i] = L[3 - i]
"""), "cuda -arch=sm_80", opt_level=0)
    assert "alloca [4 x float]" in result.ll


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "bfloat16"])
def test_every_math_intrinsic_compiles(dtype: str) -> None:
    lines = []
    for op in sorted(FLOAT_MATH):
        args = {"pow": "A[tx], A[tx]", "fma": "A[tx], A[tx], A[tx]"}.get(op, "A[tx]")
        lines.append(f"        B[{len(lines)}, tx] = T.{op}({args})")
    body = "\n".join(lines)
    src = f"""
@T.prim_func
def m(A: T.Buffer((32,), "{dtype}"), B: T.Buffer(({len(lines)}, 32), "{dtype}")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
{body}
"""
    result = compile_ptx(parse(src), "cuda -arch=sm_80")
    assert "libdevice" not in result.ptx and "__nv_" not in result.ptx
    if dtype == "float32":
        for instr in ("ex2.approx", "lg2.approx", "sin.approx", "cos.approx", "sqrt.rn"):
            assert instr in result.ptx
    require_ptxas()
    result.usage()


def test_kernel_assert_traps() -> None:
    result = compile_ptx(parse("""
@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        assert A[tx] >= T.float32(0), "negative"
        A[tx] = T.sqrt(A[tx])
"""), "cuda -arch=sm_80")
    assert "trap;" in result.ptx


def test_graph_functions_are_lowered_by_the_gpu_pipeline() -> None:
    mod = parse("""
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    return x
""")
    (f,) = compile_ptx(mod, "cuda").metadata["functions"]
    assert [p["name"] for p in f["params"]] == ["x", "x_out"]  # the input, then the result
    (launch,) = f["launches"]  # the copy of the returned parameter
    assert launch["kernel"] == "main_kernel" and launch["block"] == [4, 1, 1]
    assert [(a["param"], a["index"]) for a in launch["args"]] == [("x", 0), ("x_out", 1)]


def test_unknown_arch_is_an_error() -> None:
    with pytest.raises(CompileError, match="unknown CUDA architecture 'sm_99'"):
        compile_ptx(sample_module("silu_bias_2d"), "cuda -arch=sm_99")


def test_default_arch_is_sm_80() -> None:
    result = compile_ptx(sample_module("silu_bias_2d"), "cuda")
    assert ".target sm_80" in result.ptx and result.metadata["arch"] == "sm_80"


BITS_KERNEL = """
@T.prim_func
def f(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"),
      X: T.Buffer((64,), "float32"), Y: T.Buffer((64,), "bool")):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        B[tx] = T.popcount(A[tx]) + T.clz(A[tx]) + T.q_multiply_shift(A[tx], 1 << 30, 31, 1)
        Y[tx] = T.isnan(X[tx]) or T.isinf(X[tx])
"""


def test_bit_counts_and_float_classes_of_the_intrinsic_table_run_in_kernels() -> None:
    result = compile_ptx(parse(BITS_KERNEL), "cuda -arch=sm_90")
    assert "popc.b32" in result.ptx and "clz.b32" in result.ptx
    require_ptxas()
    assert len(result.usage()) == 1


def test_libm_only_math_is_refused_in_kernels() -> None:
    src = BITS_KERNEL.replace("T.isinf(X[tx])", "T.log10(X[tx]) > 0.0")
    with pytest.raises(CompileError, match="unsupported intrinsic T.log10"):
        compile_ptx(parse(src), "cuda -arch=sm_90")


def test_an_extern_call_inside_a_kernel_is_an_error_at_the_call() -> None:
    src = """@T.prim_func
def f(A: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, thread="threadIdx.x"):
        T.evaluate(T.call_extern("call_impl", A.data, dtype=""))
"""
    with pytest.raises(CompileError) as err:
        compile_ptx(parse(src, "ext.tir"), "cuda -arch=sm_90")
    assert err.value.diagnostics[0].render().startswith(
        "ext.tir:4:20: error: codegen: T.call_extern of 'call_impl' inside a GPU kernel: tirc "
        "links no device code of other libraries")
