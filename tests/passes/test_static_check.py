"""static-check: what it proves wrong (each message exact, at its place), and that it leaves
valid programs alone: guarded, split, padded, triangular and symbolic accesses, parallel loops
over independent iterations, and every program of the differential generator."""

from __future__ import annotations

import pytest
from difftest.loop_programs import random_loop_program
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.passes.pass_base import PassContext
from tirc.passes.registry import all_passes
from tirc.passes.static_check.static_check_pass import StaticCheck, check_function


def messages(text: str) -> list[str]:
    """Each diagnostic of the module as `severity: message`."""
    mod = parse(text)
    return [f"{d.severity}: {d.message}" for f in mod.functions.values()
            for d in check_function(f)]


def test_registered_under_its_name() -> None:
    assert all_passes()["static-check"] is StaticCheck


def loop_func(params: str, body: str) -> str:
    lines = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"@T.prim_func\ndef f({params}):\n{lines}\n"


F16 = 'A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")'
SYM = 'a: T.handle, b: T.handle'
TILES = 'A: T.Buffer((4, 3), "float32"), B: T.Buffer((4, 3), "float32")'
SYM_BUFFERS = '''n = T.int64()
A = T.match_buffer(a, (n,), "float32")
B = T.match_buffer(b, (n,), "float32")
'''

