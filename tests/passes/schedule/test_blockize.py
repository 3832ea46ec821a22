"""blockize and tensorize (against tensor intrinsics declared in the file)."""

# ruff: noqa: E501 (expected printer output has long lines)
from __future__ import annotations

import textwrap

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

MMA4 = '''
@T.prim_func
def mma_desc(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"tensor_intrin": "mma4", "role": "desc"})
    A = T.match_buffer(a, (4, 4), "float32")
    B = T.match_buffer(b, (4, 4), "float32")
    C = T.match_buffer(c, (4, 4), "float32")
    for i, j, k in T.grid(4, 4, 4):
        with T.block("update"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

@T.prim_func
def mma_impl(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"tensor_intrin": "mma4", "role": "impl"})
    sa = T.int32()
    sb = T.int32()
    sc = T.int32()
    A = T.match_buffer(a, (4, 4), "float32", strides=(sa, 1))
    B = T.match_buffer(b, (4, 4), "float32", strides=(sb, 1))
    C = T.match_buffer(c, (4, 4), "float32", strides=(sc, 1))
    for i, k in T.grid(4, 4):
        for j in T.vectorized(4):
            C[i, j] = C[i, j] + A[i, k] * B[k, j]
'''

DOT4 = '''
@T.prim_func
def dot4_desc(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
              C: T.Buffer((1,), "float32")):
    T.func_attr({"tensor_intrin": "dot4", "role": "desc"})
    for k in range(4):
        with T.block("update"):
            vk = T.axis.remap("R", [k])
            C[0] = C[0] + A[vk] * B[vk]

@T.prim_func
def dot4_impl(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
              C: T.Buffer((1,), "float32")):
    T.func_attr({"tensor_intrin": "dot4", "role": "impl"})
    C[0] = C[0] + (A[0] * B[0] + A[1] * B[1] + (A[2] * B[2] + A[3] * B[3]))
'''

MV = '''
@T.prim_func
def mv(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16,), "float32"),
       C: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk] * B[vk]
'''

TILES = '''
b = sch.get_block("C")
i, j, k = sch.get_loops(b)
i0, i1 = sch.split(i, factors=[None, 4])
j0, j1 = sch.split(j, factors=[None, 4])
k0, k1 = sch.split(k, factors=[None, 4])
sch.reorder(i0, j0, k0, i1, j1, k1)
'''

DECOMPOSE_TENSORIZE = '''
init = sch.decompose_reduction(b, k0)
sch.tensorize(i1, "mma4")
'''


def schedule(kernel: str, func: str, body: str) -> str:
    return kernel + f'\n@S.schedule("{func}")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_blockize_moves_init_to_outer_block(sched):
    r = sched(schedule(MATMUL, "matmul", TILES + "o = sch.blockize(i1)"))
    assert r.text("matmul") == '''\
@T.prim_func
def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i_0, j_0, k_0 in T.grid(4, 4, 4):
        with T.block("C_o"):
            vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
            T.reads(C[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4], A[vi_o * 4:vi_o * 4 + 4, vk_o * 4:vk_o * 4 + 4], B[vk_o * 4:vk_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
            T.writes(C[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
            with T.init():
                for i_1_init, j_1_init in T.grid(4, 4):
                    with T.block("C_init"):
                        vi_init = T.axis.spatial(16, vi_o * 4 + i_1_init)
                        vj_init = T.axis.spatial(16, vj_o * 4 + j_1_init)
                        T.reads()
                        T.writes(C[vi_init, vj_init])
                        C[vi_init, vj_init] = T.float32(0.0)
            for i_1, j_1, k_1 in T.grid(4, 4, 4):
                with T.block("C"):
                    vi = T.axis.spatial(16, vi_o * 4 + i_1)
                    vj = T.axis.spatial(16, vj_o * 4 + j_1)
                    vk = T.axis.reduce(16, vk_o * 4 + k_1)
                    T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''
    r.check_same("matmul")


def test_blockize_spatial_only_keeps_inner_init(sched):
    tiles = TILES.replace("sch.reorder(i0, j0, k0, i1, j1, k1)", "sch.reorder(k0, k1, i0, j0, i1, j1)")
    r = sched(schedule(MATMUL, "matmul", tiles + "o = sch.blockize(i1)"))
    out = r.text("matmul")
    assert '''\
        with T.block("C_o"):
            vi_o = T.axis.spatial(4, i_0)
            vj_o = T.axis.spatial(4, j_0)
            vk_o = T.axis.reduce(16, k_0 * 4 + k_1)''' in out
    assert "T.init" in out.split('T.block("C"):')[1]
    r.check_same("matmul")


def test_blockize_needs_one_block(sched_error):
    text = MATMUL.replace('''            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]''', '''\
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            A[vi, vj] = T.float32(1)''')
    msg = sched_error(schedule(text, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        o = sch.blockize(j)
    '''))
    assert "error: blockize: loop j must hold exactly one block, it holds 2" in msg


