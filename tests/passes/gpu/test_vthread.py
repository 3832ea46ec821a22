"""inject-vthread on the GPU: virtual threads run one after another in each thread, cut at
barriers."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower, require_ptxas
from tirc.driver import compile_ptx
from tirc.frontend import parse
from tirc.ir.arith import construct
from tirc.ir.diagnostics import CompileError
from tirc.ir.gpu.threads import const_value, is_launch, is_vthread_loop, walk_stmts
from tirc.ir.interpreter.gpu import GPUInterpreter, InterpreterError, check_races
from tirc.ir.module import IRModule
from tirc.ir.printer import print_function, print_module
from tirc.ir.stmt import For, ForKind
from tirc.ir.structural import first_difference, structural_equal
from tirc.ir.target import parse_target
from tirc.passes.pipeline import default_pipeline


def _gpu_steps(opt_level: int) -> list[str]:
    """The default pipeline of a cuda target."""
    return default_pipeline(parse_target("cuda"), opt_level)

# Each of 2 x 64 (virtual x real) threads keeps a value in a local register across a barrier
# and reads, after it, what the mirrored thread wrote to shared memory: right only if every
# virtual thread writes before any reads (a plain serial loop would read unwritten memory).
SHIFT = """
@T.prim_func
def vt_shift(A: T.Buffer((4, 128), "float32"), B: T.Buffer((4, 128), "float32")):
    S = T.alloc_buffer((128,), "float32", scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for vt in T.thread_binding(2, thread="vthread.x"):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                r = T.decl_buffer((1,), "float32", scope="local")
                r[0] = A[bx, vt * 64 + tx] * T.float32(2)
                S[vt * 64 + tx] = A[bx, vt * 64 + tx]
                T.tvm_storage_sync("shared")
                B[bx, vt * 64 + tx] = r[0] + S[127 - (vt * 64 + tx)]
"""

# A matmul whose 2 x 2 output tile per thread comes from virtual threads bound by a schedule.
MATMUL = """
@T.prim_func
def mm(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"global_symbol": "mm", "tir.noalias": True})
    m = T.int64()
    A = T.match_buffer(a, (m, 8), "float32")
    B = T.match_buffer(b, (8, 32), "float32")
    C = T.match_buffer(c, (m, 32), "float32")
    for i, j, k in T.grid(m, 32, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@S.schedule("mm", target="cuda")
def _(sch):
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1, i2 = sch.split(i, factors=[None, 2, 8])
    j0, j1, j2 = sch.split(j, factors=[None, 2, 8])
    sch.reorder(i0, j0, i1, j1, i2, j2, k)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "vthread.y")
    sch.bind(j1, "vthread")
    sch.bind(i2, "threadIdx.y")
    sch.bind(j2, "threadIdx.x")
"""


def _shift_reference(a: np.ndarray) -> np.ndarray:
    return 2 * a + a[:, ::-1]


def _loops(mod: IRModule) -> list[For]:
    return [s for f in mod.prim_funcs().values() for s in walk_stmts(f.body)
            if isinstance(s, For)]


@pytest.mark.parametrize("opt_level", [0, 2])
def test_virtual_threads_meet_at_the_barrier(opt_level: int) -> None:
    low = lower(SHIFT, opt_level=opt_level)
    assert not any(is_vthread_loop(s) for s in _loops(low))
    a = np.random.default_rng(0).standard_normal((4, 128)).astype(np.float32)
    b = np.full_like(a, np.nan)
    check_races(low, "vt_shift", [a, b])
    np.testing.assert_array_equal(b, _shift_reference(a))


def test_the_body_is_cut_at_the_barrier_and_the_local_replicated() -> None:
    low = lower(SHIFT, opt_level=0)
    text = "\n".join(print_function(low["vt_shift_kernel"]))
    assert """
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            r = T.decl_buffer((2,), "float32", scope="local")
            for vt in T.unroll(2):
                r[vt * 1 + 0] = A[bx * 128 + (vt * 64 + tx)] * T.float32(2.0)
                S[vt * 64 + tx] = A[bx * 128 + (vt * 64 + tx)]
            T.tvm_storage_sync("shared")
            for vt in T.unroll(2):
                B[bx * 128 + (vt * 64 + tx)] = r[vt * 1 + 0] + S[127 - (vt * 64 + tx)]
