"""decompose_reduction and rfactor."""

# ruff: noqa: E501 (expected printer output has long lines)
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from lowering_support import ROWSUM_N
from tirc.driver import build
from tirc.frontend import parse
from tirc.runtime import load

MATMUL = '''
@T.prim_func
def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
           C: T.Buffer((16, 16), "float32")):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''

ROWSUM = '''
@T.prim_func
def rowsum(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]
'''

ROWMAX = ROWSUM.replace("rowsum", "rowmax").replace("T.float32(0)", "T.min_value(\"float32\")") \
    .replace("C[vi] + A[vi, vk]", "T.max(C[vi], A[vi, vk])")


def schedule(kernel: str, func: str, body: str) -> str:
    return kernel + f'\n@S.schedule("{func}")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_decompose_reduction(sched):
    r = sched(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        j0, j1 = sch.split(j, factors=[None, 8])
        sch.reorder(i, j0, k, j1)
        init = sch.decompose_reduction(b, k)
        sch.vectorize(j1)
    '''))
    assert r.text("matmul") == '''\
@T.prim_func
def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j_0 in T.grid(16, 2):
        for j_1_init in range(8):
            with T.block("C_init"):
                vi_init = T.axis.spatial(16, i)
                vj_init = T.axis.spatial(16, j_0 * 8 + j_1_init)
                T.reads()
                T.writes(C[vi_init, vj_init])
                C[vi_init, vj_init] = T.float32(0.0)
        for k in range(16):
            for j_1 in T.vectorized(8):
                with T.block("C_update"):
                    vi = T.axis.spatial(16, i)
                    vj = T.axis.spatial(16, j_0 * 8 + j_1)
                    vk = T.axis.reduce(16, k)
                    T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''
    r.check_same("matmul")


def test_decompose_reduction_errors(sched_error):
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        sch.reorder(k, i, j)
        init = sch.decompose_reduction(b, i)
    '''))
    assert "error: decompose_reduction: reduction loop k is outside loop i; the init would run " \
        "once per iteration of it" in msg
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        init = sch.decompose_reduction(b, k)
        again = sch.decompose_reduction(b, k)
    '''))
    assert 'error: decompose_reduction: block "C_update" has no init to decompose' in msg


def test_rfactor(sched):
    r = sched(schedule(ROWSUM, "rowsum", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        k0, k1 = sch.split(k, factors=[None, 4])
        rf = sch.rfactor(k1, 0)
    '''))
    assert r.text("rowsum") == '''\
@T.prim_func
def rowsum(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8,), "float32")):
    C_rf = T.alloc_buffer((4, 8), "float32")
    for i, k_0, k_1 in T.grid(8, 4, 4):
        with T.block("C_rf"):
            vi, vk_0, vk_1 = T.axis.remap("SRS", [i, k_0, k_1])
            T.reads(C_rf[vk_1, vi], A[vi, vk_0 * 4 + vk_1])
            T.writes(C_rf[vk_1, vi])
            with T.init():
                C_rf[vk_1, vi] = T.float32(0.0)
            C_rf[vk_1, vi] = C_rf[vk_1, vi] + A[vi, vk_0 * 4 + vk_1]
    for i, k_1 in T.grid(8, 4):
        with T.block("C"):
            vi, vk_1 = T.axis.remap("SR", [i, k_1])
            T.reads(C_rf[vk_1, vi])
            T.writes(C[vi])
            with T.init():
                C[vi] = T.float32(0.0)
            C[vi] = C[vi] + C_rf[vk_1, vi]
'''
    r.check_same("rowsum")


