"""compact-buffers: allocations move to their uses and shrink to what they touch, same results."""

from __future__ import annotations

from lowering_support import assert_same_results, body_text, run_on_text
from tirc.frontend import parse
from tirc.ir.target import parse_target
from tirc.passes.compact_buffers import CompactBuffers
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline

TILES = '''
@T.prim_func
def f(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    C_local = T.decl_buffer((8, 8), "float32", scope="local")
    for t in T.parallel(4):
        for i, j in T.grid(4, 4):
            C_local[t % 2 * 4 + i, t // 2 * 4 + j] = T.float32(0)
        for k, i, j in T.grid(8, 4, 4):
            C_local[t % 2 * 4 + i, t // 2 * 4 + j] = C_local[t % 2 * 4 + i, t // 2 * 4 + j] \
                + A[t % 2 * 4 + i, k] * A[k, t // 2 * 4 + j]
        for i, j in T.grid(4, 4):
            C[t % 2 * 4 + i, t // 2 * 4 + j] = C_local[t % 2 * 4 + i, t // 2 * 4 + j]
'''


def test_tile_of_a_fused_parallel_loop_moves_inside_it_and_shrinks_to_the_tile() -> None:
    before, after, _ = run_on_text(CompactBuffers(), TILES)
    assert body_text(after) == (
        "for t in T.parallel(4):\n"
        '    C_local = T.decl_buffer((4, 4), "float32", scope="local")\n'
        "    for i, j in T.grid(4, 4):\n"
        "        C_local[i, j] = T.float32(0.0)\n"
        "    for k, i, j in T.grid(8, 4, 4):\n"
        "        C_local[i, j] = C_local[i, j] + A[t % 2 * 4 + i, k] * A[k, t // 2 * 4 + j]\n"
        "    for i, j in T.grid(4, 4):\n"
        "        C[t % 2 * 4 + i, t // 2 * 4 + j] = C_local[i, j]\n")
    assert_same_results(before, after, "f")


CARRIED = '''
@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    acc = T.decl_buffer((4,), "float32", scope="local")
    for i in range(4):
        for k in range(8):
            if k == 0:
                acc[i] = T.float32(0)
            acc[i] = acc[i] + A[i, k]
        B[i] = acc[i]
'''


def test_value_carried_from_one_iteration_to_the_next_keeps_the_allocation_outside() -> None:
    before, after, _ = run_on_text(CompactBuffers(), CARRIED)
    assert body_text(after) == (
        "for i in range(4):\n"
        '    acc = T.decl_buffer((1,), "float32", scope="local")\n'
        "    for k in range(8):\n"
        "        if k == 0:\n"
        "            acc[0] = T.float32(0.0)\n"
        "        acc[0] = acc[0] + A[i, k]\n"
        "    B[i] = acc[0]\n")
    assert_same_results(before, after, "f")


SLIDING = '''
@T.prim_func
def f(A: T.Buffer((9,), "float32"), B: T.Buffer((8,), "float32")):
    w = T.decl_buffer((16,), "float32")
    w[4] = A[0]
    for i in range(8):
        w[i + 5] = A[i + 1]
        B[i] = w[i + 4] + w[i + 5]
'''


def test_overlapping_iterations_stay_under_one_allocation_shrunk_to_the_span() -> None:
    before, after, _ = run_on_text(CompactBuffers(), SLIDING)
    assert body_text(after) == (
        'w = T.decl_buffer((9,), "float32")\n'
        "w[0] = A[0]\n"
        "for i in range(8):\n"
        "    w[i + 1] = A[i + 1]\n"
        "    B[i] = w[i] + w[i + 1]\n")
    assert_same_results(before, after, "f")


PAIRS = '''
@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    w = T.decl_buffer((8,), "float32")
    for i in range(4):
        w[i * 2] = A[i * 2 + 1]
        w[i * 2 + 1] = A[i * 2]
        B[i * 2] = w[i * 2] * w[i * 2 + 1]
        B[i * 2 + 1] = w[i * 2 + 1]
'''


