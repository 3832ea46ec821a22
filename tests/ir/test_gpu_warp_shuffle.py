"""TVM's warp shuffles (`T.tvm_warp_shuffle*`) and `T.tvm_warp_activemask` in the GPU
interpreter, with CUDA's `shfl.sync` semantics (a lane reads the value another lane of its
warp gives at the same call; a source outside the lane's segment gives its own value), checked
against numpy; both thread orders agree; the calls the device leaves undefined are refused."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.interpreter.gpu import GPUInterpreter, check_races
from tirc.ir.module import IRModule

FULL = "T.uint32(0xFFFFFFFF)"
# 0x0000ffff for lanes 0-15, 0xffff0000 for lanes 16-31: each half of a warp on its own.
HALF = 'T.shift_left(T.uint32(0xFFFF), T.Cast("uint32", tx // 16 * 16))'


def kernel(n: int, body: str, out: str = "float32") -> IRModule:
    """`f(A, B)` over `n` threads of one block, `body` (indented by 8) per thread `tx`."""
    return parse(f'''
@T.prim_func
def f(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "{out}")):
    for tx in T.thread_binding({n}, thread="threadIdx.x"):
        acc = T.decl_buffer((1,), "float32", scope="local")
{body}
''', "f.tir")


def run(mod: IRModule, a: np.ndarray, out: str = "float32") -> np.ndarray:
    """B after the kernel ran directly on A (one block of len(A) threads)."""
    b = np.zeros(len(a), out)
    GPUInterpreter(mod).launch("f", (1, 1, 1), (len(a), 1, 1), a, b)
    return b


def run_both_orders(mod: IRModule, a: np.ndarray) -> np.ndarray:
    """B after the lowered module ran in forward and reverse thread order (which agree)."""
    b = np.zeros(len(a), np.float32)
    check_races(lower(mod), "f", [a, b])
    return b


def data(n: int) -> np.ndarray:
    """Small distinct integers as float32: the sums are exact in any order."""
    return np.random.default_rng(n).integers(-50, 50, n).astype(np.float32)


def by_warp(a: np.ndarray, step: object) -> np.ndarray:
    """`step(lanes of one warp)` for each warp of `a`, concatenated."""
    return np.concatenate([step(a[w:w + 32]) for w in range(0, len(a), 32)])


DOWN_SUM = f"""        acc[0] = A[tx]
        for k in range(5):
            acc[0] = acc[0] + T.tvm_warp_shuffle_down({FULL}, acc[0], T.shift_right(16, k), 32, 32)
        B[tx] = acc[0]"""


def down_sum(v: np.ndarray) -> np.ndarray:
    """CUDA's `v += __shfl_down_sync(~0, v, d)` for d = 16, 8, 4, 2, 1 over one warp."""
    lane = np.arange(32)
    for d in (16, 8, 4, 2, 1):
        v = v + np.where(lane + d < 32, v[np.minimum(lane + d, 31)], v)
    return v


@pytest.mark.parametrize("n", [32, 64])
def test_shuffle_down_sums_each_warp_into_lane_0(n: int) -> None:
    """64 threads are two warps: each sums its own 32 values; the other lanes hold CUDA's
    partial sums (a lane past the warp's end reads its own value)."""
    a = data(n)
    want = by_warp(a, down_sum)
    np.testing.assert_array_equal(run(kernel(n, DOWN_SUM), a), want)
    np.testing.assert_array_equal(run_both_orders(kernel(n, DOWN_SUM), a), want)
    np.testing.assert_array_equal(want[::32], a.reshape(-1, 32).sum(1))


def test_shuffle_xor_butterfly_gives_every_lane_the_total() -> None:
    body = f"""        acc[0] = A[tx]
        for k in range(5):
            acc[0] = acc[0] + T.tvm_warp_shuffle_xor({FULL}, acc[0], T.shift_right(16, k), 32, 32)
        B[tx] = acc[0]"""
    a = data(64)
    want = np.repeat(a.reshape(2, 32).sum(1), 32)
    np.testing.assert_array_equal(run(kernel(64, body), a), want)
    np.testing.assert_array_equal(run_both_orders(kernel(64, body), a), want)