def test_rfactor_max_then_parallel_partial_loop(sched):
    r = sched(schedule(ROWMAX, "rowmax", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        k0, k1 = sch.split(k, factors=[None, 4])
        rf = sch.rfactor(k1, 1)
        ri, rk0, rk1 = sch.get_loops(rf)
        sch.reorder(rk1, ri, rk0)
        sch.parallel(rk1)
    '''))
    out = r.text("rowmax")
    assert "C_rf = T.alloc_buffer((8, 4), \"float32\")" in out
    assert "C_rf[vi, vk_1] = T.float32(-3.4028234663852886e+38)" in out
    assert "for k_1 in T.parallel(4):" in out
    r.check_same("rowmax")


def test_rfactor_errors(sched_error):
    msg = sched_error(schedule(ROWSUM, "rowsum", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        rf = sch.rfactor(i, 0)
    '''))
    assert 'error: rfactor: loop i is not a reduction loop of block "C"' in msg
    msg = sched_error(schedule(ROWSUM, "rowsum", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        rf = sch.rfactor(k, 3)
    '''))
    assert "error: rfactor: factor_axis 3 is out of range for the 1-d buffer C" in msg
    sub = ROWSUM.replace("C[vi] + A[vi, vk]", "C[vi] - A[vi, vk]")
    msg = sched_error(schedule(sub, "rowsum", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        rf = sch.rfactor(k, 0)
    '''))
    assert 'error: rfactor: block "C" is not a reduction X[...] = X[...] op value with op one ' \
        'of +, *, max, min, or an online softmax merge (whose init, if any, sets its state)' \
        in msg


ONLINE_SOFTMAX = '''
@T.prim_func
def attend(S: T.Buffer((4, 24), "float32"), W: T.Buffer((24, 8), "float32"),
           M: T.Buffer((4,), "float32"), L: T.Buffer((4,), "float32"),
           O: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 24):
        with T.block("attend"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                M[vi] = T.min_value("float32")
                L[vi] = T.float32(0)
                for d in range(8):
                    O[vi, d] = T.float32(0)
            x: T.float32 = S[vi, vj] * T.float32(0.5)
            m_new: T.float32 = T.max(M[vi], x)
            for d in range(8):
                O[vi, d] = O[vi, d] * T.exp(M[vi] - m_new) + T.exp(x - m_new) * W[vj, d]
            L[vi] = L[vi] * T.exp(M[vi] - m_new) + T.exp(x - m_new)
            M[vi] = m_new
'''


def test_rfactor_splits_an_online_softmax(sched):
    """The softmax merge (running max, sum, accumulator) is an associative reduction: rfactor
    gives partial states per part and their merge (split-KV attention)."""
    r = sched(schedule(ONLINE_SOFTMAX, "attend", '''
        b = sch.get_block("attend")
        i, j = sch.get_loops(b)
        jo, ji = sch.split(j, factors=[3, None])
        rf = sch.rfactor(jo, 1)
    '''))
    text = r.text("attend")
    assert 'M_rf = T.alloc_buffer((4, 3), "float32")' in text
    assert 'O_rf = T.alloc_buffer((4, 3, 8), "float32")' in text
    assert "M_rf[vi, vj_0] = T.float32(-3.4028234663852886e+38)" in text
    assert "m_new: T.float32 = T.max(M[vi], M_rf[vi, vj_0])" in text
    assert "L[vi] = L[vi] * T.exp(M[vi] - m_new) + T.exp(M_rf[vi, vj_0] - m_new) * " \
        "L_rf[vi, vj_0]" in text
    r.check_same("attend", rtol=1e-5)


def test_rfactor_of_a_reduction_without_init_merges_into_the_state(sched):
    r = sched(schedule(ROWSUM.replace('''            with T.init():
                C[vi] = T.float32(0)
''', ""), "rowsum", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        ko, ki = sch.split(k, factors=[4, None])
        rf = sch.rfactor(ko, 0)
    '''))
    assert "C_rf[vk_0, vi] = T.float32(0.0)" in r.text("rowsum")
    r.check_same("rowsum")


def test_a_softmax_whose_element_reads_the_state_is_no_reduction(sched_error):
    bad = ONLINE_SOFTMAX.replace("x: T.float32 = S[vi, vj] * T.float32(0.5)",
                                 "x: T.float32 = S[vi, vj] * L[vi]")
    msg = sched_error(schedule(bad, "attend", '''
        b = sch.get_block("attend")
        i, j = sch.get_loops(b)
        rf = sch.rfactor(j, 0)
    '''))
    assert 'rfactor: block "attend" is not a reduction' in msg


TRANSPOSED = '''
@T.prim_func
def tsum(A: T.Buffer((4, 4, 4), "float32"), C: T.Buffer((4, 4), "float32")):
    for i, j, k in T.grid(4, 4, 4):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vj, vi] + A[vi, vj, vk]
'''


def test_an_update_that_reads_another_element_is_no_reduction(sched_error):
    """`C[vi, vj] = C[vj, vi] + ...` reads a different element than it writes: indices are
    compared as the same variables, not as equal up to renaming."""
    msg = sched_error(schedule(TRANSPOSED, "tsum", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        rf = sch.rfactor(k, 0)
    '''))
    assert 'error: rfactor: block "C" is not a reduction' in msg