def test_iterations_with_disjoint_strided_regions_get_a_private_buffer() -> None:
    before, after, _ = run_on_text(CompactBuffers(), PAIRS)
    assert body_text(after) == (
        "for i in range(4):\n"
        '    w = T.decl_buffer((2,), "float32")\n'
        "    w[0] = A[i * 2 + 1]\n"
        "    w[1] = A[i * 2]\n"
        "    B[i * 2] = w[0] * w[1]\n"
        "    B[i * 2 + 1] = w[1]\n")
    assert_same_results(before, after, "f")


WHOLE = '''
@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    w = T.decl_buffer((8,), "float32")
    for i in range(8):
        w[7 - i] = A[i]
    for i in range(8):
        B[i] = w[i]
'''


def test_buffer_used_whole_by_two_loops_is_left_alone() -> None:
    before, after, _ = run_on_text(CompactBuffers(), WHOLE)
    assert after is before or body_text(after) == body_text(before)
    assert_same_results(before, after, "f")


ESCAPES = '''
@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    w = T.decl_buffer((8,), "float32")
    for i in range(2):
        w[i] = A[i]
    w_1 = T.Buffer((8,), "float32", data=w.data)
    B[0] = w_1[1]
'''


def test_buffer_whose_handle_escapes_is_left_alone() -> None:
    before, after, _ = run_on_text(CompactBuffers(), ESCAPES)
    assert body_text(after) == body_text(before)


MATMUL = '''
@T.prim_func
def mm(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
       C: T.Buffer((16, 16), "float32")):
    T.func_attr({"global_symbol": "mm", "tir.noalias": True})
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@S.schedule("mm", target="llvm")
def tiles(sch):
    c = sch.get_block("C")
    cl = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(j0, i0, k, i1, j1)
    sch.reverse_compute_at(cl, i0)
    sch.decompose_reduction(c, k)
    f = sch.fuse(j0, i0)
    sch.parallel(f)
'''


def test_cache_write_tile_of_a_schedule_becomes_a_stack_buffer_of_the_tile() -> None:
    steps = default_pipeline(parse_target("llvm"), 0)
    assert steps.index("lower-blocks") < steps.index("compact-buffers") \
        < steps.index("flatten-buffers")
    upto = steps[: steps.index("compact-buffers") + 1]
    before = parse(MATMUL)
    after = run_pipeline(before, build_pipeline(upto), PassContext())
    text = after.script()
    assert 'C_local = T.decl_buffer((4, 8), "float32", scope="local")' in text
    assert "(1024" not in text and "(16, 16), \"float32\", scope" not in text
    assert_same_results(before, after, "mm")


ROWS = '''
@T.prim_func
def f(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (4, n), "float32")
    B = T.match_buffer(b, (4, n), "float32")
    w = T.decl_buffer((4, n), "float32")
    for i in T.parallel(4):
        for j in range(n):
            w[i, j] = A[i, j]
        for j in range(n):
            B[i, j] = w[i, j] * T.float32(2)
'''


def test_rows_of_symbolic_width_are_not_made_private_to_parallel_iterations() -> None:
    before, after, _ = run_on_text(CompactBuffers(), ROWS)
    assert body_text(after) == body_text(before)
    assert_same_results(before, after, "f", sizes={"n": 5})


TRIANGLE = '''
@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((4,), "float32")):
    w = T.decl_buffer((8,), "float32")
    for i in range(4):
        for j in range(i, i + 2):
            w[j] = A[j] * T.float32(2)
        B[i] = w[i] + w[i + 1]
'''


def test_region_whose_start_depends_on_an_inner_loop_is_not_shifted_by_it() -> None:
    before, after, _ = run_on_text(CompactBuffers(), TRIANGLE)
    assert body_text(after) == (
        'w = T.decl_buffer((5,), "float32")\n'
        "for i in range(4):\n"
        "    for j in range(i, i + 2):\n"
        "        w[j] = A[j] * T.float32(2.0)\n"
        "    B[i] = w[i] + w[i + 1]\n")
    assert_same_results(before, after, "f")


