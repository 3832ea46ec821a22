"""Fixtures for frontend tests: error collection and TVMScript texts in TVM documentation style."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError

# TVM's "Blitz Course to TensorIR": a module written with `tvm.script.ir_module`.
BLITZ = '''
import tvm
from tvm.script import tir as T


@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        # We exchange data between function by handles, which are similar to pointer.
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        # Create buffer from handles.
        A = T.match_buffer(a, (8,), dtype="float32")
        B = T.match_buffer(b, (8,), dtype="float32")
        for i in range(8):
            # A block is an abstraction for computation.
            with T.block("B"):
                # Define a spatial block iterator and bind it to value i.
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + 1.0
'''

# The "TensorIR: Tensor Program Abstraction" chapter (mm_relu), with explicit axes.
MM_RELU = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class MyModule:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"),
                B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                vk = T.axis.reduce(128, k)
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
'''

# What TVM prints after LegalizeOps: private prim_funcs with int64 shapes, `cls = Module`.
LEGALIZED = '''
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def linear0(x: T.handle, w0: T.Buffer((T.int64(784), T.int64(128)), "float32"),
                b0: T.Buffer((T.int64(128),), "float32"), var_T_add: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        X = T.match_buffer(x, (n, T.int64(784)))
        T_add = T.match_buffer(var_T_add, (n, T.int64(128)))
        # with T.block("root"):
        matmul = T.alloc_buffer((n, T.int64(128)))
        for i0, i1, k in T.grid(n, T.int64(128), T.int64(784)):
            with T.block("matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(X[v_i0, v_k], w0[v_k, v_i1])
                T.writes(matmul[v_i0, v_i1])
                with T.init():
                    matmul[v_i0, v_i1] = T.float32(0)
                matmul[v_i0, v_i1] = matmul[v_i0, v_i1] + X[v_i0, v_k] * w0[v_k, v_i1]
        for ax0, ax1 in T.grid(n, T.int64(128)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(matmul[v_ax0, v_ax1], b0[v_ax1])
                T.writes(T_add[v_ax0, v_ax1])
                T_add[v_ax0, v_ax1] = matmul[v_ax0, v_ax1] + b0[v_ax1]

    @R.function
    def main(x: R.Tensor(("n", 784), dtype="float32"), w0: R.Tensor((784, 128), dtype="float32"),
             b0: R.Tensor((128,), dtype="float32")) -> R.Tensor(("n", 128), dtype="float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.linear0, (x, w0, b0),
                            out_sinfo=R.Tensor((n, 128), dtype="float32"))
            lv1: R.Tensor((n, 128), dtype="float32") = R.nn.relu(lv)
            gv: R.Tensor((n, 128), dtype="float32") = lv1
            R.output(gv)
        return gv
'''

# Relax "Quick Start": an MLP exported from nn.Module, as TVM prints it.
RELAX_MLP = '''
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def forward(x: R.Tensor((1, 784), dtype="float32"),
                fc1_weight: R.Tensor((256, 784), dtype="float32"),
                fc1_bias: R.Tensor((256,), dtype="float32"),
                fc2_weight: R.Tensor((10, 256), dtype="float32"),
                fc2_bias: R.Tensor((10,), dtype="float32")) -> R.Tensor((1, 10), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            permute_dims: R.Tensor((784, 256), dtype="float32") = R.permute_dims(
                fc1_weight, axes=None)
            matmul: R.Tensor((1, 256), dtype="float32") = R.matmul(
                x, permute_dims, out_dtype="void")
            add: R.Tensor((1, 256), dtype="float32") = R.add(matmul, fc1_bias)
            relu: R.Tensor((1, 256), dtype="float32") = R.nn.relu(add)
            permute_dims1: R.Tensor((256, 10), dtype="float32") = R.permute_dims(
                fc2_weight, axes=None)
            matmul1: R.Tensor((1, 10), dtype="float32") = R.matmul(
                relu, permute_dims1, out_dtype="void")
            add1: R.Tensor((1, 10), dtype="float32") = R.add(matmul1, fc2_bias)
            gv: R.Tensor((1, 10), dtype="float32") = add1
            R.output(gv)
        return gv
'''

# A GPU matmul after scheduling (thread bindings, shared and local storage), TVM style.
GPU_SCHEDULED = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"),
             C: T.Buffer((1024, 1024), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
        # with T.block("root"):
        C_local = T.alloc_buffer((1024, 1024), scope="local")
        A_shared = T.alloc_buffer((1024, 1024), scope="shared")
        for i_0 in T.thread_binding(16, thread="blockIdx.y"):
            for j_0 in T.thread_binding(16, thread="blockIdx.x"):
                for i_1 in T.thread_binding(8, thread="threadIdx.y"):
                    for j_1 in T.thread_binding(8, thread="threadIdx.x"):
                        for k_0 in range(256):
                            for ax0, ax1 in T.grid(8, 4):
                                with T.block("A_shared"):
                                    v0 = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + ax0)
                                    v1 = T.axis.spatial(1024, k_0 * 4 + ax1)
                                    T.reads(A[v0, v1])
                                    T.writes(A_shared[v0, v1])
                                    A_shared[v0, v1] = A[v0, v1]
                            for k_1, i_2, j_2 in T.grid(4, 8, 8):
                                with T.block("C"):
                                    vi = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + i_2)
                                    vj = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + j_2)
                                    vk = T.axis.reduce(1024, k_0 * 4 + k_1)
                                    T.reads(A_shared[vi, vk], B[vk, vj])
                                    T.writes(C_local[vi, vj])
                                    with T.init():
                                        C_local[vi, vj] = T.float32(0.0)
                                    C_local[vi, vj] = (C_local[vi, vj]
                                                       + A_shared[vi, vk] * B[vk, vj])
                        for ax0, ax1 in T.grid(8, 8):
                            with T.block("C_local"):
                                v0 = T.axis.spatial(1024, i_0 * 64 + i_1 * 8 + ax0)
                                v1 = T.axis.spatial(1024, j_0 * 64 + j_1 * 8 + ax1)
                                T.reads(C_local[v0, v1])
                                T.writes(C[v0, v1])
                                C[v0, v1] = C_local[v0, v1]
'''

# A lowered kernel in the older style: env threads launched explicitly.
LOWERED = '''
from tvm.script import tir as T


@T.prim_func
def scale(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    T.func_attr({"global_symbol": "scale", "target": "cuda"})
    blockIdx_x = T.launch_thread("blockIdx.x", 4)
    threadIdx_x = T.env_thread("threadIdx.x")
    T.launch_thread(threadIdx_x, 32)
    B[blockIdx_x * 32 + threadIdx_x] = A[blockIdx_x * 32 + threadIdx_x] * T.float32(2)
'''

DOC_MODULES = {"blitz": BLITZ, "mm_relu": MM_RELU, "legalized": LEGALIZED,
               "relax_mlp": RELAX_MLP, "gpu_scheduled": GPU_SCHEDULED, "lowered": LOWERED}


@pytest.fixture
def diagnostics() -> Callable[[str], list[tuple[int, int, str]]]:
    """Parse text that must fail; return (line, col, message) of every error."""

    def run(text: str) -> list[tuple[int, int, str]]:
        with pytest.raises(CompileError) as info:
            parse(text, "bad.tir")
        out = []
        for d in info.value.diagnostics:
            assert d.span is not None, d
            if d.severity == "error":
                out.append((d.span.line, d.span.col, d.message))
        return out

    return run


@pytest.fixture(params=sorted(DOC_MODULES))
def doc_text(request: pytest.FixtureRequest) -> str:
    """Each TVM-documentation-style module above, one test per text."""
    return DOC_MODULES[request.param]


@pytest.fixture
def doc_modules() -> dict[str, str]:
    return dict(DOC_MODULES)