""" in "\n" + text + "\n"
    assert low["vt_shift"].attrs["tirc.gpu_host"] is True


def test_unrolled_at_o2_into_straight_line_code() -> None:
    low = lower(SHIFT, opt_level=2)
    assert not any(s.kind == ForKind.UNROLLED for s in _loops(low))
    text = "\n".join(print_function(low["vt_shift_kernel"]))
    assert "r[1] = A[bx * 128 + tx + 64] * T.float32(2.0)" in text


@pytest.mark.parametrize("opt_level", [0, 2])
def test_schedule_bound_virtual_threads_compute_a_matmul(opt_level: int) -> None:
    low = lower(MATMUL, opt_level=opt_level)
    (launch,) = [s.value for s in walk_stmts(low["mm"].body) if is_launch(s)]
    # the virtual threads multiply the work per thread, not the block: 8 x 8 threads
    assert [const_value(construct.fold(d)) for d in launch.args[4:7]] == [8, 8, 1]
    rng = np.random.default_rng(1)
    m = 24  # a partial tile of rows
    a = rng.standard_normal((m, 8)).astype(np.float32)
    b = rng.standard_normal((8, 32)).astype(np.float32)
    c = np.full((m, 32), np.nan, np.float32)
    check_races(low, "mm", [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_lowered_module_prints_and_parses_back() -> None:
    low = lower(SHIFT, opt_level=0, skip=["gpu-split-host-device", "verify-gpu"])
    text = print_module(low)
    back = parse(text)
    assert structural_equal(back, low), first_difference(low, back)


def test_nested_virtual_threads_around_a_barrier() -> None:
    low = lower("""
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    S = T.alloc_buffer((64,), "float32", scope="shared")
    for vy in T.thread_binding(2, thread="vthread.y"):
        for vx in T.thread_binding(2, thread="vthread.x"):
            for tx in T.thread_binding(16, thread="threadIdx.x"):
                S[vy * 32 + vx * 16 + tx] = A[vy * 32 + vx * 16 + tx] + T.float32(1)
                T.tvm_storage_sync("shared")
                B[vy * 32 + vx * 16 + tx] = S[63 - (vy * 32 + vx * 16 + tx)]
""")
    a = np.arange(64, dtype=np.float32)
    b = np.full_like(a, np.nan)
    check_races(low, "f", [a, b])
    np.testing.assert_array_equal(b, a[::-1] + 1)


def _error(src: str) -> str:
    with pytest.raises(CompileError) as info:
        lower(src)
    return info.value.diagnostics[0].message


def test_barrier_under_a_virtual_thread_condition_is_an_error() -> None:
    msg = _error("""
@T.prim_func
def f(A: T.Buffer((64,), "float32")):
    for vt in T.thread_binding(2, thread="vthread"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            if vt == 0:
                T.tvm_storage_sync("shared")
            A[vt * 32 + tx] = T.float32(1)
""")
    assert msg == ("inject-vthread: the condition of an if depends on virtual thread 'vt' "
                   "(vthread) and encloses a barrier, so the virtual threads would not all "
                   "reach it")


def test_symbolic_virtual_thread_count_is_an_error() -> None:
    msg = _error("""
@T.prim_func
def f(a: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n * 32,), "float32")
    for vt in T.thread_binding(n, thread="vthread.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            A[vt * 32 + tx] = T.float32(1)
""")
    assert msg == ("inject-vthread: virtual-thread loop 'vt' needs a constant positive "
                   "extent")


def test_the_interpreter_names_an_unserialized_virtual_thread() -> None:
    flat = lower(SHIFT, opt_level=0, skip=[n for n in _gpu_steps(0)
                                                 if n.startswith("gpu-") or n == "inject-vthread"])
    a = np.zeros((4, 128), np.float32)
    with pytest.raises(InterpreterError, match="loop 'vt' is bound to 'vthread.x', which is "
                       "not a hardware thread axis"):
        GPUInterpreter(flat).launch("vt_shift", (4, 1, 1), (64, 1, 1), a, a.copy())


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("src", [SHIFT, MATMUL], ids=["shift", "matmul"])
def test_ptx_passes_ptxas(src: str, arch: str) -> None:
    require_ptxas()
    result = compile_ptx(parse(src), f"cuda -arch={arch}", 2)
    usages = result.usage()
    assert len(usages) == 1 and usages[0].spill_stores == 0 and usages[0].stack == 0


def test_launch_thread_form_of_a_virtual_thread() -> None:
    low = lower("""
@T.prim_func
def f(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    vt = T.launch_thread("vthread", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    B[bx * 64 + vt * 32 + tx] = A[bx * 64 + vt * 32 + tx] * T.float32(3)
""")
    a = np.arange(128, dtype=np.float32)
    b = np.full_like(a, np.nan)
    check_races(low, "f", [a, b])
    np.testing.assert_array_equal(b, 3 * a)