RFACTOR_GUARDED = '''
    b = sch.get_block("C")
    i, k = sch.get_loops(b)
    k0, k1 = sch.split(k, factors=[None, 16])
    rf = sch.rfactor(k1, 1)
'''


def test_rfactor_of_a_guarded_split_seeds_every_partial_state(sched):
    """Lanes 5..15 of a 5-element row never pass the split's guard, so the rf block's init
    never reaches them: a seed block sets all 16 to the identity before the reduction loop
    (the SDDMM sample's features split by 16 summed stack garbage at 1 and 5 features)."""
    r = sched(schedule(ROWSUM_N, "rowsum_n", RFACTOR_GUARDED))
    out = r.text("rowsum_n")
    seed = out.index('with T.block("C_rf_seed")')
    loop = out.index("for k_0, k_1 in T.grid((n + 15) // 16, 16):")
    assert out.index("for k_1_seed in range(16):") < seed < loop
    assert "C_rf[vi, vk_1] = T.float32(0.0)" in out[seed:loop]
    assert "T.where" not in out[seed:loop]
    for n in (1, 5, 16, 21):
        r.check_same("rowsum_n", sizes={"n": n})


@pytest.mark.parametrize("opt", [0, 3])
def test_rfactor_of_a_guarded_split_compiles_to_the_row_sums(tmp_path: Path, opt: int) -> None:
    src = schedule(ROWSUM_N, "rowsum_n", RFACTOR_GUARDED)
    lib = load(build(parse(src), tmp_path / "rowsum.so", "llvm", opt))
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 15, 16, 17, 33):
        for _ in range(3):
            a = rng.standard_normal((4, n)).astype("float32")
            c = np.full(4, np.nan, dtype="float32")
            lib["rowsum_n"](a, c)
            np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5, atol=1e-5)


DECOMPOSE_K = '''
    b = sch.get_block("C")
    i, k = sch.get_loops(b)
    init = sch.decompose_reduction(b, k)
'''

ROWSUM_WHERE = '''
@T.prim_func
def rowsum_where(a: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (4, 16), "float32")
    C = T.match_buffer(c, (4,), "float32")
    for i, k in T.grid(4, 16):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            T.where(k < n)
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]
'''


def test_an_init_taken_out_of_an_empty_reduction_does_not_run(sched):
    """With n = 0 the block never runs, so neither does its init and C keeps its values (the
    interpreter and -O0 agree); the init block taken out of the loop over n runs only where
    that loop's first point exists: at -O1 and above the default schedule's decomposed init
    set C to 0."""
    r = sched(schedule(ROWSUM_N, "rowsum_n", DECOMPOSE_K))
    out = r.text("rowsum_n")
    init = out.index('with T.block("C_init")')
    assert "T.where(n > 0)" in out[init:out.index('with T.block("C_update")')]
    for n in (0, 3):
        r.check_same("rowsum_n", sizes={"n": n})


def test_an_init_taken_out_keeps_the_predicate_at_the_first_point(sched):
    """`T.where(k < n)` over k in 0..15: the init ran at k = 0, so only where 0 < n."""
    r = sched(schedule(ROWSUM_WHERE, "rowsum_where", DECOMPOSE_K))
    out = r.text("rowsum_where")
    assert "T.where(0 < n)" in out[out.index('with T.block("C_init")'):]
    for n in (0, 1, 5, 16):
        r.check_same("rowsum_where", sizes={"n": n})