SIBLINGS = '''
@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    u = T.decl_buffer((4, 8), "float32", scope="local")
    v = T.decl_buffer((4, 8), "float32", scope="local")
    for i in T.parallel(4):
        for j in range(8):
            u[i, j] = A[i, j] * T.float32(2)
        for j in range(8):
            B[i, j] = u[i, j]
    for i in T.parallel(4):
        for j in range(8):
            v[i, j] = B[i, j] + T.float32(1)
        for j in range(8):
            B[i, j] = v[i, j]
    w_1 = T.Buffer((4, 8), "float32", data=v.data)
    B[0, 0] = w_1[0, 0]
'''


def test_each_of_several_allocations_finds_its_own_loop_and_an_aliased_one_stays() -> None:
    before, after, _ = run_on_text(CompactBuffers(), SIBLINGS)
    assert body_text(after) == (
        'v = T.decl_buffer((4, 8), "float32", scope="local")\n'
        'w_1 = T.Buffer((4, 8), "float32", data=v.data)\n'
        "for i in T.parallel(4):\n"
        '    u = T.decl_buffer((1, 8), "float32", scope="local")\n'
        "    for j in range(8):\n"
        "        u[0, j] = A[i, j] * T.float32(2.0)\n"
        "    for j in range(8):\n"
        "        B[i, j] = u[0, j]\n"
        "for i in T.parallel(4):\n"
        "    for j in range(8):\n"
        "        v[i, j] = B[i, j] + T.float32(1.0)\n"
        "    for j in range(8):\n"
        "        B[i, j] = v[i, j]\n"
        "B[0, 0] = w_1[0, 0]\n")
    assert_same_results(before, after, "f")


# TVM's CompactBufferAllocation `TestSharedMem`: a block inside blockIdx, vthread and
# threadIdx loops allocates a shared buffer of which each thread writes its own row.
SHARED_ROWS = '''
@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i0 in T.thread_binding(2, thread="blockIdx.x"):
        for i1 in T.thread_binding(2, thread="vthread"):
            for i2 in T.thread_binding(4, thread="threadIdx.x"):
                with T.block():
                    T.reads(A[i0 * 8 + i1 * 4 + i2, 0:16])
                    T.writes(C[i0 * 8 + i1 * 4 + i2, 0:16])
                    B = T.alloc_buffer((16, 16), "float32", scope="SCOPE")
                    for j in range(16):
                        B[i0 * 8 + i1 * 4 + i2, j] = A[i0 * 8 + i1 * 4 + i2, j] + T.float32(1)
                    for j in range(16):
                        C[i0 * 8 + i1 * 4 + i2, j] = B[i0 * 8 + i1 * 4 + i2, j] * T.float32(2)
'''


def test_shared_buffer_inside_thread_loops_keeps_a_row_per_thread() -> None:
    """All threads of a block use the one copy of a shared buffer, wherever it is
    allocated: its box covers the threadIdx and vthread loops around it (8 rows, as TVM's
    expected), where it shrank to one row that the 4 threads then overwrote in turn (wrong
    results in the GPU build). Local storage still shrinks to the thread's own row."""
    import numpy as np
    from gpu_support import lower
    from tirc.ir.interpreter.gpu import check_races

    steps = default_pipeline(parse_target("cuda -arch=sm_80"), 0)
    upto = steps[: steps.index("compact-buffers") + 1]
    a = (np.arange(256, dtype=np.float32).reshape(16, 16) - 100) / 8
    for scope, shape, row in (("shared", "(8, 16)", "B[i1 * 4 + i2, j]"),
                              ("local", "(1, 16)", "B[0, j]")):
        text = SHARED_ROWS.replace("SCOPE", scope)
        after = run_pipeline(parse(text), build_pipeline(upto),
                             PassContext(target=parse_target("cuda -arch=sm_80")))
        printed = after.script()
        assert f'B = T.decl_buffer({shape}, "float32", scope="{scope}")' in printed, printed
        assert row in printed
        for level in (0, 2):
            c = np.zeros_like(a)
            check_races(lower(text, opt_level=level), "f", [a, c])
            np.testing.assert_array_equal(c, (a + 1) * 2)


