"""lower-layouts: buffers with a layout become flat storage; accesses, physical offsets.

Each layout is checked three ways: the printed result of the pass, the reference interpreter
before and after the pass on the same random inputs (the interpreter maps logical accesses
through the layout itself, so the two sides are independent computations), and the physical
storage the interpreter leaves in a parameter with a layout against numpy's own packing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lowering_support import body_text, func_text, run_on_text
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Var
from tirc.ir.interpreter import Interpreter, InterpreterError, eval_expr
from tirc.ir.layout import parse_layout
from tirc.ir.layout.lowering import lower_buffer_layout
from tirc.ir.layout.storage import ConcreteLayoutMap
from tirc.ir.module import IRModule
from tirc.ir.target import Target
from tirc.passes.lower_layouts import LowerLayouts
from tirc.passes.pass_base import PassContext
from tirc.passes.registry import all_passes

LLVM = Target("llvm")
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "gemm_packed_layout.tir"


def lowered(text: str, target: Target | None = LLVM) -> tuple[IRModule, IRModule, PassContext]:
    before = parse(text)
    ctx = PassContext(target=target)
    return before, LowerLayouts()(before, ctx), ctx


def call(mod: IRModule, name: str, *args: np.ndarray) -> list[np.ndarray]:
    copies = [a.copy() for a in args]
    Interpreter(mod).call(name, *copies)
    return copies


def compile_error(text: str, target: Target | None = LLVM) -> str:
    with pytest.raises(CompileError) as info:
        lowered(text, target)
    return info.value.diagnostics[0].message


# ---- the printed result -------------------------------------------------------------------

PANELS = """
@T.prim_func
def panels(a: T.handle, c: T.handle):
    K = T.int32()
    N = T.int32()
    A = T.match_buffer(a, (K, N), "float32")
    C = T.match_buffer(c, (K, N), "float32")
    P = T.alloc_buffer((K, N), "float32", layout="S[(K, N // 16, 16):(16, 16 * K, 1)]")
    for k, n in T.grid(K, N):
        P[k, n] = A[k, n]
    for k, n in T.grid(K, N):
        C[k, n] = P[k, n] + T.float32(1)
"""


def test_packed_panels_become_a_flat_buffer_with_panel_offsets() -> None:
    _, after, _ = lowered(PANELS)
    assert body_text(after) == (
        "K = T.int32()\n"
        "N = T.int32()\n"
        'A = T.match_buffer(a, (K, N), "float32")\n'
        'C = T.match_buffer(c, (K, N), "float32")\n'
        'P = T.decl_buffer((16 * K * (N // 16),), "float32")\n'
        "assert N % 16 == 0, \"lower-layouts: buffer 'P' with layout "
        'S[(K, N // 16, 16):(16, 16 * K, 1)] needs N % 16 == 0"\n'
        "for k, n in T.grid(K, N):\n"
        "    P[k * 16 + n // 16 * (16 * K) + n % 16] = A[k, n]\n"
        "for k, n in T.grid(K, N):\n"
        "    C[k, n] = P[k * 16 + n // 16 * (16 * K) + n % 16] + T.float32(1.0)\n"
    )


def test_packed_panels_keep_meaning_and_check_divisibility_at_run_time() -> None:
    before, after, _ = lowered(PANELS)
    rng = np.random.default_rng(0)
    for k, n in ((1, 16), (3, 48), (5, 32)):
        a = rng.standard_normal((k, n)).astype("float32")
        c = np.zeros((k, n), "float32")
        want = call(before, "panels", a, c)[1]
        np.testing.assert_allclose(want, a + 1, rtol=1e-6)
        np.testing.assert_array_equal(call(after, "panels", a, c)[1], want)
    a = np.ones((2, 24), "float32")
    with pytest.raises(InterpreterError, match="needs N % 16 == 0"):
        call(after, "panels", a, a.copy())


WORKERS = """
@T.prim_func
def worker_sums(A: T.Buffer((4, 64), "float32"), S: T.Buffer((1,), "float32")):
    P = T.alloc_buffer((4, 8), "float32", layout="S[(4, 8):(1@tid, 1)]")
    for t in T.parallel(4):
        for j in range(8):
            P[t, j] = T.float32(0)
        for j in range(64):
            P[t, j % 8] = P[t, j % 8] + A[t, j]
    S[0] = T.float32(0)
    for t, j in T.grid(4, 8):
        S[0] = S[0] + P[t, j]
