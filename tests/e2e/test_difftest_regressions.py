"""Minimal programs reduced from what the differential run (tests/difftest) found, each
compiled at -O0..-O3 and compared with the reference interpreter.

The old hand-built default schedule computed reductions of a product into a vector (a
matrix-vector product, a row norm) wrongly at -O1 and above, or crashed; the schedule rules
(issue 15) replaced it, and these programs guard that they stay right.
The GPU programs also go through the GPU pipeline (its lowered IR in the GPU interpreter).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from difftest.builds import compile_module, interpret_loop, loop_labels, run_loop
from difftest.harness import Build, Checker, Program, format_report, loop_args, text_programs
from tirc.frontend import parse

MATVEC = """
@T.prim_func
def matvec(A: T.Buffer((8, 4), "float32"), x: T.Buffer((4,), "float32"),
           y: T.Buffer((8,), "float32")):
    with T.block("root"):
        for i, k in T.grid(8, 4):
            with T.block("y"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    y[vi] = T.float32(0)
                y[vi] = y[vi] + A[vi, vk] * x[vk]
"""

ROW_DOT = """
@T.prim_func
def row_dot(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32"),
            y: T.Buffer((8,), "float32")):
    with T.block("root"):
        for i, k in T.grid(8, 4):
            with T.block("y"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    y[vi] = T.float32(0)
                y[vi] = y[vi] + A[vi, vk] * B[vi, vk]
"""

ROW_NORM = """
@T.prim_func
def row_norm(X: T.Buffer((16, 100), "float32"), Y: T.Buffer((16, 100), "float32")):
    S = T.alloc_buffer((16,), "float32")
    for i, k in T.grid(16, 100):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(1e-6)
            S[vi] = S[vi] + X[vi, vk] * X[vi, vk]
    for i, j in T.grid(16, 100):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = X[vi, vj] / T.sqrt(S[vi])
"""

HALF_DOT = """
@T.prim_func
def half_dot(A: T.Buffer((8, 256), "float16"), B: T.Buffer((256,), "float16"),
             C: T.Buffer((8,), "float16")):
    acc = T.alloc_buffer((8,), "float32")
    for i, k in T.grid(8, 256):
        with T.block("acc"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                acc[vi] = T.float32(0)
            acc[vi] = acc[vi] + T.cast(A[vi, vk], "float32") * T.cast(B[vk], "float32")
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = T.cast(acc[vi], "float16")
"""

# Seed 18: the GPU matmul rule's tiles of 16 pass the end of 24 rows and columns; compute_at
# kept only one of the cache reads' two tail guards (they differ only in their variables), so
# the copy of B read past its last column (B[23, 24], past the end of B).
MATMUL_TAIL = """
@T.prim_func
def matmul_tail(A: T.Buffer((24, 24), "int32"), B: T.Buffer((24, 24), "int32"),
                C: T.Buffer((24, 24), "int32")):
    for i, j, k in T.grid(24, 24, 24):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""

# Seed 47: a matmul of 4 x n by the GPU rule: its shared output tile stayed full-size
# (4 x n, a symbolic size the GPU refuses) because compact-buffers did not see that the
# blockIdx loop of one iteration around it is 0.
MATMUL_FEW_ROWS = """
@T.prim_func
def matmul_few_rows(A: T.Buffer((4, 1), "float32"), b: T.handle, c: T.handle):
    n = T.int64()
    B = T.match_buffer(b, (1, n), "float32")
    C = T.match_buffer(c, (4, n), "float32")
    for i, j, k in T.grid(4, n, 1):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""

# Seeds 100000 and 100137: a matmul over a symbolic reduction n by the GPU rule: its shared
# tile of B (16 rows of k per step) stayed n x 4, a symbolic size the GPU refuses, because
# compact-buffers bounded the copy's rows without the guard that stops the threads past the
# tile (256 threads copy its 64 elements).
MATMUL_SYMBOLIC_K = """
@T.prim_func
def matmul_symbolic_k(a: T.handle, b: T.handle, C: T.Buffer((8, 4), "float32")):
    n = T.int64()
    A = T.match_buffer(a, (8, n), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    for i, j, k in T.grid(8, 4, n):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""

# Graph seeds 100206 and 100229: `R.min(x, axis=0)` of a vector, a reduction with no spatial
# loop: the GPU rule shared it over threads but bound no blockIdx loop, so its code stayed in
# the host part of the function, which can only launch kernels.
FULL_MIN = """
@T.prim_func
def full_min(A: T.Buffer((10,), "float32"), B: T.Buffer((1,), "float32")):
    for k in range(10):
        with T.block("B"):
            vk = T.axis.reduce(10, k)
            with T.init():
                B[0] = T.max_value("float32")
            B[0] = T.min(B[0], A[vk])
"""

# Seed 100802: a matmul whose result a column minimum reduces. The GPU matmul rule moved the
# reduction under its tile with the epilogue and bound its reduction loop to threadIdx.x inside
# threadIdx.y, which no GPU lowering takes; the epilogue now stops at a reduction.
MATMUL_THEN_COLUMN_MIN = """
@T.prim_func
def matmul_then_column_min(A: T.Buffer((16, 15), "float32"), B: T.Buffer((15, 24), "float32"),
                           O: T.Buffer((24,), "float32")):
    C = T.alloc_buffer((16, 24), "float32")
    for i, j, k in T.grid(16, 24, 15):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for j, i in T.grid(24, 16):
        with T.block("O"):
            vj, vi = T.axis.remap("SR", [j, i])
            with T.init():
                O[vj] = T.float32(1e30)
            O[vj] = T.min(O[vj], C[vi, vj])
"""

# From TVM's tests (tirc's own TVM-corpus comparison): the default schedule's
# decompose_reduction left the reduction variable in the init (`B[vk] = 0`: vk is undefined
# outside the k loop) and dropped the match buffer the init writes through.
INIT_USES_REDUCTION_VAR = """
@T.prim_func
def init_uses_reduction_var(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(16, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vk] = T.float32(0)
            B[vk] = B[vk] + A[vi, vk]
"""

INIT_THROUGH_MATCH_BUFFER = """
@T.prim_func
def init_through_match_buffer(A: T.Buffer((8, 8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i0, j0 in T.grid(8, 8):
        for k0 in T.serial(4, 8):
            with T.block():
                i, j, k = T.axis.remap("SRR", [i0, j0, k0])
                BB = T.match_buffer(B[i], ())
                AA = T.match_buffer(A[i, 0:8, 0:8], (8, 8))
                with T.init():
                    BB[()] = T.float32(0)
                BB[()] += AA[j, k]
"""

# From TVM's lower_match_buffer tests (a TVM-corpus sweep): match buffers declaring no strides
# over regions that are not contiguous (4 x 1 x 2 of a 16 x 16 x 16 buffer). TVM's
# LowerMatchBuffer and lower-blocks index them through the source; the interpreter refused
# them ("the region is not contiguous"), so no build was compared with it.
MATCH_STRIDED_REGION = """
@T.prim_func
def match_strided_region(A: T.Buffer((16, 16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j, k in T.grid(4, 16, 8):
        with T.block():
            T.reads(C[i * 4:i * 4 + 4, k * 2:k * 2 + 2])
            T.writes(A[i * 4:i * 4 + 4, j, k * 2:k * 2 + 2])
            sub_A = T.match_buffer(A[i * 4:i * 4 + 4, j, k * 2:k * 2 + 2], (4, 1, 2),
                                   offset_factor=1)
            sub_C = T.match_buffer(C[i * 4:i * 4 + 4, k * 2:k * 2 + 2], (4, 2), offset_factor=1)
            for ii, kk in T.grid(4, 2):
                sub_A[ii, 0, kk] += sub_C[ii, kk]
"""

# Loop seed 506199: a matmul C, its transpose Ct and max(Ct, C). compute_inline of Ct kept the
# consumer's declared read C[vi, vj] and dropped the inlined C[vj, vi], so the default schedule
# moved the max under C's (i, j) loop, where it read C[j, i] before it was computed (-O1 and up).
MAX_OF_MATMUL_AND_TRANSPOSE = """
@T.prim_func
def max_of_matmul_and_transpose(A: T.Buffer((24, 24), "float32"),
                                O: T.Buffer((24, 24), "float32")):
    C = T.alloc_buffer((24, 24), "float32")
    Ct = T.alloc_buffer((24, 24), "float32")
    for i, j, k in T.grid(24, 24, 24):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * A[vk, vj]
    for i, j in T.grid(24, 24):
        with T.block("Ct"):
            vi, vj = T.axis.remap("SS", [i, j])
            Ct[vi, vj] = C[vj, vi]
    for i, j in T.grid(24, 24):
        with T.block("O"):
            vi, vj = T.axis.remap("SS", [i, j])
            O[vi, vj] = T.max(Ct[vi, vj], C[vi, vj])
"""

# Loop seed 503707: a row dot product S, an elementwise O7 of it, and a matmul of O7. The GPU
# matmul rule put O7's shared-memory copy in the matmul's kernel; the norm rule, taking S, then
# pulled that copy into S's kernel, so the matmul read a shared buffer no block of its kernel
# wrote (NaN). Rules now leave blocks an earlier rule scheduled, and gpu-storage-scope refuses a
# kernel that reads a shared buffer it never writes.
MATMUL_OF_ROW_DOT_EPILOGUE = """
@T.prim_func
def matmul_of_row_dot_epilogue(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                               W: T.Buffer((16, 16), "float32"),
                               O: T.Buffer((16, 16), "float32")):
    S = T.alloc_buffer((16,), "float32")
    E = T.alloc_buffer((16, 16), "float32")
    for i, k in T.grid(16, 16):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk] * B[vi, vk]
    for i, j in T.grid(16, 16):
        with T.block("E"):
            vi, vj = T.axis.remap("SS", [i, j])
            E[vi, vj] = T.min(A[vi, vj] * B[vi, vj], S[vj])
    for i, j, k in T.grid(16, 16, 16):
        with T.block("O"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                O[vi, vj] = T.float32(0)
            O[vi, vj] = O[vi, vj] + E[vi, vk] * W[vk, vj]
"""

# Found in review of that fix: a column sum y, a matrix-vector product of y, and 2 * y. The GPU
# matvec rule, scheduled first, inlined the column sum's write-back into the matvec because it
# saw one consumer of y (2 * y, already placed by an earlier rule, was left out of the count),
# so the later kernel read y's register accumulator. A write-back is inlined only when no block
# reads it besides the one it is inlined into.
COLUMN_SUM_MATVEC_AND_SCALE = """
@T.prim_func
def column_sum_matvec_and_scale(A: T.Buffer((16, 24), "float32"),
                                B: T.Buffer((8, 24), "float32"), V: T.Buffer((8,), "float32"),
                                Z: T.Buffer((24,), "float32")):
    y = T.alloc_buffer((24,), "float32")
    for j, i in T.grid(24, 16):
        with T.block("R"):
            vj, vi = T.axis.remap("SR", [j, i])
            with T.init():
                y[vj] = T.float32(0)
            y[vj] = y[vj] + A[vi, vj]
    for r, j in T.grid(8, 24):
        with T.block("MV"):
            vr, vj = T.axis.remap("SR", [r, j])
            with T.init():
                V[vr] = T.float32(0)
            V[vr] = V[vr] + B[vr, vj] * y[vj]
    for j in range(24):
        with T.block("E"):
            vj = T.axis.spatial(24, j)
            Z[vj] = y[vj] * T.float32(2)
"""

# A strided view of a parameter's storage at an offset (hand-written probe of the features the
# generators did not make): the kernel declared its parameter as the view's 18 elements, the
# launch passed all 24 of A, and the GPU interpreter refused the call.
STRIDED_VIEW = """
@T.prim_func
def strided_view(A: T.Buffer((4, 6), "float32"), B: T.Buffer((12,), "float32")):
    V = T.decl_buffer((3, 4), "float32", data=A.data, strides=[6, 1], elem_offset=2)
    for i, j in T.grid(3, 4):
        B[i * 4 + j] = V[i, j] + T.float32(1)
"""

# Bits of a float read as int32, scalar and vector, under `^`, `~` and `|` with the sign bit
# (hand-written probe): the interpreter's reinterpret gave a numpy int32, not a Python int,
# and its vector `^`/`~`/`|` wrapped numpy int32 lanes as Python ints; both raised
# OverflowError where the compiled code was right.
SIGN_FLIP = """
@T.prim_func
def sign_flip(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32"),
              C: T.Buffer((16,), "float32"), D: T.Buffer((16,), "int32")):
    for i in range(4):
        for j in range(4):
            B[i * 4 + j] = T.reinterpret("int32", A[i * 4 + j]) ^ T.int32(-2147483648)
        C[i * 4:i * 4 + 4] = T.reinterpret("float32x4", T.reinterpret(
            "int32x4", A[i * 4:i * 4 + 4]) ^ T.Broadcast(T.int32(-2147483648), 4))
        D[i * 4:i * 4 + 4] = ~T.reinterpret("int32x4", A[i * 4:i * 4 + 4]) | T.Broadcast(
            T.int32(-2147483648), 4)
"""

# Gathers in vectorized loops: two loads of A under complementary conditions (hand-written
# probe), and from `expr` seed 100353 a gather of float64 feeding a uint64 product. At -O1 the
# loops kept LLVM's forced vectorize hint, LLVM's cost model declined the gathers, and it
# printed "warning: loop not vectorized" on the user's terminal.
GATHERS = """
@T.prim_func
def guarded_gather(A: T.Buffer((8,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.vectorized(16):
        B[i] = T.if_then_else(i < 8, A[i], T.float32(0)) + T.if_then_else(
            i >= 8, A[i % 8], T.float32(1))

@T.prim_func
def gather_product(A: T.Buffer((16,), "float64"), B: T.Buffer((16,), "uint64")):
    for i in T.vectorized(16):
        B[i] = T.Cast("uint64", i) * T.uint64(10) * T.Cast("uint64", i) ^ T.Cast(
            "uint64", T.Cast("bool", A[i * 11 % 16]))
"""

# A vectorized loop calling libm-only math and a C function (hand-written probe): at -O1 it
# kept the forced vectorize hint, LLVM cannot widen those calls, and printed "warning: loop not
# vectorized" twice.
SCALAR_CALLS = """
@T.prim_func
def scalar_calls(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in T.vectorized(64):
        B[i] = T.sinh(A[i]) + T.atan2(A[i], T.float32(2)) + T.call_extern("float32", "expf", A[i])
"""

# From `schedule` seed 100233: compute_at of a transpose under the tail of a split reduction
# whose reads of it are gathered (T6[Idx[vi, vj] % 4, vk]). The moved block's bounds read Idx
# at vj = ko * 3 + ki in every iteration, also the two the split's guard skips, past Idx's 4
# columns; it now runs only where a consumer does.
GATHER_SPLIT = """
@T.prim_func
def gather_split(A: T.Buffer((4, 4), "float32"), Idx: T.Buffer((2, 4), "int32"),
                 B: T.Buffer((2, 4), "float32")):
    T6 = T.alloc_buffer((4, 4), "float32")
    for i0, i1 in T.grid(4, 4):
        with T.block("t"):
            vi, vj = T.axis.remap("SS", [i0, i1])
            T6[vi, vj] = A[vj, vi]
    for i0, i1, ko, ki in T.grid(2, 4, 2, 3):
        with T.block("c"):
            vi = T.axis.spatial(2, i0)
            vk = T.axis.spatial(4, i1)
            vj = T.axis.reduce(4, ko * 3 + ki)
            T.where(ko * 3 + ki < 4)
            with T.init():
                B[vi, vk] = T.float32(0)
            B[vi, vk] = B[vi, vk] + T6[Idx[vi, vj] % 4, vk]


@S.schedule("gather_split", target="llvm")
def _(sch):
    t = sch.get_block("t")
    c = sch.get_block("c")
    i0, i1, ko, ki = sch.get_loops(c)
    sch.compute_at(t, ki)
"""

GPU_PROGRAMS = {"matmul_tail": (MATMUL_TAIL, {}), "matmul_few_rows": (MATMUL_FEW_ROWS, {"n": 5}),
                "matmul_symbolic_k": (MATMUL_SYMBOLIC_K, {"n": 37}), "full_min": (FULL_MIN, {}),
                "matmul_then_column_min": (MATMUL_THEN_COLUMN_MIN, {}),
                "matmul_of_row_dot_epilogue": (MATMUL_OF_ROW_DOT_EPILOGUE, {}),
                "column_sum_matvec_and_scale": (COLUMN_SUM_MATVEC_AND_SCALE, {}),
                "strided_view": (STRIDED_VIEW, {})}

PROGRAMS = {
    "matvec": pytest.param(MATVEC, id="matvec"),
    "row_dot": pytest.param(ROW_DOT, id="row_dot"),
    "row_norm": pytest.param(ROW_NORM, id="row_norm"),
    "half_dot": pytest.param(HALF_DOT, id="half_dot"),
    "init_uses_reduction_var": pytest.param(INIT_USES_REDUCTION_VAR, id="init_uses_reduction_var"),
    "init_through_match_buffer": pytest.param(INIT_THROUGH_MATCH_BUFFER,
                                              id="init_through_match_buffer"),
    "max_of_matmul_and_transpose": pytest.param(MAX_OF_MATMUL_AND_TRANSPOSE,
                                                id="max_of_matmul_and_transpose"),
    "match_strided_region": pytest.param(MATCH_STRIDED_REGION, id="match_strided_region"),
    "sign_flip": pytest.param(SIGN_FLIP, id="sign_flip"),
}


@pytest.mark.parametrize("text", list(PROGRAMS.values()))
def test_minimal_program_agrees_at_every_level(text: str, tmp_path: Path) -> None:
    mod = parse(text)
    programs = text_programs(text, {n: loop_args(mod[n], {}) for n in mod.functions})
    checker = Checker(tmp_path, compile_module, interpret_loop, run_loop, loop_labels)
    report = checker.check(programs, [Build(level) for level in (0, 1, 2, 3)])
    assert not report.findings, format_report(report, "minimal program")


def test_minimal_programs_are_right_at_o0(tmp_path: Path) -> None:
    """The reference itself is right: each program at -O0 equals numpy."""
    rng = np.random.default_rng(0)
    x = (rng.integers(-32, 33, (16, 100)) / 8).astype(np.float32)
    y = np.zeros_like(x)
    interpret_loop(parse(ROW_NORM), "row_norm", [x, y])
    np.testing.assert_allclose(y, x / np.sqrt((x * x).sum(1, keepdims=True) + 1e-6), rtol=1e-5)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = np.full(8, 7, np.float32)
    interpret_loop(parse(INIT_USES_REDUCTION_VAR), "init_uses_reduction_var", [a, b])
    want = a.sum(0) + 7  # only B[0] is initialised (at vk == 0, once per row i), so it ends
    want[0] = a[-1, 0]   # as the last row's value; the others accumulate onto B
    np.testing.assert_allclose(b, want, rtol=1e-5)
    a3 = rng.standard_normal((8, 8, 8)).astype(np.float32)
    b = np.full(8, 7, np.float32)
    interpret_loop(parse(INIT_THROUGH_MATCH_BUFFER), "init_through_match_buffer", [a3, b])
    np.testing.assert_allclose(b, a3[:, :, 4:].sum((1, 2)), rtol=1e-5)
    a16 = rng.integers(-4, 5, (16, 16, 16)).astype(np.float32)
    c16 = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    want16 = a16 + c16[:, None, :]
    interpret_loop(parse(MATCH_STRIDED_REGION), "match_strided_region", [a16, c16])
    np.testing.assert_array_equal(a16, want16)


@pytest.mark.parametrize("name", list(GPU_PROGRAMS))
def test_minimal_gpu_program_agrees(name: str, tmp_path: Path) -> None:
    """The GPU pipeline's lowered IR (GPU interpreter) and -O0..-O3 equal the interpreter."""
    text, sizes = GPU_PROGRAMS[name]
    mod = parse(text)
    programs = text_programs(text, {n: loop_args(mod[n], sizes) for n in mod.functions})
    checker = Checker(tmp_path, compile_module, interpret_loop, run_loop, loop_labels)
    builds = [Build(level) for level in (0, 1, 2, 3)] + [Build(2, gpu=True)]
    report = checker.check(programs, builds)
    assert not report.findings, format_report(report, "minimal program")


def test_sign_flip_is_right_in_the_interpreter() -> None:
    """The reference's bit operations on reinterpreted floats equal numpy's."""
    a = (np.random.default_rng(1).integers(-32, 33, 16) / 8).astype(np.float32)
    b, c, d = np.zeros(16, np.int32), np.zeros(16, np.float32), np.zeros(16, np.int32)
    interpret_loop(parse(SIGN_FLIP), "sign_flip", [a, b, c, d])
    bits = a.view(np.int32)
    np.testing.assert_array_equal(b, bits ^ np.int32(-2**31))
    np.testing.assert_array_equal(c.view(np.int32), (-a).view(np.int32))
    np.testing.assert_array_equal(d, ~bits | np.int32(-2**31))


def test_gathers_compile_without_llvm_warnings(capfd: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    """Every level agrees with the interpreter, which equals numpy, and LLVM prints nothing."""
    mod = parse(GATHERS)
    programs = text_programs(GATHERS, {n: loop_args(mod[n], {}) for n in mod.functions})
    checker = Checker(tmp_path, compile_module, interpret_loop, run_loop, loop_labels)
    report = checker.check(programs, [Build(level) for level in (0, 1, 2, 3)])
    assert not report.findings, format_report(report, "minimal program")
    assert "warning" not in capfd.readouterr().err
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(16, np.float32)
    interpret_loop(mod, "guarded_gather", [a, b])
    np.testing.assert_array_equal(b, np.concatenate([a + 1, a]))


def test_scalar_calls_compile_without_llvm_warnings(capfd: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    """Every level equals numpy (within float32 rounding of libm), and LLVM prints nothing."""
    a = (np.arange(64, dtype=np.float32) - 32) / 8
    want = np.sinh(a) + np.arctan2(a, np.float32(2)) + np.exp(a)
    for level in (0, 1, 2, 3):
        lib = compile_module(parse(SCALAR_CALLS), Build(level), tmp_path / f"o{level}")
        [got] = run_loop(lib, [("scalar_calls", [a, np.zeros(64, np.float32)], [a, want])])[0][1:]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert "warning" not in capfd.readouterr().err


def test_compute_at_with_a_gathered_region_under_a_split_tail(tmp_path: Path) -> None:
    """The scheduled function (interpreted, -O0, -O3) equals the unscheduled one, which equals
    numpy, and the moved transpose runs under the split's guard."""
    from tirc.passes.schedule.apply import ApplySchedules

    mod = parse(GATHER_SPLIT)
    func = mod["gather_split"]
    program = Program(0, "gather_split", func, loop_args(func, {}), schedule=mod.schedules[0])
    checker = Checker(tmp_path, compile_module, interpret_loop, run_loop, loop_labels)
    report = checker.check([program], [Build(0, scheduled=True), Build(0), Build(3)])
    assert not report.findings, format_report(report, "minimal program")
    moved = ApplySchedules()(mod).script()
    guarded = r'with T.block\("t"\):\n(.*\n){0,3} +T.where\(ko \* 3 \+ ki < 4\)'
    assert re.search(guarded, moved), moved
    rng = np.random.default_rng(2)
    a = rng.integers(-8, 9, (4, 4)).astype(np.float32)
    idx = rng.integers(-8, 9, (2, 4)).astype(np.int32)
    b = np.zeros((2, 4), np.float32)
    interpret_loop(mod, "gather_split", [a, idx, b])
    np.testing.assert_array_equal(b, a.T[idx % 4].sum(axis=1))
