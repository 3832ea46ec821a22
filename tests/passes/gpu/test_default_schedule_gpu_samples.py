"""gpu-default-schedule on loop functions no graph function calls: every loop-level sample,
lowered for the GPU with no schedule (its llvm schedule not applied), runs in the GPU
interpreter (threads of a block in lockstep) equal to NumPy; shapes the patterned schedules
do not take (tiled, vectorized, float16, layouts, event tensors) get the fallback."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import ROOT, SAMPLE_REFS, lower
from tirc.frontend import parse_file
from tirc.ir.attrs import KERNEL
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter.gpu import check_races, run_gpu_func
from tirc.ir.module import IRModule
from tirc.ir.printer import print_module

LOOP = SAMPLE_REFS.LOOP_SAMPLES
# The interpreter runs every thread in Python: these run once, not twice for the race check.
HEAVY = {"conv2d_nchw", "matmul", "dense_tiled"}
AT_O0 = {"dense_tiled", "gelu_fp16", "gemm_packed_layout", "softmax", "row_sum"}
CASES = [pytest.param(s, opt, id=f"{s.name}-O{opt}") for s in LOOP
         for opt in ((0, 2) if s.name in AT_O0 else (2,))]


def kernels(mod: IRModule) -> list[str]:
    return sorted(n for n, f in mod.functions.items() if f.attrs.get(KERNEL))


@pytest.mark.parametrize("sample,opt_level", CASES)
def test_loop_sample_runs_in_lockstep_equal_to_numpy(sample, opt_level: int) -> None:
    mod = lower(parse_file(str(sample.path)), opt_level=opt_level)
    assert kernels(mod)
    inputs = sample.inputs(sample.interp_sizes)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    (run_gpu_func if sample.name in HEAVY else check_races)(mod, sample.func, args)
    problem = SAMPLE_REFS.mismatch(sample.output_values(args), want)
    assert problem is None, problem


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "samples" / "schedules")
                                        .glob("*.tir") if p.stem != "sgemm"))
def test_llvm_schedules_are_not_applied_for_cuda(name: str) -> None:
    scheduled = lower(parse_file(str(ROOT / "samples" / "schedules" / f"{name}.tir")))
    plain = lower(parse_file(str(ROOT / "samples" / f"{name}.tir")))
    assert '@S.schedule("' in print_module(scheduled)  # still there: not applied
    assert print_module(IRModule(dict(scheduled.functions))) == print_module(plain)


def _moe_reference(x: np.ndarray, gate: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, int]:
    s = x @ gate
    routed = s.max(1) > 2
    out = np.where(routed[:, None],
                   np.maximum(np.einsum("ik,ikj->ij", x, w[s.argmax(1)]), 0), x)
    return out.astype("float32"), int(routed.sum())


@pytest.mark.parametrize("opt_level", [0, 2])
def test_event_tensors_become_counters_without_megakernel(opt_level: int) -> None:
    mod = lower(parse_file(str(ROOT / "samples" / "megakernel" / "moe_topk.tir")), opt_level)
    # counters set first (two event tensors), then route, experts and combine, one thread each
    assert len(kernels(mod)) == 5
    text = print_module(mod)
    assert 'scope="event"' not in text and "T.event_wait" in text
    rng = np.random.default_rng(0)
    routed = []
    for n in (1, 9):
        x = rng.standard_normal((n, 16)).astype("float32")
        gate = rng.standard_normal((16, 4)).astype("float32")
        w = rng.standard_normal((4, 16, 16)).astype("float32")
        want, count = _moe_reference(x, gate, w)
        routed.append(count)
        y = np.full_like(x, np.nan)
        check_races(mod, "moe_topk", [x, gate, w, y])
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert routed == [0, 7]  # a dropped token and routed ones both seen


OVERLAPPING = """
@T.prim_func
def smear(a: T.Buffer((8,), "float32"), c: T.Buffer((12,), "float32")):
    for i, k in T.grid(8, 5):
        with T.block("s"):
            vi = T.axis.spatial(12, i + k)
            c[vi] = c[vi] + a[i] * T.float32(k + 1)
"""


def test_fallback_runs_a_binding_that_is_not_one_to_one_serially() -> None:
    """`i + k` reaches an element from several (i, k): bind refuses both loops, so one thread
    runs the nest and no two threads add to one element (check_races sees it otherwise)."""
    mod = lower(OVERLAPPING)
    text = print_module(mod)
    assert 'T.thread_binding(1, thread="threadIdx.x")' in text
    assert 'T.thread_binding(1, thread="blockIdx.x")' in text
    a = np.arange(1, 9, dtype=np.float32)
    c = np.arange(12, dtype=np.float32)
    want = c.copy()
    for i in range(8):
        for k in range(5):
            want[i + k] += a[i] * (k + 1)
    check_races(mod, "smear", [a, c])
    np.testing.assert_array_equal(c, want)


def test_hand_tiled_nest_binds_its_spatial_loops_and_shares_the_reduction() -> None:
    mod = lower(parse_file(str(ROOT / "samples" / "dense_tiled.tir")))
    text = print_module(mod)
    # i_0 * 8 + i_1 and j_0 * 16 + j_1 are one-to-one: the spatial loops over the grid; the
    # reduction over k is shared by the threads of a block (a cross-thread reduction)
    assert 'thread="blockIdx.x")' in text and 'thread="threadIdx.x")' in text
    assert 'scope="shared"' in text


def test_partially_bound_function_is_still_an_error() -> None:
    with pytest.raises(CompileError, match="two: loop 'i' is outside every thread-bound loop"):
        lower("""
@T.prim_func
def two(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for i in T.thread_binding(64, thread="threadIdx.x"):
        with T.block("x"):
            vi = T.axis.remap("S", [i])
            b[vi] = a[vi] + T.float32(1)
    for i in range(64):
        with T.block("y"):
            vi = T.axis.remap("S", [i])
            a[vi] = b[vi] * T.float32(2)
""")
