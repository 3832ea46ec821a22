"""gpu-split-host-device: launch regions become kernels; the host keeps the launches."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower
from tirc.frontend import parse
from tirc.ir.analysis.regions import free_vars
from tirc.ir.attrs import GPU_HOST, KERNEL
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Call
from tirc.ir.gpu.threads import walk_stmts
from tirc.ir.interpreter.gpu import GPUInterpreter
from tirc.ir.intrinsics import LAUNCH_KERNEL
from tirc.ir.printer import print_function, print_module
from tirc.ir.structural import first_difference, structural_equal

SCALE = """
@T.prim_func
def scale(a: T.handle, b: T.handle, alpha: T.float32):
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for bx in T.thread_binding((n + 63) // 64, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            if bx * 64 + T.Cast("int64", tx) < n:
                B[bx * 64 + T.Cast("int64", tx)] = A[bx * 64 + T.Cast("int64", tx)] * alpha
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        if T.Cast("int64", tx) < n:
            A[tx] = T.float32(0)
"""


def test_each_region_becomes_a_kernel_with_its_free_variables() -> None:
    mod = lower(SCALE, opt_level=0)
    assert list(mod.functions) == ["scale", "scale_kernel0", "scale_kernel1"]
    host, k0 = mod["scale"], mod["scale_kernel0"]
    assert host.attrs[GPU_HOST] is True and k0.attrs[KERNEL] is True
    assert [p.name for p in k0.params] == ["A", "B", "alpha", "n"]
    assert k0.attrs["tir.kernel_launch_params"] == ["blockIdx.x", "threadIdx.x"]
    assert [p.name for p in mod["scale_kernel1"].params] == ["A", "n"]
    launches = [s.value for s in walk_stmts(host.body)
                if isinstance(getattr(s, "value", None), Call) and s.value.op == LAUNCH_KERNEL]
    assert len(launches) == 2
    text = "\n".join(print_function(host))
    assert ('T.call_intrin("int32", "tirc.launch_kernel", "scale_kernel0", '
            '(n + T.int64(63)) // T.int64(64), 1, 1, 64, 1, 1, A.data, B.data, alpha, n)') in text
    assert '"scale_kernel1", 1, 1, 1, 32, 1, 1, A.data, n)' in text


def test_split_module_runs_as_the_source_does() -> None:
    a = np.arange(100, dtype=np.float32)
    b = np.zeros(100, np.float32)
    GPUInterpreter(lower(SCALE)).call("scale", a, b, np.float32(3))
    np.testing.assert_array_equal(b, 3 * np.arange(100, dtype=np.float32))
    assert (a[:32] == 0).all() and (a[32:] == np.arange(32, 100)).all()


def test_host_store_is_an_error() -> None:
    with pytest.raises(CompileError) as info:
        lower("""
@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    A[0] = T.float32(1)
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        A[tx] = A[tx] + T.float32(1)
""")
    d = info.value.diagnostics[0]
    assert d.message == (
        "gpu-split-host-device: f: a store to 'A' is outside every thread-bound loop; the host "
        "part of a GPU function can only launch kernels (move it inside a loop bound to "
        "blockIdx/threadIdx)")
    assert d.span is not None and d.span.line == 4


def test_function_without_bindings_is_an_error() -> None:
    with pytest.raises(CompileError) as info:
        lower("""
@T.prim_func
def plain(A: T.Buffer((32,), "float32")):
    for i in range(32):
        A[i] = T.float32(1)
""", skip=["gpu-default-schedule"])  # which would give it a kernel of one thread
    assert info.value.diagnostics[0].message == (
        "gpu-split-host-device: function 'plain' has no thread-bound loops, so it cannot run on "
        "the GPU; bind its loops to blockIdx/threadIdx (T.thread_binding, or sch.bind in a "
        "schedule)")


def test_host_loop_around_a_kernel_stays_on_the_host() -> None:
    """As TVM's SplitHostDevice: the serial loop runs on the host and launches the kernel in
    each iteration, its variable an argument (tests/runtime/test_cuda_host_loops.py runs it);
    a store beside the launch in such a loop is still host code that cannot run."""
    host = lower("""
@T.prim_func
def f(A: T.Buffer((4, 32), "float32")):
    for i in range(4):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[i, tx] = T.float32(1)
""")["f"]
    text = "\n".join(print_function(host))
    assert "for i in range(4):" in text
    assert '"tirc.launch_kernel", "f_kernel", 1, 1, 1, 32, 1, 1, A.data, i)' in text
    with pytest.raises(CompileError, match="a store to 'A' is outside every thread-bound loop"):
        lower("""
@T.prim_func
def f(A: T.Buffer((4, 32), "float32")):
    for i in range(4):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[i, tx] = T.float32(1)
        A[i, 0] = T.float32(2)
""")


def test_split_module_prints_and_parses_back() -> None:
    mod = lower(SCALE)
    back = parse(mod.script())
    assert structural_equal(back, mod)


FIXED = """
@T.prim_func
def f(A: T.Buffer((32, 4), "float32"), B: T.Buffer((32, 4), "float32")):
    for bx in T.thread_binding(32, thread="blockIdx.x"):
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            B[bx, tx] = A[bx, tx] * T.float32(2)
"""


@pytest.mark.parametrize("opt_level", [0, 2])
def test_split_module_with_buffer_parameters_parses_back(opt_level: int) -> None:
    mod = lower(FIXED, opt_level=opt_level)
    text = print_module(mod)
    assert '"f_kernel", 32, 1, 1, 4, 1, 1, A.data, B.data))' in text
    back = parse(text)
    assert structural_equal(back, mod), first_difference(mod, back)
    assert print_module(back) == text
    a = np.arange(128, dtype=np.float32).reshape(32, 4)
    b = np.zeros_like(a)
    GPUInterpreter(back).call("f", a, b)
    np.testing.assert_array_equal(b, 2 * a)


# difftest graph seed 401263, trimmed: the matmul's kernel reads its 1x1 input from the shared
# workspace at a constant offset and never uses `n`, but the workspace's shape does.
WORKSPACE_VIEW = """
@R.function
def main(p3: R.Tensor(("n", 1), "float32"), p4: R.Tensor(("n", 6), "float32"),
         p5: R.Tensor((1, 4), "float32")):
    n = T.int64()
    with R.dataflow():
        lv3 = R.min(p3, axis=(0,), keepdims=True)
        lv4 = R.split(p4, indices_or_sections=2, axis=1)
        lv5 = lv4[1]
        lv6 = R.matmul(lv3, p5)
        R.output(lv5, lv6)
    return (lv5, lv6)
"""


def test_a_kernel_gets_the_sizes_of_a_workspace_it_reads() -> None:
    mod = lower(WORKSPACE_VIEW)
    for name, func in mod.functions.items():
        if func.attrs.get(KERNEL):
            bound = set(func.params)
            shapes = {v for b in func.buffer_map.values() for d in b.shape for v in free_vars(d)}
            assert shapes <= bound, f"{name}: {sorted(v.name for v in shapes - bound)} unbound"
    rng = np.random.default_rng(0)
    p3, p4, p5 = (rng.standard_normal(s).astype("float32") for s in ((5, 1), (5, 6), (1, 4)))
    lv5, lv6 = np.empty((5, 3), "float32"), np.empty((1, 4), "float32")
    GPUInterpreter(mod).call("main", p3, p4, p5, lv5, lv6)  # lowered: outputs passed in
    np.testing.assert_array_equal(lv5, p4[:, 3:])
    np.testing.assert_allclose(lv6, p3.min(axis=0, keepdims=True) @ p5, rtol=1e-6)


# difftest graph seed 400020, trimmed: `c0`, bound by the match_cast, is a let of the host
# that the split substitutes away; the reduction's view of the workspace has it in its shape.
CAST_SIZE = """
@R.function
def main(p1: R.Tensor(("n", 3, 5), "float32")) -> R.Tensor((3, 1), "float32"):
    n = T.int64()
    c0 = T.int64()
    with R.dataflow():
        lv4 = R.minimum(p1, R.const(-1.5, "float32"))
        lv5 = R.match_cast(lv4, R.Tensor((n, 3, c0), "float32"))
        lv7 = R.collapse_sum_to(lv5, R.shape([3, 1]))
        R.output(lv7)
    return lv7
"""


def test_a_size_a_host_let_binds_reaches_the_kernel_as_its_value() -> None:
    mod = lower(CAST_SIZE)
    host = next(f for f in mod.functions.values() if f.attrs.get(GPU_HOST))
    assert "c0" not in print_function(host)
    p1 = np.random.default_rng(1).standard_normal((4, 3, 5)).astype("float32")
    lv7 = np.empty((3, 1), "float32")
    GPUInterpreter(mod).call("main", p1, lv7)
    np.testing.assert_allclose(lv7, np.minimum(p1, -1.5).sum(axis=(0, 2))[:, None], rtol=1e-5)