def test_tensorize_2d_tile(sched):
    r = sched(schedule(MMA4 + MATMUL, "matmul", TILES + DECOMPOSE_TENSORIZE))
    assert "mma_desc" not in r.after and "mma_impl" not in r.after
    assert r.text("matmul") == '''\
@T.prim_func
def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i_0, j_0 in T.grid(4, 4):
        for i_1_init, j_1_init in T.grid(4, 4):
            with T.block("C_init"):
                vi_init = T.axis.spatial(16, i_0 * 4 + i_1_init)
                vj_init = T.axis.spatial(16, j_0 * 4 + j_1_init)
                T.reads()
                T.writes(C[vi_init, vj_init])
                C[vi_init, vj_init] = T.float32(0.0)
        for k_0 in range(4):
            with T.block("C_update_o"):
                vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
                T.reads(C[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4], A[vi_o * 4:vi_o * 4 + 4, vk_o * 4:vk_o * 4 + 4], B[vk_o * 4:vk_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
                T.writes(C[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
                A_1 = T.match_buffer(A[vi_o * 4:vi_o * 4 + 4, vk_o * 4:vk_o * 4 + 4], (4, 4), "float32", strides=(16, 1))
                B_1 = T.match_buffer(B[vk_o * 4:vk_o * 4 + 4, vj_o * 4:vj_o * 4 + 4], (4, 4), "float32", strides=(16, 1))
                C_1 = T.match_buffer(C[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4], (4, 4), "float32", strides=(16, 1))
                for i, k in T.grid(4, 4):
                    for j in T.vectorized(4):
                        C_1[i, j] = C_1[i, j] + A_1[i, k] * B_1[k, j]
'''
    r.check_same("matmul")


def test_tensorize_keeps_outer_init(sched):
    """Without decompose_reduction, blockize moves the init to the outer block; the
    implementation then accumulates onto it."""
    r = sched(schedule(MMA4 + MATMUL, "matmul", TILES + 'sch.tensorize(i1, "mma4")'))
    out = r.text("matmul")
    assert "with T.init():" in out and "C_1[i, j] = C_1[i, j] + A_1[i, k] * B_1[k, j]" in out
    r.check_same("matmul")


def test_tensorize_dot_product_twice(sched):
    """The same intrinsic used at two places: each copy has its own definitions."""
    r = sched(schedule(DOT4 + MV, "mv", '''
        c = sch.get_block("C")
        i, k = sch.get_loops(c)
        ko, ki = sch.split(k, factors=[2, 8])
        kii, kij = sch.split(ki, factors=[2, 4])
        init = sch.decompose_reduction(c, ko)
        sch.tensorize(kij, "dot4")
    '''))
    out = r.text("mv")
    assert "C_1[0] = C_1[0] + (A_1[0] * B_1[0]" in out
    assert 'A_1 = T.match_buffer(A[vi_o, vk_o * 4:vk_o * 4 + 4], (4,), "float32")' in out
    r.check_same("mv")


def test_tensorize_errors(sched_error):
    msg = sched_error(schedule(MMA4 + MATMUL, "matmul", TILES + 'sch.tensorize(i1, "mma8")'))
    assert "error: tensorize: unknown tensor intrinsic 'mma8'" in msg
    with_init = MMA4.replace("            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]", '''\
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]''', 1)
    msg = sched_error(schedule(with_init + MATMUL, "matmul", TILES + DECOMPOSE_TENSORIZE))
    assert 'error: tensorize: block "C_update" has no init, unlike the description of ' \
        '\'mma4\' (decompose_reduction first)' in msg
    bad = MATMUL.replace("A[vi, vk] * B[vk, vj]", "A[vi, vk] * B[vj, vk]")
    msg = sched_error(schedule(MMA4 + bad, "matmul", TILES + DECOMPOSE_TENSORIZE))
    assert 'error: tensorize: block "C_update" does not match the description of \'mma4\': ' \
        'the accesses of B do not follow the description\'s accesses of B' in msg
    short = TILES.replace("k0, k1 = sch.split(k, factors=[None, 4])",
                          "k0, k1 = sch.split(k, factors=[None, 8])")
    msg = sched_error(schedule(MMA4 + MATMUL, "matmul", short + DECOMPOSE_TENSORIZE))
    assert "error: tensorize: loop k_1 ranges over [0, 8), the description's loop k over " \
        "[0, 4)" in msg


def test_blockize_preserve_unit_iters(sched):
    """TVM's meaning: with preserve_unit_iters=False the outer block has no iteration
    variable of extent 1 and no binding mentions a unit loop."""
    body = '''
        b = sch.get_block("C")
        i, k = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[1, None])
        sch.blockize(i1{flag})
    '''
    kept = sched(schedule(MV, "mv", body.format(flag="")))
    assert 'vi_o = T.axis.remap("S", [i_0])' in kept.text("mv")
    assert "vi = T.axis.spatial(8, vi_o * 8 + i_1)" in kept.text("mv")
    kept.check_same("mv")
    dropped = sched(schedule(MV, "mv", body.format(flag=", preserve_unit_iters=False")))
    out = dropped.text("mv")
    assert "vi_o" not in out
    assert '''\
    for i_0 in range(1):
        with T.block("C_o"):
            T.reads(C[0:8], A[0:8, 0:16], B[0:16])
            T.writes(C[0:8])''' in out
    assert 'vi, vk = T.axis.remap("SR", [i_1, k])' in out
    dropped.check_same("mv")


def test_blockize_guards_outer_block_of_mixed_predicate(sched):
    """A split's tail guard that mixes the blockized loop with outer ones stays inside; the
    outer block gets a guard keeping its binding in its domain (found by the schedule fuzzer,
    tests/difftest/schedule_programs.py)."""
    text = '''
@T.prim_func
def f(A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")):
    for i in range(2):
        with T.block("B"):
            vi = T.axis.spatial(2, i)
            B[vi] = A[vi] + T.float32(1)
'''
    r = sched(schedule(text, "f", '''
        b = sch.get_block("B")
        (i,) = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[4, None])
        o = sch.blockize(i1)
    '''))
    assert '''\
        with T.block("B_o"):
            vi_o = T.axis.spatial(2, i_0)
            T.where(i_0 < 2)''' in r.text("f")
    assert "T.where(i_0 + i_1 < 2)" in r.text("f")
    r.check_same("f")