def test_rfactor_writes_back_only_where_the_reduction_ran(sched):
    """rfactor's write-back carries the block's init: over n = 0 it must not run either."""
    r = sched(schedule(ROWSUM_N, "rowsum_n", RFACTOR_GUARDED))
    for n in (0, 1):
        r.check_same("rowsum_n", sizes={"n": n})


def test_cache_write_of_a_reduction_over_nothing_copies_nothing(sched):
    """The cache holds nothing over n = 0, so its copy back runs only where the reduction
    ran (the default schedule of a column sum writes such a cache)."""
    r = sched(schedule(ROWSUM_N, "rowsum_n", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        sch.cache_write(b, 0, "local")
        sch.decompose_reduction(b, k)
    '''))
    out = r.text("rowsum_n")
    copy = out[out.index('with T.block("C_local")'):]
    assert "T.where(n > 0)" in copy[:copy.index("C[v0] = C_local[v0]")]
    for n in (0, 3):
        r.check_same("rowsum_n", sizes={"n": n})


COLSUM_N = '''
@T.prim_func
def colsum_n(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 32), "float32")
    C = T.match_buffer(c, (32,), "float32")
    for j, k in T.grid(32, n):
        with T.block("C"):
            vj, vk = T.axis.remap("SR", [j, k])
            with T.init():
                C[vj] = T.float32(0)
            C[vj] = C[vj] + A[vk, vj]
'''


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_a_reduction_over_nothing_leaves_its_output_at_every_level(tmp_path: Path,
                                                                   opt: int) -> None:
    """The unscheduled row and column sums over n = 0, built at each level (from -O1 the
    default schedule rfactors the rows and decomposes them, and gives the columns a cache
    written back): C keeps its values, as in the interpreter."""
    for text, name, shape, width in ((ROWSUM_N, "rowsum_n", lambda n: (4, n), 4),
                                     (COLSUM_N, "colsum_n", lambda n: (n, 32), 32)):
        lib = load(build(parse(text), tmp_path / f"{name}.so", "llvm", opt))
        for n in (0, 7):
            a = np.ones(shape(n), dtype="float32")
            c = np.full(width, 7.0, dtype="float32")
            lib[name](a, c)
            np.testing.assert_array_equal(c, np.full(width, 7.0 if n == 0 else n), err_msg=name)


WRAPPED = '''
@T.prim_func
def wrapped(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 8):
        with T.block("B"):
            vi = T.axis.S(4, i)
            vk = T.axis.R(4, k % 4)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
'''


def test_an_init_that_runs_again_inside_the_loops_stays(sched_error):
    """`vk = k % 4` is 0 at k = 0 and k = 4: the init runs twice per row (TVM's rfactor test
    `rowsum_not_quasi_affine` is another such binding); moving it out of k, or starting the
    partial sums once, would sum all eight elements instead of the last four."""
    for body in ('''
        b = sch.get_block("B")
        i, k = sch.get_loops(b)
        init = sch.decompose_reduction(b, k)
    ''', '''
        b = sch.get_block("B")
        i, k = sch.get_loops(b)
        rf = sch.rfactor(k, 0)
    '''):
        msg = " ".join(sched_error(schedule(WRAPPED, "wrapped", body)).split())
        assert 'the reduction variables of block "B" do not visit their domain\'s minimum ' \
            'once, first, as the loops run (bindings k % 4): its init runs again inside the ' \
            'loops' in msg
    repeated = ROWSUM.replace("for i, k in T.grid(8, 16):", "for i, r, k in T.grid(8, 2, 16):")
    msg = " ".join(sched_error(schedule(repeated, "rowsum", '''
        b = sch.get_block("C")
        i, r, k = sch.get_loops(b)
        init = sch.decompose_reduction(b, r)
    ''')).split())
    assert 'decompose_reduction: loop r feeds no variable of block "C", which repeats its ' \
        'reduction (and init) in it' in msg


def test_a_split_and_a_fused_binding_still_decompose(sched):
    split = sched(schedule(ROWSUM, "rowsum", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        k0, k1 = sch.split(k, factors=[None, 4])
        sch.reorder(k1, k0)
        init = sch.decompose_reduction(b, k1)
    '''))
    split.check_same("rowsum")
    points = sched(schedule(ROWSUM.replace("vi, vk = T.axis.remap(\"SR\", [i, k])",
                                           "vi = T.axis.S(8, i)\n            "
                                           "vk = T.axis.R(16, (k * 5) % 16)"), "rowsum", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        init = sch.decompose_reduction(b, k)
    '''))
    assert 'T.block("C_init")' in points.text("rowsum")
    points.check_same("rowsum")


def test_a_symbolic_reduction_split_by_one_decomposes(sched):
    """`k_0 + k_1` with k_1 of extent 1 and k_0 of extent n is still one pass over k (the
    matmul rule's `unroll_k` of 1 on a symbolic K splits so): the init moves out of k_0."""
    r = sched(schedule(ROWSUM_N, "rowsum_n", '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        k0, k1 = sch.split(k, factors=[None, 1])
        init = sch.decompose_reduction(b, k0)
    '''))
    assert 'T.block("C_init")' in r.text("rowsum_n")
    for n in (0, 1, 9):
        r.check_same("rowsum_n", sizes={"n": n})