ERRORS = [
    ("modulo", 'A: T.Buffer((16,), "float32"), B: T.Buffer((32,), "float32")', """
for i in range(32):
    with T.block("B"):
        vi = T.axis.spatial(32, i)
        B[vi] = A[(vi * 7) % 32]
""", "error: out-of-bounds read of A[vi * 7 % 32]: the index in dimension 0 reaches 31 at "
     "i = 9, past the end of 'A' of shape (16,)"),
    ("far", 'A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")', """
for i, j in T.grid(16, 16):
    with T.block("B"):
        vi, vj = T.axis.remap("SS", [i, j])
        B[vi + 4000, vj] = A[vi, vj]
""", "error: out-of-bounds write to B[vi + 4000, vj]: the index in dimension 0 reaches 4015 "
     "at i = 15, past the end of 'B' of shape (16, 16)"),
    ("negative", F16, """
for i in range(16):
    with T.block("B"):
        vi = T.axis.spatial(16, i)
        B[vi] = A[vi - 100000000]
""", "error: out-of-bounds read of A[vi - 100000000]: the index in dimension 0 reaches "
     "-100000000 at i = 0, before the start of 'A' of shape (16,)"),
    ("symbolic", SYM, SYM_BUFFERS + """
for i in range(n):
    B[i] = A[i + 1]
""", "error: out-of-bounds read of A[i + T.int64(1)]: the index in dimension 0 reaches n at "
     "i = n - T.int64(1), past the end of 'A' of shape (n,)"),
    ("symbolic_too_big_to_enumerate", 'A: T.Buffer((1024, 1024), "float32")', """
for i, j in T.grid(1024, 1024):
    A[i, j + 1] = T.float32(0)
""", "error: out-of-bounds write to A[i, j + 1]: the index in dimension 1 reaches 1024 at "
     "j = 1023, past the end of 'A' of shape (1024, 1024)"),
    ("guard_too_weak", F16, """
for i in range(16):
    if i < 15:
        B[i] = A[i + 2]
""", "error: out-of-bounds read of A[i + 2]: the index in dimension 0 reaches 16 at i = 14, "
     "past the end of 'A' of shape (16,)"),
    ("select_evaluates_both_sides", F16, """
for i in range(16):
    B[i] = T.Select(i < 15, A[i + 1], T.float32(0))
""", "error: out-of-bounds read of A[i + 1]: the index in dimension 0 reaches 16 at i = 15, "
     "past the end of 'A' of shape (16,)"),
    ("binding", F16, """
for i, j in T.grid(5, 4):
    with T.block("B"):
        v = T.axis.spatial(16, i * 4 + j * 2)
        B[v % 16] = A[v % 16]
""", "error: block 'B': iteration variable 'v' is bound to i * 4 + j * 2, which reaches 22 at "
     "i = 4, j = 3, outside its domain [0, 16)"),
    ("vectorized_reduction", 'A: T.Buffer((16,), "float32"), B: T.Buffer((1,), "float32")', """
for k in T.vectorized(16):
    with T.block("B"):
        vk = T.axis.reduce(16, k)
        with T.init():
            B[0] = T.float32(0)
        B[0] = B[0] + A[vk]
""", 'error: T.vectorized: loop k carries a dependence (it is bound to reduction variable vk '
     'of block "B")'),
    ("shifted_parallel", F16, """
for i in T.parallel(15):
    B[i] = B[i + 1] + A[i]
""", "error: T.parallel: loop i carries a dependence: iteration i = 1 writes B[1], which "
     "iteration i = 0 reads"),
    ("halved_parallel", F16, """
for i in T.parallel(16):
    B[i // 2] = A[i]
""", "error: T.parallel: loop i carries a dependence: iterations i = 0 and i = 1 both write "
     "B[0]"),
    # the index through a let expression (a let statement was seen; T.Let was not evaluated)
    ("let_in_index", F16, """
for i in T.parallel(16):
    B[T.Let(x // 2, where={x: i})] = A[i]
""", "error: T.parallel: loop i carries a dependence: iterations i = 0 and i = 1 both write "
     "B[0]"),
    # a strided view of A's storage written, A read: compared by offset in the storage
    ("through_a_view", 'A: T.Buffer((10,), "int32")', """
V = T.decl_buffer((4,), "int32", data=A.data, strides=[2], elem_offset=3)
for i in T.vectorized(4):
    V[i] = A[2 * i + 1] + 100
""", "error: T.vectorized: loop i carries a dependence: iteration i = 0 writes A.data[3], "
     "which iteration i = 1 reads"),
    ("between_blocks", 'A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), '
     'C: T.Buffer((16,), "float32")', """
for i in T.parallel(15):
    with T.block("B"):
        vi = T.axis.spatial(15, i)
        B[vi] = A[vi]
    with T.block("C"):
        vi = T.axis.spatial(15, i)
        C[vi] = B[vi + 1]
""", 'error: T.parallel: block "C" depends on block "B" (buffer B) across iterations of '
     'loop i'),
    ("missing_init_of_an_intermediate", F16, """
S = T.alloc_buffer((1,), "float32")
for k in range(16):
    with T.block("S"):
        vk = T.axis.reduce(16, k)
        S[0] = S[0] + A[vk]
for i in range(16):
    with T.block("B"):
        vi = T.axis.spatial(16, i)
        B[vi] = S[0]
""", "warning: reduction block 'S' has no T.init and nothing writes 'S' before it: it "
     "accumulates into whatever 'S' holds (the caller's values for an output); add "
     "`with T.init():` to start from a value"),
    ("init_on_a_later_iteration", F16, """
S = T.alloc_buffer((1,), "float32")
for k in range(16):
    with T.block("S"):
        vk = T.axis.reduce(16, k)
        if vk == 3:
            S[0] = T.float32(0)
        S[0] = S[0] + A[vk]
for i in range(16):
    with T.block("B"):
        vi = T.axis.spatial(16, i)
        B[vi] = S[0]
""", "warning: reduction block 'S' has no T.init and nothing writes 'S' before it: it "
     "accumulates into whatever 'S' holds (the caller's values for an output); add "
     "`with T.init():` to start from a value"),
    ("read_of_a_buffer_nothing_writes", F16, """
S = T.alloc_buffer((16,), "float32")
for i in range(16):
    with T.block("B"):
        vi = T.axis.spatial(16, i)
        B[vi] = S[vi] + A[vi]
""", "warning: read of S[vi], which nothing writes: 'S' is allocated by the function and never "
     "stored to, so the values read are undefined"),
    ("int16_index_past_the_end", 'A: T.Buffer((300,), "int32"), B: T.Buffer((300,), "int32")',
     """
for i in T.serial(T.int16(300)):
    B[i + T.int16(1)] = A[i]
""", "error: out-of-bounds write to B[i + T.int16(1)]: the index in dimension 0 reaches 300 at "
     "i = 299, past the end of 'B' of shape (300,)"),
    ("uint8_index_wraps_into_a_race",
     'A: T.Buffer((300,), "int32"), B: T.Buffer((256,), "int32")', """
for i in T.parallel(300):
    B[T.Cast("uint8", i)] = A[i]
""", "error: T.parallel: loop i carries a dependence: iterations i = 0 and i = 256 both write "
     "B[0]"),
    ("init_of_another_element", 'A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")',
     """
for i, k in T.grid(8, 8):
    with T.block("B"):
        vi, vk = T.axis.remap("SR", [i, k])
        if vk == 0:
            B[0] = T.float32(0)
        B[vi] = B[vi] + A[vi, vk]
""", "warning: reduction block 'B' has no T.init and nothing writes 'B' before it: it "
     "accumulates into whatever 'B' holds (the caller's values for an output); add "
     "`with T.init():` to start from a value"),
    ("threads_write_one_element", F16, """
for tx in T.thread_binding(16, thread="threadIdx.x"):
    B[0] = A[tx]
""", "warning: threadIdx.x loop tx: its threads race: every iteration of tx writes B[0] (which "
     "value remains depends on the order the threads run)"),
    ("threads_wrap_onto_each_other", F16, """
for bx in T.thread_binding(2, thread="blockIdx.x"):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        B[bx * 8 + tx % 4] = A[bx * 8 + tx]
""", "warning: threadIdx.x loop tx: its threads race: iterations tx = 0 and tx = 4 both write "
     "B[0] (with bx = 0) (which value remains depends on the order the threads run)"),
    ("blocks_write_one_shared_output", F16, """
for bx in T.thread_binding(2, thread="blockIdx.x"):
    for tx in T.thread_binding(16, thread="threadIdx.x"):
        B[tx] = A[tx] * T.Cast("float32", bx)
""", "warning: blockIdx.x loop bx: its thread blocks race: every iteration of bx writes B[tx] "
     "(which value remains depends on the order the thread blocks run)"),
    ("decl_buffer_read_before_any_store", F16, """
for i in range(16):
    t = T.decl_buffer((1,), "float32", scope="local")
    B[i] = t[0]
""", "warning: read of t[0], which nothing writes: 't' is allocated by the function and never "
     "stored to, so the values read are undefined"),
    ("tiles_matched_to_one_region", TILES, """
for t in T.parallel(2):
    with T.block("tile"):
        vt = T.axis.spatial(2, t)
        T.reads(A[vt * 2:vt * 2 + 2, 0:3])
        T.writes(B[0:2, 0:3])
        Av = T.match_buffer(A[vt * 2:vt * 2 + 2, 0:3], (2, 3), "float32")
        Bv = T.match_buffer(B[0:2, 0:3], (2, 3), "float32")
        for x, y in T.grid(2, 3):
            Bv[x, y] = Av[x, y]
""", "error: T.parallel: loop t carries a dependence: every iteration of t writes B[x, y]"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_diagnosed(case: tuple[str, str, str, str]) -> None:
    _, params, body, message = case
    assert messages(loop_func(params, body)) == [message]


VALID = [
    ("guarded_shift", F16, """
for i in range(16):
    if i + 1 < 16:
        B[i] = A[i + 1]
"""),
    ("padded_read", 'A: T.Buffer((16,), "float32"), B: T.Buffer((18,), "float32")', """
for i in range(18):
    B[i] = T.if_then_else(i >= 1 and i <= 16, A[i - 1], T.float32(0))
"""),
    ("split_with_where", 'A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")', """
for io, ii in T.grid(4, 4):
    with T.block("B"):
        vi = T.axis.spatial(14, io * 4 + ii)
        T.where(io * 4 + ii < 14)
        B[vi] = A[vi]
"""),
    ("triangular", 'A: T.Buffer((16, 16), "float32")', """
for i in range(16):
    for j in range(i):
        A[i, j] = A[j, i]
"""),
    ("symbolic_in_bounds", SYM, SYM_BUFFERS + """
for i in range(n - 1):
    B[i] = A[i + 1]
"""),
    ("data_dependent_guard", 'A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "float32")', """
for i in range(16):
    if A[i] < 16 and A[i] >= 0:
        B[A[i]] = T.float32(1)
"""),
    ("parallel_rows", 'A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")', """
for i in T.parallel(16):
    for k in range(8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
"""),
    ("private_buffer_per_iteration",
     'A: T.Buffer((16, 4), "float32"), B: T.Buffer((16,), "float32")', """
for i in T.parallel(16):
    acc = T.decl_buffer((1,), "float32", scope="local")
    acc[0] = T.float32(0)
    for k in range(4):
        acc[0] = acc[0] + A[i, k]
    B[i] = acc[0]
"""),
    ("parallel_in_place", F16, """
for i in T.parallel(16):
    B[i] = B[i] * A[i]
"""),
    ("init_written_before", 'A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")', """
for i in range(8):
    with T.block("B_init"):
        vi = T.axis.spatial(8, i)
        B[vi] = T.float32(0)
for i, k in T.grid(8, 16):
    with T.block("B"):
        vi, vk = T.axis.remap("SR", [i, k])
        B[vi] = B[vi] + A[vi, vk]
"""),
    ("scratch_written_through_an_alias", F16, """
S = T.alloc_buffer((16,), "float32")
S2 = T.decl_buffer((16,), "float32", data=S.data)
for i in range(16):
    S2[i] = A[i]
for i in range(16):
    B[i] = S[i]
"""),
    ("uint8_index_wraps_back_in_bounds",
     'A: T.Buffer((16,), "float32"), B: T.Buffer((256,), "float32")', """
for i in range(16):
    B[T.Cast("int32", T.Cast("uint8", i * 32))] = A[i]
"""),
    ("scratch_written_through_address_of", F16, """
S = T.alloc_buffer((16,), "float32")
T.evaluate(T.call_extern("int32", "memcpy", T.address_of(S[0]), T.address_of(A[0]), 64))
for i in range(16):
    B[i] = S[i]
"""),
    ("scratch_written_by_a_call", F16, """
S = T.alloc_buffer((16,), "float32")
T.evaluate(T.call_extern("int32", "fill", S.data, 16))
for i in range(16):
    B[i] = S[i]
"""),
    ("scratch_written_through_a_match_buffer", F16, """
S = T.alloc_buffer((16,), "float32")
for i in range(16):
    with T.block("W"):
        vi = T.axis.spatial(16, i)
        T.reads(A[vi])
        T.writes(S[vi])
        W = T.match_buffer(S[vi], (1,), "float32")
        W[0] = A[vi]
for i in range(16):
    B[i] = S[i]
"""),
    ("init_lowered_into_the_block", 'A: T.Buffer((4, 16), "int32"), C: T.Buffer((4, 8), "int32")',
     """
for c, j, k in T.grid(4, 8, 3):
    with T.block("P2"):
        cc, vj, vk = T.axis.remap("SSR", [c, j, k])
        if vk == 0:
            C[cc, vj] = 0
        C[cc, vj] = C[cc, vj] + A[cc, vj + vk]
"""),
    ("scratch_of_a_reduction_block",
     'A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")', """
for i in range(8):
    with T.block("B_init"):
        vi = T.axis.spatial(8, i)
        B[vi] = T.float32(0)
for i, k in T.grid(8, 16):
    with T.block("B"):
        vi, vk = T.axis.remap("SR", [i, k])
        d = T.decl_buffer((1,), "float32", scope="local")
        d[0] = T.float32(0)
        d[0] = d[0] + A[vi, vk] * T.float32(2)
        B[vi] = B[vi] + d[0]
"""),
    # GPU threads: one thread writes the shared result, each writes its own element of shared
    # memory, per-thread (local) and per-block (shared) storage, a copy every thread makes with
    # the same values, and a reduction bound to the threads (a cross-thread reduction)
    ("one_thread_writes_after_a_barrier",
     'A: T.Buffer((64,), "float32"), B: T.Buffer((2,), "float32")', """
S = T.alloc_buffer((32,), scope="shared")
L = T.alloc_buffer((1,), scope="local")
for bx in T.thread_binding(2, thread="blockIdx.x"):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        L[0] = A[bx * 32 + tx]
        S[tx] = L[0]
        T.tvm_storage_sync("shared")
        if tx == 0:
            B[bx] = S[0] + S[31]
"""),
    ("cooperative_copy_of_the_same_values",
     'A: T.Buffer((16,), "float32"), B: T.Buffer((2, 16), "float32")', """
S = T.alloc_buffer((16,), scope="shared")
for bx in T.thread_binding(2, thread="blockIdx.x"):
    for tx in T.thread_binding(4, thread="threadIdx.x"):
        for ax in range(16):
            S[ax] = A[ax]
        T.tvm_storage_sync("shared")
        for j in range(4):
            B[bx, tx * 4 + j] = S[tx * 4 + j]
"""),
    ("reduction_bound_to_threads",
     'A: T.Buffer((8, 32), "float32"), B: T.Buffer((8,), "float32")', """
for i in T.thread_binding(8, thread="blockIdx.x"):
    for k in T.thread_binding(32, thread="threadIdx.x"):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
"""),
    # a store guarded by a test against the largest uint64 (difftest expr seed 41008): the
    ("let_in_index", F16, """
for i in T.parallel(16):
    B[T.Let(15 - x, where={x: i})] = A[T.Let(x * 0 + x, where={x: i})]
"""),
    # the odd elements of A written through a strided view, the even ones read: no two
    # iterations meet (the indices were compared as if both were A's: V[2] and A[2])
    ("disjoint_views", 'A: T.Buffer((10,), "int32")', """
V = T.decl_buffer((4,), "int32", data=A.data, strides=[2], elem_offset=3)
for i in T.vectorized(4):
    V[i] = A[2 * i] + 100
"""),
    # constant does not fit the int64 points; the check crashed with an OverflowError
    ("guard_against_uint64_max", 'B: T.Buffer((7,), "int8")', """
for i in T.unroll(T.int64(7)):
    if T.uint64(18446744073709551615) <= T.Cast("uint64", i):
        B[i] = T.Cast("int8", i)
"""),
    # views of disjoint tiles, of a view, and per thread: the race checks compared the views'
    # own indices (every iteration of t writes Bv[x, y])
    ("disjoint_matched_tiles", TILES, """
for t in T.parallel(2):
    with T.block("tile"):
        vt = T.axis.spatial(2, t)
        T.reads(A[vt * 2:vt * 2 + 2, 0:3])
        T.writes(B[vt * 2:vt * 2 + 2, 0:3])
        Av = T.match_buffer(A[vt * 2:vt * 2 + 2, 0:3], (2, 3), "float32")
        Bv = T.match_buffer(B[vt * 2:vt * 2 + 2, 0:3], (2, 3), "float32", strides=(3, 1))
        Row = T.match_buffer(Bv[1, 0:3], (3,), "float32")
        for x, y in T.grid(2, 3):
            Bv[x, y] = Av[x, y]
        for y in range(3):
            Row[y] = Row[y] + T.float32(1)
"""),
    ("matched_column_per_thread", TILES, """
for tx in T.thread_binding(3, thread="threadIdx.x"):
    with T.block("col"):
        vt = T.axis.spatial(3, tx)
        T.reads(A[0:4, vt])
        T.writes(B[0:4, vt])
        Bv = T.match_buffer(B[0:4, vt], (4,), "float32")
        for x in range(4):
            Bv[x] = A[x, vt]
"""),
]


@pytest.mark.parametrize("case", VALID, ids=[c[0] for c in VALID])
def test_valid_program_is_left_alone(case: tuple[str, str, str]) -> None:
    _, params, body = case
    assert messages(loop_func(params, body)) == []


def test_random_valid_programs_get_no_diagnostic() -> None:
    """Every program of the differential generator is valid: none may be rejected."""
    for seed in range(300):
        func = random_loop_program(seed).func
        found = [d.render() for d in check_function(func)]
        assert not found, f"seed {seed}: {found}"


def test_errors_stop_the_compile_and_warnings_go_to_the_context() -> None:
    bad = parse(loop_func(F16, "for i in range(16):\n    B[i] = A[i + 1]\n"))
    with pytest.raises(CompileError, match="out-of-bounds read of A"):
        StaticCheck()(bad)
    warn = parse(loop_func('A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")', """
for i, k in T.grid(8, 16):
    with T.block("B"):
        vi, vk = T.axis.remap("SR", [i, k])
        B[vi] = B[vi] + A[vi, vk]
"""))
    ctx = PassContext()
    assert StaticCheck()(warn, ctx) is warn
    assert [d.severity for d in ctx.warnings] == ["warning"]