@pytest.mark.parametrize(("lane", "width", "source"), [
    (0, 32, lambda t: t // 32 * 32),          # lane 0 of each warp to all its lanes
    (0, 8, lambda t: t // 8 * 8),             # the first lane of each segment of 8
    (3, 8, lambda t: t // 8 * 8 + 3),
    (35, 32, lambda t: t // 32 * 32 + 3),     # the lane is taken modulo 32
    (13, 4, lambda t: t // 4 * 4 + 1),        # and within the segment: 13 & 3
])
def test_shuffle_idx_broadcasts_within_segments(lane: int, width: int, source: object) -> None:
    body = f"        B[tx] = T.tvm_warp_shuffle({FULL}, A[tx], {lane}, {width}, 32)"
    a = data(64)
    want = a[source(np.arange(64))]  # type: ignore[operator]
    np.testing.assert_array_equal(run(kernel(64, body), a), want)
    np.testing.assert_array_equal(run_both_orders(kernel(64, body), a), want)


def test_shuffle_up_prefix_sum_kogge_stone() -> None:
    """An inclusive scan per warp: `t = __shfl_up_sync(~0, v, d); if (lane >= d) v += t`;
    every lane takes part in each shuffle, the guard is after it."""
    body = f"""        acc[0] = A[tx]
        for k in range(5):
            t: T.float32 = T.tvm_warp_shuffle_up({FULL}, acc[0], T.shift_left(1, k), 32, 32)
            if tx % 32 >= T.shift_left(1, k):
                acc[0] = acc[0] + t
        B[tx] = acc[0]"""
    a = data(64)
    want = by_warp(a, np.cumsum)
    np.testing.assert_array_equal(run(kernel(64, body), a), want)
    np.testing.assert_array_equal(run_both_orders(kernel(64, body), a), want)


def test_shuffle_up_with_width_stays_in_its_segment() -> None:
    body = f"        B[tx] = T.tvm_warp_shuffle_up({FULL}, A[tx], 2, 8, 32)"
    a = data(32)
    t = np.arange(32)
    np.testing.assert_array_equal(run(kernel(32, body), a), a[np.where(t % 8 >= 2, t - 2, t)])


def test_nested_shuffles_and_a_shuffle_in_a_condition_and_loop_bound() -> None:
    """A shuffle of a shuffle (the inner one first), a shuffle as an if's condition and as
    a loop's extent: each thread stops at each in turn."""
    body = f"""        acc[0] = T.float32(0)
        for i in range(T.tvm_warp_shuffle({FULL}, tx % 4, 1, 32, 32)):
            acc[0] = acc[0] + T.float32(1)
        if T.tvm_warp_shuffle_xor({FULL}, A[tx], 1, 32, 32) > T.float32(0):
            acc[0] = acc[0] + T.float32(10)
        B[tx] = acc[0] + T.float32(100) * T.tvm_warp_shuffle({FULL},
            T.tvm_warp_shuffle_down({FULL}, A[tx], 1, 32, 32), 0, 32, 32)"""
    a = data(32)
    want = 1 + 10 * (a[np.arange(32) ^ 1] > 0) + 100 * a[1]
    np.testing.assert_array_equal(run(kernel(32, body), a), want.astype(np.float32))


@pytest.mark.parametrize(("n", "guard", "want"), [
    (64, "True", [0xFFFFFFFF] * 64),
    (32, "tx < 16", [0x0000FFFF] * 16 + [0] * 16),
    (64, "tx % 32 >= 24", ([0] * 24 + [0xFF000000] * 8) * 2),
    (20, "True", [0x000FFFFF] * 20),   # a partial warp: the lanes that exist
])
def test_activemask_names_the_lanes_at_the_call(n: int, guard: str, want: list[int]) -> None:
    body = f"""        if {guard}:
            B[tx] = T.tvm_warp_activemask()"""
    got = run(kernel(n, body, "uint32"), np.zeros(n, np.float32), "uint32")
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


def test_activemask_waits_for_lanes_behind_a_shuffle() -> None:
    """Half of the warp shuffles among itself first; the whole warp then meets at the
    activemask (the interpreter runs the warp converged, as the device reconverges)."""
    body = """        if tx < 16:
            acc[0] = T.tvm_warp_shuffle(T.uint32(0xFFFF), A[tx], 0, 32, 32)
        B[tx] = T.tvm_warp_activemask()"""
    got = run(kernel(32, body, "uint32"), np.zeros(32, np.float32), "uint32")
    np.testing.assert_array_equal(got, np.full(32, 0xFFFFFFFF, np.uint32))


def test_two_halves_shuffle_with_their_own_masks_at_one_call() -> None:
    """Lanes 0-15 give 0x0000ffff and lanes 16-31 0xffff0000: two shuffles at one place."""
    body = f"        B[tx] = T.tvm_warp_shuffle({HALF}, A[tx], 0, 16, 32)"
    a = data(32)
    np.testing.assert_array_equal(run(kernel(32, body), a), np.repeat(a[[0, 16]], 16))


def test_exited_lanes_in_the_mask_are_not_waited_for() -> None:
    """PTX's shfl.sync waits for the non-exited lanes of its mask: lanes 16-31 have finished,
    lanes 0-15 read lane 0 only."""
    body = f"""        if tx < 16:
            B[tx] = T.tvm_warp_shuffle({FULL}, A[tx], 0, 32, 32)"""
    a = data(32)
    np.testing.assert_array_equal(run(kernel(32, body), a), np.where(np.arange(32) < 16, a[0],
                                                                      0))


def refused(mod: IRModule, n: int = 32) -> str:
    """The InterpreterError's message of running the kernel."""
    with pytest.raises(InterpreterError) as err:
        run(mod, data(n))
    return str(err.value)


def test_a_mask_naming_a_lane_at_a_barrier_is_a_deadlock() -> None:
    body = f"""        if tx < 16:
            B[tx] = T.tvm_warp_shuffle({FULL}, A[tx], 0, 32, 32)
        T.tvm_storage_sync("shared")"""
    assert refused(kernel(32, body)) == (
        "kernel f, block (0, 0, 0): warp 0, T.tvm_warp_shuffle at f.tir:7:21: lanes 0-15 give "
        "the mask 0xffffffff, which names lane 16, waiting at a barrier: a deadlock (undefined "
        "behaviour on the device)")


def test_lanes_waiting_for_each_other_at_two_shuffles_are_a_deadlock() -> None:
    body = f"""        if tx < 16:
            B[tx] = T.tvm_warp_shuffle({FULL}, A[tx], 0, 32, 32)
        else:
            B[tx] = T.tvm_warp_shuffle({FULL}, A[tx], 1, 32, 32)"""
    assert refused(kernel(32, body)) == (
        "kernel f, block (0, 0, 0): warp 0, T.tvm_warp_shuffle at f.tir:7:21: lanes 0-15 give "
        "the mask 0xffffffff and wait for lanes 16-31, which wait at another warp call: a "
        "deadlock (undefined behaviour on the device)")


def test_reading_an_exited_lane_is_refused() -> None:
    body = f"""        if tx < 16:
            B[tx] = T.tvm_warp_shuffle_down({FULL}, A[tx], 8, 32, 32)"""
    assert refused(kernel(32, body)) == (
        "kernel f, block (0, 0, 0): warp 0, T.tvm_warp_shuffle_down at f.tir:7:21: lane 8 "
        "reads lane 16, which has exited (an undefined value on the device)")


def test_reading_a_lane_outside_the_mask_is_refused() -> None:
    """Each half of the warp shuffles on its own; lane 8 reads lane 16, of the other half."""
    body = f"        B[tx] = T.tvm_warp_shuffle_down({HALF}, A[tx], 8, 32, 32)"
    assert refused(kernel(32, body)).endswith(
        "lane 8 reads lane 16, which is not in the mask 0x0000ffff (an undefined value on the "
        "device)")


def test_a_mask_leaving_out_the_callers_lane_is_refused() -> None:
    body = "        B[tx] = T.tvm_warp_shuffle(T.uint32(0xFFFF), A[tx], 0, 32, 32)"
    assert refused(kernel(32, body)).endswith(
        "lane 16 gives the mask 0x0000ffff, which leaves it out (undefined behaviour on the "
        "device)")


def test_overlapping_masks_at_one_call_are_refused() -> None:
    body = """        B[tx] = T.tvm_warp_shuffle(T.if_then_else(tx < 8, T.uint32(0xFFFF),
            T.uint32(0xFFFFFFFF)), A[tx], 0, 32, 32)"""
    assert refused(kernel(32, body)).endswith(
        "lanes 0-7 give the mask 0x0000ffff and lanes 8-31 0xffffffff: the lanes a mask names "
        "must all give it (undefined behaviour on the device)")


@pytest.mark.parametrize(("width", "size", "message"), [
    (3, 32, "width 3 is not a power of two from 1 to 32"),
    (64, 32, "width 64 is not a power of two from 1 to 32"),
    (32, 64, "warp size 64; CUDA's warps have 32 threads"),
])
def test_bad_width_or_warp_size_is_refused(width: int, size: int, message: str) -> None:
    body = f"        B[tx] = T.tvm_warp_shuffle_xor({FULL}, A[tx], 1, {width}, {size})"
    assert refused(kernel(32, body)) == f"T.tvm_warp_shuffle_xor at f.tir:6:17: {message}"


def test_a_shuffle_in_a_while_condition_is_refused() -> None:
    body = f"""        acc[0] = A[tx]
        while T.tvm_warp_shuffle({FULL}, acc[0], 0, 32, 32) > T.float32(0):
            acc[0] = acc[0] - T.float32(1)"""
    assert refused(kernel(32, body)) == (
        "the GPU interpreter cannot run T.tvm_warp_shuffle in While at f.tir:7:9: a warp "
        "shuffle or activemask runs in a store, an evaluate, a let, an if's condition or a "
        "for loop's bounds")


def test_a_shuffle_in_a_branch_of_if_then_else_is_refused() -> None:
    body = f"""        B[tx] = T.if_then_else(tx < 16, T.tvm_warp_shuffle({FULL}, A[tx], 0, 32, 32),
            T.float32(0))"""
    assert "cannot run a warp shuffle inside a branch of T.if_then_else in BufferStore at " \
        "f.tir:6:9" in refused(kernel(32, body))


def test_the_cpu_interpreter_refuses_warp_calls() -> None:
    """A warp shuffle has no meaning outside a GPU kernel."""
    mod = kernel(32, f"        B[tx] = T.tvm_warp_shuffle({FULL}, A[tx], 0, 32, 32)")
    with pytest.raises(InterpreterError) as err:
        Interpreter(mod).call("f", data(32), np.zeros(32, np.float32))
    assert str(err.value) == ("T.tvm_warp_shuffle only has a meaning on a GPU; the "
                              "interpreter runs CPU code")


BLOCK_SUM = f'''
@T.prim_func
def f(A: T.Buffer((128,), "float32"), B: T.Buffer((1,), "float32")):
    for tx in T.thread_binding(128, thread="threadIdx.x"):
        S = T.decl_buffer((4,), "float32", scope="shared")
        acc = T.decl_buffer((1,), "float32", scope="local")
        acc[0] = A[tx]
        for k in range(5):
            acc[0] = acc[0] + T.tvm_warp_shuffle_down({FULL}, acc[0], T.shift_right(16, k), 32, 32)
        if tx % 32 == 0:
            S[tx // 32] = acc[0]
        T.tvm_storage_sync("shared")
        if tx < 32:
            acc[0] = T.if_then_else(tx < 4, S[tx % 4], T.float32(0))
            for k in range(2):
                acc[0] = acc[0] + T.tvm_warp_shuffle_xor({FULL}, acc[0], T.shift_left(1, k), 32,
                                                         32)
            if tx == 0:
                B[0] = acc[0]
'''


def test_block_sum_by_warp_shuffles_and_shared_memory_across_a_barrier() -> None:
    """The usual block reduction: each warp's sum into shared memory, a barrier, then the
    first warp sums the four."""
    a, b = data(128), np.zeros(1, np.float32)
    check_races(lower(parse(BLOCK_SUM, "f.tir")), "f", [a, b])
    assert b[0] == a.sum()


def test_lanes_count_across_threadidx_y() -> None:
    """A block of 16 x 4 threads: lane tx + 16 * ty (mod 32), warp (tx + 16 * ty) // 32."""
    mod = parse(f'''
@T.prim_func
def f(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    for ty in T.thread_binding(4, thread="threadIdx.y"):
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            B[ty, tx] = T.tvm_warp_shuffle({FULL}, A[ty, tx], 17, 32, 32)
''', "f.tir")
    a, b = data(64).reshape(4, 16), np.zeros((4, 16), np.float32)
    GPUInterpreter(mod).launch("f", (1, 1, 1), (16, 4, 1), a, b)
    np.testing.assert_array_equal(b, np.repeat(a[[1, 1, 3, 3], 1][:, None], 16, axis=1))


def test_a_thread_finished_before_a_shuffle_still_makes_a_barrier_divergent() -> None:
    """Lanes 16-31 finish while lanes 0-15 shuffle; 0-15 then wait at a barrier alone."""
    body = """        if tx < 16:
            acc[0] = T.tvm_warp_shuffle(T.uint32(0xFFFF), A[tx], 0, 32, 32)
            T.tvm_storage_sync("shared")"""
    assert refused(kernel(32, body)) == (
        "kernel f, block (0, 0, 0): 16 thread(s) finished while 16 wait at a barrier "
        "(phase 0): a divergent barrier")