@pytest.mark.parametrize("opt", [0, 3])
def test_the_default_schedule_keeps_an_init_that_runs_again(tmp_path: Path, opt: int) -> None:
    lib = load(build(parse(WRAPPED), tmp_path / "wrapped.so", "llvm", opt))
    a = np.arange(32, dtype="float32").reshape(4, 8)
    b = np.full(4, np.nan, dtype="float32")
    lib["wrapped"](a, b)
    np.testing.assert_array_equal(b, a[:, :4].sum(axis=1))


ROWSUM_10 = '''
@T.prim_func
def rowsum10(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10,), "float32")):
    for i, k in T.grid(10, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
'''

# A tail guard `i_0 * 4 + i_1 + i_2 < 10` that mixes the spatial loops with a unit loop the
# bindings no longer use: the init, taken out of that loop, must keep the guard.
UNIT_TAIL = '''
b = sch.get_block("B")
i, k = sch.get_loops(b)
i0, i1, i2 = sch.split(i, factors=[None, 4, 1], preserve_unit_iters=False)
'''


@pytest.mark.parametrize("then", ["sch.decompose_reduction(b, i0)", "sch.blockize(i0)",
                                  "k0, k1 = sch.split(k, factors=[None, 4])\n"
                                  "sch.rfactor(k1, 0)"])
def test_an_init_taken_out_of_a_unit_loop_keeps_the_tail_guard(sched, then):
    """Without the guard, the init (decompose_reduction, blockize) or rfactor's write-back
    ran at i_0 * 4 + i_1 = 10 and 11, past B's 10 elements."""
    r = sched(schedule(ROWSUM_10, "rowsum10", UNIT_TAIL + then))
    out = r.text("rowsum10")
    guarded = "T.where(i_0_init * 4 + i_1_init < 10)" if "rfactor" not in then else \
        "T.where(i_0 * 4 + i_1 < 10)"
    assert guarded in out, out
    r.check_same("rowsum10")


@pytest.mark.parametrize("opt", [0, 3])
def test_a_decomposed_init_under_a_unit_tail_compiles_to_the_row_sums(tmp_path: Path,
                                                                      opt: int) -> None:
    src = schedule(ROWSUM_10, "rowsum10", UNIT_TAIL + "sch.decompose_reduction(b, i0)")
    lib = load(build(parse(src), tmp_path / "rowsum10.so", "llvm", opt))
    a = np.random.default_rng(0).standard_normal((10, 8)).astype("float32")
    out = np.full(10, np.nan, dtype="float32")
    lib["rowsum10"](a, out)
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5, atol=1e-5)
