"""gpu-default-schedule and gpu-bind-graph-host: graph functions lowered for the GPU with no
schedule, run by the GPU interpreter (threads of a block in lockstep) equal to NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import GRAPH_SAMPLE_IDS, GRAPH_SAMPLES, SAMPLE_REFS, lower
from tirc.frontend import parse, parse_file
from tirc.ir.analysis.entry_signature import shape_text
from tirc.ir.attrs import KERNEL
from tirc.ir.expr import Call, StringImm
from tirc.ir.function import PrimFunc
from tirc.ir.interpreter.gpu import check_races, run_gpu_func
from tirc.ir.intrinsics import LAUNCH_KERNEL
from tirc.ir.module import IRModule
from tirc.ir.printer import print_module
from tirc.ir.stmt import Evaluate
from tirc.ir.target import parse_target
from tirc.ir.visitor import post_order_visit
from tirc.passes.pipeline import default_pipeline


def _gpu_steps(opt_level: int) -> list[str]:
    """The default pipeline of a cuda target."""
    return default_pipeline(parse_target("cuda"), opt_level)

# Small sizes: the GPU interpreter runs every thread in Python.
INTERP_SIZES = {"mlp": [{"n": 3}, {"n": 1}, {"n": 17}],
                "transformer_block": [{"b": 1, "s": 3}], "resnet_block": [{"n": 1}]}


def launches(mod: IRModule, host: str = "main") -> list[tuple[str, list[str]]]:
    """(kernel, [grid x, y, z, block x, y, z] as text) of each launch of `host`, in order."""
    out: list[tuple[str, list[str]]] = []

    def visit(n: object) -> None:
        if isinstance(n, Evaluate) and isinstance(n.value, Call) and \
                n.value.op == LAUNCH_KERNEL:
            name = n.value.args[0]
            assert isinstance(name, StringImm)
            out.append((name.value, [str(shape_text(d)) for d in n.value.args[1:7]]))

    post_order_visit(mod[host].body, visit)
    return out


def kernel_text(mod: IRModule, name: str) -> str:
    return print_module(IRModule({name: mod[name]}))


def run_and_compare(mod: IRModule, sample, sizes: dict[str, int], races: bool) -> None:
    inputs = sample.inputs(sizes)
    want = sample.reference(*inputs)
    outs = [np.full(w.shape, np.nan, w.dtype) for w in want]
    (check_races if races else run_gpu_func)(mod, sample.func, inputs + outs)
    assert SAMPLE_REFS.mismatch(outs, want) is None, SAMPLE_REFS.mismatch(outs, want)


def test_graph_steps_come_before_the_loop_steps() -> None:
    o0 = _gpu_steps(0)
    assert o0[o0.index("inline-calls"):o0.index("lower-init")] == [
        "inline-calls", "normalize", "propagate-sharding", "lower-sharding", "legalize-ops",
        "lower-sparse-iterations", "annotate-op-pattern", "fuse-tir", "dead-code-elim",
        "gpu-default-schedule", "memory-plan", "lower-graph", "gpu-bind-graph-host",
        "gpu-lower-cross-thread-reduction", "bounds-check"]
    steps = _gpu_steps(2)
    start = steps.index("inline-calls")
    assert steps[start - 1] == "apply-schedules"
    assert steps[start + 7:start + 10] == ["fold-constants", "fuse-ops", "fuse-tir"]
    assert steps[steps.index("gpu-bind-graph-host") + 1:steps.index("lower-init")] == [
        "gpu-lower-cross-thread-reduction", "bounds-check"]
    assert "default-schedule" not in steps


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("sample", GRAPH_SAMPLES, ids=GRAPH_SAMPLE_IDS)
def test_graph_sample_runs_in_lockstep_equal_to_numpy(sample, opt_level: int) -> None:
    mod = lower(parse_file(str(sample.path)), opt_level=opt_level)
    assert all(isinstance(f, PrimFunc) for f in mod.functions.values())
    sizes = INTERP_SIZES[sample.name]
    run_and_compare(mod, sample, sizes[0], races=opt_level == 2)  # both orders: no races
    if opt_level == 2:
        for other in sizes[1:]:
            run_and_compare(mod, sample, other, races=False)


ELEMENTWISE = """
@R.function
def main(x: R.Tensor(("n", 3), "float32"), y: R.Tensor((3,), "float32")
         ) -> R.Tensor(("n", 3), "float32"):
    with R.dataflow():
        z = R.add(x, y)
        R.output(z)
    return z