"""


def test_tid_shards_are_per_worker_chunks_owned_by_the_parallel_iteration() -> None:
    before, after, _ = lowered(WORKERS)
    assert body_text(after) == (
        'P = T.decl_buffer((32,), "float32")\n'
        "for t in T.parallel(4):\n"
        "    for j in range(8):\n"
        "        P[t * 8 + j] = T.float32(0.0)\n"
        "    for j in range(64):\n"
        "        P[t * 8 + j % 8] = P[t * 8 + j % 8] + A[t, j]\n"
        "S[0] = T.float32(0.0)\n"
        "for t, j in T.grid(4, 8):\n"
        "    S[0] = S[0] + P[t * 8 + j]\n"
    )
    a = np.random.default_rng(1).standard_normal((4, 64)).astype("float32")
    s = np.zeros(1, "float32")
    want = call(before, "worker_sums", a, s)[1]
    np.testing.assert_allclose(want, [a.sum()], rtol=1e-5)
    np.testing.assert_array_equal(call(after, "worker_sums", a, s)[1], want)


def test_owner_proved_through_loop_bounds_in_a_shifted_parallel_loop() -> None:
    text = """
@T.prim_func
def shifted(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    P = T.alloc_buffer((4, 16), "float32", layout="S[(4, 16):(1@tid, 1)]")
    for t in T.parallel(2, 6):
        for j in range(16):
            P[(t - 2) * 16 // 16, j] = A[t - 2, j]
    for i, j in T.grid(4, 16):
        B[i, j] = P[i, j]
"""
    before, after, _ = lowered(text)
    assert "P[(t - 2) * 16 + j] = A[t - 2, j]" in body_text(after)
    a = np.arange(64, dtype="float32").reshape(4, 16)
    b = np.zeros_like(a)
    np.testing.assert_array_equal(call(after, "shifted", a, b)[1], a)
    np.testing.assert_array_equal(call(before, "shifted", a, b)[1], a)


def test_replica_store_writes_every_copy_once_evaluated() -> None:
    text = """
@T.prim_func
def mirrored(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    M = T.alloc_buffer((8,), "float32", layout="S[8:1] + R[2:8]")
    for i in range(8):
        M[i] = A[i] + T.float32(1)
    for i in range(8):
        B[i] = M[7 - i]
"""
    before, after, _ = lowered(text)
    assert body_text(after) == (
        'M = T.decl_buffer((16,), "float32")\n'
        "for i in range(8):\n"
        "    M_value: T.float32 = A[i] + T.float32(1.0)\n"
        "    M[i] = M_value\n"
        "    M[i + 8] = M_value\n"
        "for i in range(8):\n"
        "    B[i] = M[7 - i]\n"
    )
    a = np.arange(8, dtype="float32")
    b = np.zeros(8, "float32")
    np.testing.assert_array_equal(call(before, "mirrored", a, b)[1], a[::-1] + 1)
    np.testing.assert_array_equal(call(after, "mirrored", a, b)[1], a[::-1] + 1)


def test_parameter_with_a_layout_takes_its_physical_storage() -> None:
    text = """
@T.prim_func
def store_panels(A: T.Buffer((4, 32), "float32"),
                 P: T.Buffer((4, 32), "float32", layout="S[(4, 2, 16):(16, 64, 1)]")):
    for i, j in T.grid(4, 32):
        P[i, j] = A[i, j]
"""
    before, after, _ = lowered(text)
    assert func_text(after, "store_panels").splitlines()[:3] == [
        "@T.prim_func",
        'def store_panels(A: T.Buffer((4, 32), "float32"), P: T.Buffer((128,), "float32")):',
        "    for i, j in T.grid(4, 32):",
    ]
    a = np.arange(128, dtype="float32").reshape(4, 32)
    panels = a.reshape(4, 2, 16).transpose(1, 0, 2).reshape(-1)
    for mod in (before, after):
        got = call(mod, "store_panels", a, np.zeros(128, "float32"))[1]
        np.testing.assert_array_equal(got, panels)
    with pytest.raises(InterpreterError, match="contiguous 1-D array"):
        call(before, "store_panels", a, np.zeros((4, 32), "float32"))


def test_function_without_layouts_is_returned_unchanged() -> None:
    mod = parse("""
@T.prim_func
def plain(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = T.float32(0)
""")
    assert LowerLayouts()(mod, PassContext(target=LLVM)) is mod


def test_blocks_are_lowered_first_and_the_result_round_trips() -> None:
    before, after, _ = run_on_text(LowerLayouts(), SAMPLE.read_text())
    text = after.script()
    assert "T.block" not in text and "layout=" not in text
    panel = "B_packed[k * 16 + (j_0 * 16 + j_1) // 16 * (16 * K) + (j_0 * 16 + j_1) % 16]"
    assert text.count(panel) == 2
    assert parse(text).script() == text
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3)).astype("float32")
    b = rng.standard_normal((3, 256)).astype("float32")
    for mod in (before, after):
        c = call(mod, "gemm_packed_layout", a, b, np.full((2, 256), np.nan, "float32"))[2]
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


# ---- every kind of layout keeps meaning -----------------------------------------------------

TEMP = """
@T.prim_func
def temp(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
    X = T.alloc_buffer((8, 16), "float32", layout="{layout}")
    for i, j in T.grid(8, 16):
        X[i, j] = A[i, j] * T.float32(2)
    for i, j in T.grid(8, 16):
        B[i, j] = X[7 - i, 15 - j] + X[i, j]
"""

LAYOUTS = [
    "S[(8, 16):(16, 1)]",
    "S[(8, 16):(1, 8)]",
    "S[(8, 16):(16, 1)] + 5",
    "S[(2, 4, 16):(64, 16, 1)]",
    "S[(4, 2, 2, 8):(8, 64, 32, 1)]",
    "S[(16, 8):(1, 16)]",
    "S[(8, 16):(17, 1)]",
    "S[(8, 16):(16, 1)] + R[2:128]",
    "ComposeLayout(2, 2, 2, S[(8, 16):(16, 1)])",
    "ComposeLayout(0, 3, 4, S[(8, 16):(1, 8)])",
    "S[(2, 4, 16):(1@tid, 16, 1)]",
    "S[(8, 2, 8):(2, 1@tid, 16)] + 3",
]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_temporary_with_layout_is_transparent_before_and_after(layout: str) -> None:
    before, after, _ = lowered(TEMP.format(layout=layout))
    a = np.random.default_rng(3).standard_normal((8, 16)).astype("float32")
    want = a[::-1, ::-1] * 2 + a * 2
    for mod in (before, after):
        np.testing.assert_allclose(call(mod, "temp", a, np.zeros_like(a))[1], want, rtol=1e-6)


def test_layout_that_does_not_group_by_the_shape_splits_the_flat_index() -> None:
    text = """
@T.prim_func
def odd(A: T.Buffer((5, 3), "int32"), P: T.Buffer((5, 3), "int32", layout="S[(3, 5):(1, 3)]")):
    for i, j in T.grid(5, 3):
        P[i, j] = A[i, j]
"""
    before, after, _ = lowered(text)
    assert "P[(i * 3 + j) // 5 + (i * 3 + j) % 5 * 3] = A[i, j]" in body_text(after)
    a = np.arange(15, dtype="int32").reshape(5, 3)
    want = a.reshape(3, 5).T.reshape(-1)
    for mod in (before, after):
        np.testing.assert_array_equal(call(mod, "odd", a, np.zeros(15, "int32"))[1], want)


# ---- the storage model against the algebra ------------------------------------------------


@pytest.mark.parametrize("text", [
    "S[(4, 2, 16):(16, 64, 1)]", "S[(8, 16):(1, 8)]", "S[(3, 5):(1, 3)]",
    "ComposeLayout(3, 3, 3, S[(8, 64):(64, 1)])",
])
def test_concrete_offsets_are_the_layouts_memory_coordinate(text: str) -> None:
    layout = parse_layout(text)
    dims = {"S[(4, 2, 16):(16, 64, 1)]": (4, 32), "S[(3, 5):(1, 3)]": (5, 3)}.get(text)
    dims = dims or ((8, 16) if "8, 16" in text else (8, 64))
    cmap = ConcreteLayoutMap(layout, dims, {})
    seen = set()
    for i in range(dims[0]):
        for j in range(dims[1]):
            (offset,) = cmap.offsets((i, j))
            assert offset == layout.apply(i * dims[1] + j)["m"]
            seen.add(offset)
    assert seen == set(range(cmap.size))


def test_symbolic_offsets_agree_with_concrete_ones() -> None:
    layout = parse_layout("S[(K, N // 16, 16):(16, 16 * K, 1)]")
    K, N, i, j = Var("K"), Var("N"), Var("i"), Var("j")
    low = lower_buffer_layout(layout, (K, N), {"K": K, "N": N})
    offset = low.offset(low.place((i, j)))
    for k_val, n_val in ((1, 16), (3, 32), (2, 64)):
        cmap = ConcreteLayoutMap(layout, (k_val, n_val), {"K": k_val, "N": n_val})
        env = {K: k_val, N: n_val}
        assert eval_expr(low.size, env) == cmap.size == k_val * n_val
        for ii in range(k_val):
            for jj in range(0, n_val, 5):
                env.update({i: ii, j: jj})
                assert eval_expr(offset, env) == cmap.offsets((ii, jj))[0]


# ---- what the pass rejects or leaves ------------------------------------------------------


def test_device_axis_is_an_error_on_the_cpu() -> None:
    text = """
@T.prim_func
def sharded(A: T.Buffer((8, 16), "float32", layout="S[(2, 4, 16):(1@gpuid, 16, 1)]")):
    for i, j in T.grid(8, 16):
        A[i, j] = T.float32(0)
"""
    assert compile_error(text) == ("lower-layouts: buffer 'A' is sharded over device axis "
                                   "'gpuid'; multi-device execution is not supported on "
                                   "target llvm")
    before, after, ctx = lowered(text, target=None)
    assert after is before
    assert ctx.notes == ["lower-layouts: buffer A in sharded keeps its layout "
                         "S[(2, 4, 16):(1@gpuid, 16, 1)]: axis 'gpuid' needs a target that "
                         "has it"]


def test_gpu_thread_axis_is_an_error_on_the_cpu() -> None:
    text = """
@T.prim_func
def frag(A: T.Buffer((8, 8), "float32")):
    F = T.alloc_buffer((8, 8), "float32", layout="S[(8, 4, 2):(4@laneid, 1@laneid, 1)]")
    for i, j in T.grid(8, 8):
        F[i, j] = A[i, j]
"""
    assert compile_error(text) == ("lower-layouts: buffer 'F' is sharded over GPU thread axis "
                                   "'laneid'; target llvm has no GPU threads (CPU workers "
                                   "are 'tid')")


def test_access_by_a_worker_that_does_not_own_the_element_is_an_error() -> None:
    text = """
@T.prim_func
def rotate(A: T.Buffer((4, 8), "float32")):
    P = T.alloc_buffer((4, 8), "float32", layout="S[(4, 8):(1@tid, 1)]")
    for t in T.parallel(4):
        for j in range(8):
            P[(t + 1) % 4, j] = A[t, j]
"""
    assert compile_error(text) == (
        "lower-layouts: P[(t + 1) % 4, j] belongs to worker (t + 1) % 4 (layout "
        "S[(4, 8):(1@tid, 1)]), but runs in worker t of the parallel loop over 't'; inside a "
        "parallel loop, a buffer sharded over 'tid' is accessed only by its owner")


@pytest.mark.parametrize("layout, message", [
    ("S[(Q, 16):(16, 1)]", "lower-layouts: buffer 'X' with layout S[(Q, 16):(16, 1)]: symbol "
                           "'Q' is not a symbolic size of the function"),
    ("S[(8, 8):(8, 1)]", "lower-layouts: buffer 'X' with layout S[(8, 8):(8, 1)]: layout "
                         "S[(8, 8):(8, 1)] holds 64 elements but the buffer has 128"),
    ("S[(8, 16):(16, 1)] + R[2:1@tid]", "lower-layouts: buffer 'X' is replicated over 'tid' "
                                        "(layout S[(8, 16):(16, 1)] + R[2:1@tid]); replicas on "
                                        "CPU workers are not supported"),
])
def test_bad_layouts_are_diagnosed(layout: str, message: str) -> None:
    assert compile_error(TEMP.format(layout=layout)) == message


def test_error_points_at_the_buffer_declaration() -> None:
    with pytest.raises(CompileError) as info:
        lowered(TEMP.format(layout="S[(8, 8):(8, 1)]"))
    span = info.value.diagnostics[0].span
    assert span is not None and (span.line, span.col) == (4, 9)


def test_the_pass_is_registered_by_name() -> None:
    assert all_passes()["lower-layouts"] is LowerLayouts


# ---- the sample, compiled -----------------------------------------------------------------

def test_sample_compiles_with_the_default_pipeline_and_equals_numpy(invoke, tmp_path: Path,
                                                                     ) -> None:
    from tirc.runtime import load

    so = tmp_path / "gemm.so"
    result = invoke(str(SAMPLE), "-o", str(so))
    assert result.exit_code == 0, result.output
    gemm = load(so).gemm_packed_layout
    rng = np.random.default_rng(4)
    for m, k in ((1, 1), (7, 33), (64, 70)):
        a = rng.standard_normal((m, k)).astype("float32")
        b = rng.standard_normal((k, 256)).astype("float32")
        c = np.full((m, 256), np.nan, "float32")
        gemm(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    text = invoke(str(SAMPLE), "--emit", "tir", "-o", "-").output
    assert "B_packed[T.Ramp(k * 16 + j_0 * (K * 16), 1, 16)]" in text


def test_match_buffer_with_its_own_layout_is_an_error() -> None:
    text = """
@T.prim_func
def view(A: T.Buffer((4, 16), "float32")):
    for i in range(4):
        with T.block("row"):
            vi = T.axis.remap("S", [i])
            R = T.match_buffer(A[vi, 0:16], (16,), "float32", layout="S[16:1]")
            for j in range(16):
                R[j] = T.float32(0)
"""
    assert compile_error(text) == ("lower-layouts: match_buffer 'R' of block 'row' has a "
                                   "layout; only allocated and parameter buffers can have one")