# dlight's Matmul schedule, small: the shared tiles are written by the block's threads in each
# step of the reduction loop `ko`, which runs inside the threadIdx loops.
TILED_K = '''
@T.prim_func
def f(A: T.Buffer((8, 32), "float32"), B: T.Buffer((32, 8), "float32"),
      C: T.Buffer((8, 8), "float32")):
    As = T.alloc_buffer((8, 32), "float32", scope="shared")
    Bs = T.alloc_buffer((32, 8), "float32", scope="shared")
    acc = T.alloc_buffer((8, 8), "float32", scope="local")
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for vt in T.thread_binding(1, thread="vthread.x"):
            for tx in T.thread_binding(4, thread="threadIdx.x"):
                for j in range(8):
                    with T.block("init"):
                        acc[bx * 4 + tx, j] = T.float32(0)
                for ko in range(4):
                    for t2 in T.thread_binding(4, thread="threadIdx.x"):
                        for e in range(8):
                            with T.block("As"):
                                As[bx * 4 + t2, ko * 8 + e] = A[bx * 4 + t2, ko * 8 + e]
                            with T.block("Bs"):
                                Bs[ko * 8 + e, t2 * 2] = B[ko * 8 + e, t2 * 2]
                                Bs[ko * 8 + e, t2 * 2 + 1] = B[ko * 8 + e, t2 * 2 + 1]
                    for ki, j in T.grid(8, 8):
                        with T.block("update"):
                            acc[bx * 4 + tx, j] = acc[bx * 4 + tx, j] \\
                                + As[bx * 4 + tx, ko * 8 + ki] * Bs[ko * 8 + ki, j]
                for j in range(8):
                    with T.block("store"):
                        C[bx * 4 + tx, j] = acc[bx * 4 + tx, j]
'''


def test_shared_tiles_of_a_reduction_loop_inside_thread_loops_shrink_to_one_step() -> None:
    """As TVM's CompactBufferAllocation: a shared buffer used only inside one step of a serial
    loop under the threadIdx loops is allocated in that step (the block's threads sharing it)
    and holds one step's tile (4 x 8 and 8 x 8 here, not the whole k extent, which made
    dlight's matmuls exceed shared memory); a barrier protects the tile between steps, and
    the local accumulator passes the one-iteration vthread loop to its thread's row."""
    import numpy as np
    from gpu_support import lower
    from tirc.ir.interpreter.gpu import check_races

    target = parse_target("cuda -arch=sm_80")
    steps = default_pipeline(target, 0)
    upto = steps[: steps.index("compact-buffers") + 1]
    printed = run_pipeline(parse(TILED_K), build_pipeline(upto),
                           PassContext(target=target)).script()
    step = printed[printed.index("for ko in range(4):"):]
    assert step.index('As = T.decl_buffer((4, 8), "float32", scope="shared")') < \
        step.index("for e in range(8):"), printed
    assert 'Bs = T.decl_buffer((8, 8), "float32", scope="shared")' in step
    assert 'acc = T.decl_buffer((1, 8), "float32", scope="local")' in printed
    assert "As[t2, e] = A[bx * 4 + t2, ko * 8 + e]" in step
    assert "acc[0, j] = acc[0, j] + As[tx, ki] * Bs[ki, j]" in step
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 32)).astype(np.float32)
    b = rng.standard_normal((32, 8)).astype(np.float32)
    for level in (0, 3):
        lowered = lower(TILED_K, opt_level=level)
        assert "T.tvm_storage_sync" in lowered.script()
        c = np.zeros((8, 8), np.float32)
        check_races(lowered, "f", [a, b, c])
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_shared_tile_stays_whole_over_a_loop_the_threads_run_differently() -> None:
    """A step loop whose extent depends on the thread cannot have barriers between its steps,
    so its steps keep their own parts of the shared tile (it is not moved into the loop)."""
    target = parse_target("cuda -arch=sm_80")
    steps = default_pipeline(target, 0)
    upto = steps[: steps.index("compact-buffers") + 1]
    text = TILED_K.replace("for ko in range(4):", "for ko in range(tx + 1):")
    printed = run_pipeline(parse(text), build_pipeline(upto),
                           PassContext(target=target)).script()
    assert 'As = T.decl_buffer((4, 32), "float32", scope="shared")' in printed, printed
    assert printed.index("As = T.decl_buffer") < printed.index("for tx in")