"""


def test_elementwise_is_one_element_per_thread() -> None:
    mod = lower(ELEMENTWISE)
    assert launches(mod) == [("main_kernel", ["(n * 3 + 255) // 256", "1", "1", "256", "1",
                                              "1"])]
    assert "if " in kernel_text(mod, "main_kernel")  # n * 3 need not fill the last block
    x = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32)
    y = np.float32([1, 2, 3])
    z = np.full((7, 3), np.nan, np.float32)
    check_races(mod, "main", [x, y, z])
    np.testing.assert_array_equal(z, x + y)


REDUCTIONS = """
@R.function
def main(x: R.Tensor(("n", 100), "float32")
         ) -> R.Tuple(R.Tensor(("n",), "float32"), R.Tensor(("n",), "float32")):
    with R.dataflow():
        s = R.sum(x, axis=[1])
        m = R.max(x, axis=[1])
        R.output(s, m)
    return (s, m)
"""


def test_reduction_is_a_block_per_row_with_a_shared_memory_tree() -> None:
    mod = lower(REDUCTIONS, opt_level=0)
    assert [g for _, g in launches(mod)] == [["n", "1", "1", "128", "1", "1"]] * 2
    text = kernel_text(mod, "main_kernel0")
    assert 'scope="shared"' in text and text.count('T.tvm_storage_sync("shared")') == 8
    x = np.random.default_rng(1).standard_normal((5, 100)).astype(np.float32)
    s, m = np.full(5, np.nan, np.float32), np.full(5, np.nan, np.float32)
    check_races(mod, "main", [x, s, m])
    np.testing.assert_allclose(s, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, x.max(axis=1))


CALLED = """
@I.ir_module
class Module:
    @T.prim_func
    def max_from_five(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 40), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i, k in T.grid(n, 40):
            with T.block("m"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(5)
                B[vi] = T.max(B[vi], A[vi, vk])

    @T.prim_func
    def decay(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 40), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i, k in T.grid(n, 40):
            with T.block("d"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(1)
                B[vi] = B[vi] * T.float32(0.5) + A[vi, vk]

    @R.function
    def main(x: R.Tensor(("n", 40), "float32")
             ) -> R.Tuple(R.Tensor(("n",), "float32"), R.Tensor(("n",), "float32")):
        n = T.int64()
        with R.dataflow():
            m = R.call_tir(Module.max_from_five, (x,), out_sinfo=R.Tensor((n,), "float32"))
            d = R.call_tir(Module.decay, (x,), out_sinfo=R.Tensor((n,), "float32"))
            R.output(m, d)
        return (m, d)
"""


def test_hand_written_kernels_called_from_a_graph_are_scheduled() -> None:
    mod = lower(CALLED)
    (m_launch, d_launch) = launches(mod)
    assert m_launch[1] == ["n", "1", "1", "64", "1", "1"]  # a block per row, 64 threads
    assert d_launch[1][3] == "256"  # not a known combiner: a row per thread, k serial
    x = np.random.default_rng(2).standard_normal((6, 40)).astype(np.float32)
    x[0] = -1.0  # the row maximum is below the init value 5
    m, d = np.full(6, np.nan, np.float32), np.full(6, np.nan, np.float32)
    check_races(mod, "main", [x, m, d])
    np.testing.assert_array_equal(m, np.maximum(x.max(axis=1), 5))
    want = np.ones(6)
    for k in range(40):
        want = want * 0.5 + x[:, k]
    np.testing.assert_allclose(d, want, rtol=1e-5)


BATCH_MATMUL = """
@R.function
def main(a: R.Tensor(("b", "m", 20), "float32"), w: R.Tensor(("b", 20, 18), "float32")
         ) -> R.Tensor(("b", "m", 18), "float32"):
    with R.dataflow():
        c = R.matmul(a, w)
        R.output(c)
    return c
"""


def test_matmul_is_tiled_through_shared_memory() -> None:
    mod = lower(BATCH_MATMUL)
    assert launches(mod) == [("main_kernel", ["2", "(m + 15) // 16", "b", "16", "16", "1"])]
    text = kernel_text(mod, "main_kernel")
    # A and B tiles and the accumulators in shared memory
    assert text.count('scope="shared"') == 3
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 19, 20)).astype(np.float32)  # partial tiles on every edge
    w = rng.standard_normal((2, 20, 18)).astype(np.float32)
    c = np.full((2, 19, 18), np.nan, np.float32)
    check_races(mod, "main", [a, w, c])
    np.testing.assert_allclose(c, a @ w, rtol=1e-4, atol=1e-4)


def test_loop_functions_no_graph_calls_are_scheduled_too() -> None:
    mod = lower("""
@T.prim_func
def row_sum(a: T.Buffer((4, 8), "float32"), b: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 8):
        with T.block("s"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                b[vi] = T.float32(0)
            b[vi] = b[vi] + a[vi, vk]
""")
    assert launches(mod, "row_sum") == [("row_sum_kernel", ["4", "1", "1", "32", "1", "1"])]
    a = np.random.default_rng(7).standard_normal((4, 8)).astype(np.float32)
    b = np.full(4, np.nan, np.float32)
    check_races(mod, "row_sum", [a, b])
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5, atol=1e-6)


def test_a_nest_of_several_blocks_on_one_thread_is_one_kernel() -> None:
    """The fallback puts the shared loop, with every block under it, on one thread; the
    other blocks are then in the kernel already (they were bound a second time, nested)."""
    mod = lower("""
@T.prim_func
def scan(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
    L = T.alloc_buffer((64,), "int32")
    for i0 in range(1):
        for ax0 in range(64):
            with T.block("load"):
                v0 = T.axis.spatial(64, ax0)
                L[v0] = A[v0]
        with T.block("scan"):
            T.reads(L[0:64])
            T.writes(L[0:64])
            for k in range(63):
                L[k + 1] = L[k + 1] + L[k]
        for ax0 in range(64):
            with T.block("store"):
                v0 = T.axis.spatial(64, ax0)
                B[v0] = L[v0]
""")
    assert launches(mod, "scan") == [("scan_kernel", ["1", "1", "1", "1", "1", "1"])]
    a = np.arange(64, dtype=np.int32)
    b = np.zeros(64, np.int32)
    check_races(mod, "scan", [a, b])
    np.testing.assert_array_equal(b, np.cumsum(a))


def test_unnamed_blocks_are_renamed_apart_for_the_rules() -> None:
    """TVM allows several `T.block()` with no name; the rules find blocks by name."""
    mod = lower("""
@T.prim_func
def two(A: T.Buffer((128,), "int32"), B: T.Buffer((128,), "int32")):
    C = T.alloc_buffer((128,), "int64")
    for i in T.parallel(16):
        for j in range(8):
            with T.block():
                vi = T.axis.spatial(128, i * 8 + j)
                C[vi] = T.cast(A[vi], "int64") + T.int64(1)
    for i, j in T.grid(16, 8):
        with T.block():
            vi = T.axis.spatial(128, i * 8 + j)
            B[vi] = T.cast(C[vi] + T.int64(1), "int32")
""")
    a = np.arange(128, dtype=np.int32)
    b = np.zeros(128, np.int32)
    check_races(mod, "two", [a, b])
    np.testing.assert_array_equal(b, a + 2)


RETURNS_PARAMETER = """
@R.function
def main(x: R.Tensor(("n", 3), "float32"), y: R.Tensor(("n", 3), "float32")
         ) -> R.Tuple(R.Tensor(("n", 3), "float32"), R.Tensor(("n", 3), "float32")):
    with R.dataflow():
        a = R.add(x, y)
        R.output(a)
    return (x, a)
"""


def test_copies_lower_graph_adds_become_kernels() -> None:
    mod = lower(RETURNS_PARAMETER, opt_level=0)
    assert len(launches(mod)) == 2
    assert sum(1 for f in mod.functions.values() if f.attrs.get(KERNEL)) == 2
    x, y = np.ones((4, 3), np.float32), np.full((4, 3), 2, np.float32)
    out = [np.full((4, 3), np.nan, np.float32) for _ in range(2)]
    check_races(mod, "main", [x, y, *out])
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_array_equal(out[1], x + y)


def test_c_function_calls_stay_on_the_host_between_kernels() -> None:
    from tirc.ir.gpu.threads import walk_stmts
    from tirc.ir.stmt import Evaluate

    sample = SAMPLE_REFS.BY_NAME["mlp_dps"]
    mod = lower(parse_file(str(sample.path)))
    steps = [(s.value.op, s.value.args[0].value) for s in walk_stmts(mod["main"].body)
             if isinstance(s, Evaluate) and isinstance(s.value, Call)]
    assert steps == [("tirc.launch_kernel", "main_kernel0"),
                     ("tirc.call_packed", "mlp_bias_relu"),
                     ("tirc.launch_kernel", "main_kernel1")]


def test_scheduled_module_prints_and_parses_back() -> None:
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pass_base import PassContext
    from tirc.passes.pipeline import build_pipeline

    steps = _gpu_steps(2)
    mod = run_pipeline(parse(BATCH_MATMUL), build_pipeline(steps[:steps.index("lower-graph")]),
                       PassContext(opt_level=2))
    text = print_module(mod)
    assert 'T.thread_binding(T.int64(16), thread="threadIdx.y")' in text
    assert print_module(parse(text)) == text


MATMUL_EPILOGUE = """
@R.function
def main(x: R.Tensor(("n", 32), "float32"), w: R.Tensor((32, 24), "float32"),
         b: R.Tensor((24,), "float32"), r: R.Tensor(("n", 24), "float32")
         ) -> R.Tensor(("n", 24), "float32"):
    with R.dataflow():
        m = R.matmul(x, w)
        a = R.add(m, b)
        g = R.nn.relu(a)
        o = R.add(g, r)
        R.output(o)
    return o
"""


def test_matmul_epilogue_runs_in_the_matmul_kernel() -> None:
    mod = lower(MATMUL_EPILOGUE)
    (launch,) = launches(mod)  # matmul, bias, relu and residual: one kernel
    assert launch[1] == ["2", "(n + 15) // 16", "1", "16", "16", "1"]
    assert "T.decl_buffer" not in print_module(IRModule({"main": mod["main"]}))  # no workspace
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((21, 32)).astype(np.float32), \
        rng.standard_normal((32, 24)).astype(np.float32)
    b, r = rng.standard_normal(24).astype(np.float32), \
        rng.standard_normal((21, 24)).astype(np.float32)
    o = np.full((21, 24), np.nan, np.float32)
    check_races(mod, "main", [x, w, b, r, o])
    np.testing.assert_allclose(o, np.maximum(x @ w + b, 0) + r, rtol=1e-4, atol=1e-4)


ROWS = """
@R.function
def main(x: R.Tensor(("n", "k"), "float32"), g: R.Tensor(("k",), "float32")
         ) -> R.Tuple(R.Tensor(("n", "k"), "float32"), R.Tensor(("n", "k"), "float32")):
    with R.dataflow():
        p = R.nn.softmax(x, axis=-1)
        y = R.nn.rms_norm(x, g, axes=[-1], epsilon=1e-5)
        R.output(p, y)
    return (p, y)
"""


def test_reductions_and_their_row_consumers_share_one_kernel() -> None:
    mod = lower(ROWS, opt_level=0)
    # softmax (max, exp, sum, divide) and RMS norm (sum of squares, scale): a block per row
    assert [g for _, g in launches(mod)] == [["n", "1", "1", "128", "1", "1"]] * 2
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 150)).astype(np.float32)  # 150 > 128 threads: two strides
    g = rng.standard_normal(150).astype(np.float32)
    p, y = np.full((3, 150), np.nan, np.float32), np.full((3, 150), np.nan, np.float32)
    check_races(mod, "main", [x, g, p, y])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    want = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


RESHAPE_TRANSPOSE = """
@R.function
def main(q: R.Tensor(("b", "s", 64), "float32")) -> R.Tensor(("b", 4, "s", 16), "float32"):
    b = T.int64()
    s = T.int64()
    with R.dataflow():
        q4 = R.reshape(q, R.shape([b, s, 4, 16]))
        qh = R.permute_dims(q4, axes=[0, 2, 1, 3])
        R.output(qh)
    return qh
"""


def test_a_producer_with_one_reader_is_computed_inside_it() -> None:
    mod = lower(RESHAPE_TRANSPOSE)
    (launch,) = launches(mod)  # the reshape is inlined into the transpose: one kernel
    # blockIdx.y over b * 4, blockIdx.x and threadIdx.x over s * 16
    assert launch[1][:4] == ["(s * 16 + 255) // 256", "b * 4", "1", "256"]
    assert "T.decl_buffer" not in print_module(IRModule({"main": mod["main"]}))
    q = np.random.default_rng(6).standard_normal((2, 5, 64)).astype(np.float32)
    qh = np.full((2, 4, 5, 16), np.nan, np.float32)
    check_races(mod, "main", [q, qh])
    np.testing.assert_array_equal(qh, q.reshape(2, 5, 4, 16).transpose(0, 2, 1, 3))


MATCH_CAST = """
@R.function
def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("m",), "float32")
         ) -> R.Tensor(("n",), "float32"):
    n = T.int64()
    with R.dataflow():
        z = R.match_cast(y, R.Tensor((n,), "float32"))
        o = R.add(x, z)
        R.output(o)
    return o
"""


def test_match_cast_stays_a_host_check_before_the_launch() -> None:
    from tirc.ir.interpreter.gpu import InterpreterError

    mod = lower(MATCH_CAST)
    x, o = np.arange(3, dtype=np.float32), np.full(3, np.nan, np.float32)
    check_races(mod, "main", [x, np.ones(3, np.float32), o])
    np.testing.assert_array_equal(o, x + 1)
    with pytest.raises(InterpreterError, match="R.match_cast of z: dimension 0 is not n"):
        run_gpu_func(mod, "main", [x, np.ones(2, np.float32), o])
