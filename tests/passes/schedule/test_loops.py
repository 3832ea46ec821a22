"""Loop primitives: split, fuse, reorder, parallel, vectorize, unroll, bind, annotate."""

# ruff: noqa: E501 (expected printer output has long lines)
from __future__ import annotations

import textwrap

import pytest

ADD = '''
@T.prim_func
def add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] + T.float32(1)
'''

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

# Two blocks under one loop nest: the second reads what the first wrote one row earlier.
SHIFTED = '''
@T.prim_func
def shifted(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8), "float32")
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[T.max(vi - 1, 0), vj]
'''


def schedule(kernel: str, func: str, body: str) -> str:
    return kernel + f'\n@S.schedule("{func}")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_split_exact(sched):
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 4])
    '''))
    assert r.text("add") == '''\
@T.prim_func
def add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i_0, i_1 in T.grid(4, 4):
        with T.block("B"):
            vi = T.axis.spatial(16, i_0 * 4 + i_1)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] + T.float32(1.0)
'''
    r.check_same("add")


def test_split_guarded_tail(sched):
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[3, None])
    '''))
    assert r.text("add") == '''\
@T.prim_func
def add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i_0, i_1 in T.grid(3, 6):
        with T.block("B"):
            vi = T.axis.spatial(16, i_0 * 6 + i_1)
            T.where(i_0 * 6 + i_1 < 16)
            T.reads(A[vi])
            T.writes(B[vi])
            B[vi] = A[vi] + T.float32(1.0)
'''
    r.check_same("add")


def test_split_three_ways_with_larger_product(sched):
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        a, b2, c = sch.split(i, factors=[3, 2, 3])
    '''))
    assert "for i_0, i_1, i_2 in T.grid(3, 2, 3):" in r.text("add")
    assert "T.where((i_0 * 2 + i_1) * 3 + i_2 < 16)" in r.text("add") or \
        "T.where(i_0 * 6 + i_1 * 3 + i_2 < 16)" in r.text("add")
    r.check_same("add")


def test_split_symbolic_extent(sched):
    text = '''
@T.prim_func
def scale(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi] * T.float32(3)
'''
    r = sched(schedule(text, "scale", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 8])
    '''))
    out = r.text("scale")
    assert "for i_0, i_1 in T.grid((n + 7) // 8, 8):" in out
    assert "T.where(i_0 * 8 + i_1 < n)" in out
    for n in (1, 13, 16):
        r.check_same("scale", sizes={"n": n}, seeds=(0,))


def test_split_errors(sched_error):
    def err(body: str) -> str:
        return sched_error(schedule(ADD, "add", 'b = sch.get_block("B")\ni, = sch.get_loops(b)\n'
                                    + body))
    assert "sched.tir:13:5: error: split: factors [3, 5] do not multiply to the loop extent " \
        "16" in err("x, y = sch.split(i, factors=[3, 5])")
    assert "error: split: at most one factor may be None, got [None, None]" in \
        err("x, y = sch.split(i, factors=[None, None])")
    assert "error: split: factor 0 is not positive" in err("x, y = sch.split(i, factors=[0, 4])")
    assert "error: split: expected a loop for loop, got block \"B\"" in \
        err("x, y = sch.split(b, factors=[4, 4])")
    assert "error: split returns 2 values, but 3 names are assigned" in \
        err("x, y, z = sch.split(i, factors=[4, 4])")
    assert "error: split: loop i no longer exists in function \"add\"" in \
        err("x, y = sch.split(i, factors=[4, 4])\nu, v = sch.split(i, factors=[2, 8])")


def test_get_block_unknown(sched_error):
    msg = sched_error(schedule(MATMUL, "matmul", 'b = sch.get_block("D")'))
    assert 'sched.tir:14:5: error: unknown block "D" in function "matmul"' in msg
    assert 'b = sch.get_block("D")' in msg and "^~~~" in msg


def test_unknown_primitive(sched_error):
    msg = sched_error(schedule(MATMUL, "matmul", 'b = sch.get_blok("C")'))
    assert 'error: unknown schedule primitive "get_blok"; did you mean "get_block"?' in msg


def test_fuse_and_parallel(sched):
    r = sched(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        f = sch.fuse(i, j)
        sch.parallel(f)
    '''))
    assert r.text("matmul") == '''\
@T.prim_func
def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i_j_fused in T.parallel(256):
        for k in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i_j_fused // 16)
                vj = T.axis.spatial(16, i_j_fused % 16)
                vk = T.axis.reduce(16, k)
                T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''
    r.check_same("matmul")


def test_fuse_not_nested(sched_error):
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        f = sch.fuse(i, k)
    '''))
    assert "error: fuse: loop k is not the only statement in loop i (fused loops must be " \
        "perfectly nested, outer to inner)" in msg


def test_reorder_tiles(sched):
    r = sched(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 4])
        j0, j1 = sch.split(j, factors=[None, 8])
        sch.reorder(i0, j0, k, i1, j1)
        sch.vectorize(j1)
        sch.unroll(i1)
    '''))
    assert r.text("matmul") == '''\
@T.prim_func
def matmul(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i_0, j_0, k in T.grid(4, 2, 16):
        for i_1 in T.unroll(4):
            for j_1 in T.vectorized(8):
                with T.block("C"):
                    vi = T.axis.spatial(16, i_0 * 4 + i_1)
                    vj = T.axis.spatial(16, j_0 * 8 + j_1)
                    vk = T.axis.reduce(16, k)
                    T.reads(C[vi, vj], A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0.0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''
    r.check_same("matmul")


def test_reorder_errors(sched_error):
    two_nests = '''
@T.prim_func
def two(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i in range(8):
        with T.block("X"):
            vi = T.axis.spatial(8, i)
            A[vi, 0] = T.float32(1)
    for k in range(8):
        with T.block("Y"):
            vk = T.axis.spatial(8, k)
            B[vk, 0] = T.float32(2)
'''
    msg = sched_error(schedule(two_nests, "two", '''
        x = sch.get_block("X")
        y = sch.get_block("Y")
        i, = sch.get_loops(x)
        k, = sch.get_loops(y)
        sch.reorder(i, k)
    '''))
    assert "error: reorder: loops i and k are not in the same loop nest" in msg
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        sch.reorder(i, i)
    '''))
    assert "error: reorder: loop i is given twice" in msg


def test_reorder_keeps_dependence(sched_error):
    msg = sched_error(schedule(SHIFTED, "shifted", '''
        b = sch.get_block("B")
        i, j = sch.get_loops(b)
        sch.reorder(j, i)
    '''))
    assert 'error: reorder: block "C" depends on block "B" (buffer B) across iterations of ' \
        'loop i' in msg


def test_reorder_keeps_the_init_first(sched, sched_error):
    """A loop fused from a spatial and a reduction loop, split, its parts reordered: some
    updates of C[vi, vj] ran before the init (at vk = 0), which then overwrote them; refused
    (from the schedule fuzzer). Reduction loops of their own still reorder."""
    msg = sched_error(schedule(MATMUL, "matmul", '''
        c = sch.get_block("C")
        i, j, k = sch.get_loops(c)
        f = sch.fuse(j, k)
        f0, f1 = sch.split(f, factors=[None, 5])
        sch.reorder(f1, f0)
    '''))
    assert 'error: reorder: loop j_k_fused_1 feeds both spatial variable vj and reduction ' \
        'variable vk of block "C", which has an init: moved, it could run an update before ' \
        'the init' in msg
    r = sched(schedule(MATMUL, "matmul", '''
        c = sch.get_block("C")
        i, j, k = sch.get_loops(c)
        sch.reorder(k, i)
    '''))
    assert "for k, j, i in T.grid(16, 16, 16):" in r.text("matmul")
    r.check_same("matmul")


def test_reorder_inner_loops_with_two_blocks(sched):
    r = sched(schedule(SHIFTED.replace("T.max(vi - 1, 0)", "vi"), "shifted", '''
        b = sch.get_block("B")
        i, j = sch.get_loops(b)
        sch.reorder(j, i)
    '''))
    assert "for j, i in T.grid(8, 8):" in r.text("shifted")
    r.check_same("shifted")


def test_parallel_reduction_loop(sched_error):
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        sch.parallel(k)
    '''))
    assert 'sched.tir:16:5: error: parallel: loop k carries a dependence (it is bound to ' \
        'reduction variable vk of block "C")' in msg


def test_vectorize_and_bind_check_too(sched_error):
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        sch.vectorize(k)
    '''))
    assert "error: vectorize: loop k carries a dependence" in msg
    # a reduction loop goes to threads only as a cross-thread reduction (threadIdx)
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        sch.bind(k, "blockIdx.x")
    '''))
    assert "error: bind: loop k feeds a reduction; it can be bound to threadIdx.x/y/z (a " \
        "cross-thread reduction), not blockIdx.x" in msg


def test_parallel_between_blocks(sched, sched_error):
    msg = sched_error(schedule(SHIFTED, "shifted", '''
        b = sch.get_block("B")
        i, j = sch.get_loops(b)
        sch.parallel(i)
    '''))
    assert 'error: parallel: block "C" depends on block "B" (buffer B) across iterations of ' \
        'loop i' in msg
    r = sched(schedule(SHIFTED, "shifted", '''
        b = sch.get_block("B")
        i, j = sch.get_loops(b)
        sch.parallel(j)
    '''))
    assert "for j in T.parallel(8):" in r.text("shifted")
    r.check_same("shifted")


# One block reading elements other instances of it write (a mutated TVM test program,
# found by pipeline_fuzz --run): row i of B is written from rows j of B.
SELF_READ = '''
@T.prim_func
def self_read(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j, k in T.grid(8, 8, 8):
        with T.block("update"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            B[vi, vj] = B[vi, vj] + A[vi, vk] * B[vj, vk]
'''


def test_parallel_of_a_block_reading_its_own_writes_is_refused(sched, sched_error):
    """Iterations of i read rows of B that other iterations write: run at once they read
    other values than in order. The default schedule parallelized i at -O2/-O3 (only
    dependences between different blocks were checked) and the library disagreed with -O0
    and the interpreter; parallel, vectorize and bind refuse it now. The accumulation into
    B[vi, vj] alone (read and written by one iteration) still parallelizes."""
    for prim, loop in (("parallel", "i"), ("vectorize", "j")):
        msg = sched_error(schedule(SELF_READ, "self_read", f'''
            b = sch.get_block("update")
            i, j, k = sch.get_loops(b)
            sch.{prim}({loop})
        '''))
        assert f'error: {prim}: block "update" reads elements of B that it writes in other ' \
            f'iterations of loop {loop}' in msg
    r = sched(schedule(SELF_READ.replace("B[vj, vk]", "A[vj, vk]"), "self_read", '''
        b = sch.get_block("update")
        i, j, k = sch.get_loops(b)
        sch.parallel(i)
    '''))
    assert "for i in T.parallel(8):" in r.text("self_read")
    r.check_same("self_read")


def test_bind_and_annotate(sched, sched_error):
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 4])
        sch.bind(i0, "blockIdx.x")
        sch.bind(i1, "threadIdx.x")
        sch.annotate(b, "note", 1)
        sch.annotate(i0, "pragma_unroll", True)
    '''))
    assert r.text("add") == '''\
@T.prim_func
def add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i_0 in T.thread_binding(4, thread="blockIdx.x", annotations={"pragma_unroll": True}):
        for i_1 in T.thread_binding(4, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 4 + i_1)
                T.reads(A[vi])
                T.writes(B[vi])
                T.block_attr({"note": 1})
                B[vi] = A[vi] + T.float32(1.0)
'''
    r.check_same("add")
    msg = sched_error(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        sch.bind(i, "threadIdx.w")
    '''))
    assert "error: bind: unknown thread axis 'threadIdx.w'" in msg


def test_get_child_blocks(sched):
    r = sched(schedule(SHIFTED, "shifted", '''
        b = sch.get_block("B")
        i, j = sch.get_loops(b)
        x, y = sch.get_child_blocks(j)
        sch.annotate(y, "second", "C")
    '''))
    assert 'T.block_attr({"second": "C"})' in r.text("shifted")
    assert r.text("shifted").index("second") > r.text("shifted").index('T.block("C")')


UNIT = '''
@T.prim_func
def unit(A: T.Buffer((16, 1), "float32"), C: T.Buffer((16, 1), "float32")):
    for i, j in T.grid(16, 1):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + T.float32(1)
'''


def test_split_and_fuse_preserve_unit_iters(sched):
    """Every factor makes a loop (unit ones too, as in TVM); preserve_unit_iters=False only
    keeps unit loops out of the block bindings."""
    def bindings(flag: str) -> list[str]:
        r = sched(schedule(UNIT, "unit", f'''
            c = sch.get_block("C")
            i, j = sch.get_loops(c)
            i0, i1, i2 = sch.split(i, factors=[1, None, 4]{flag})
        '''))
        r.check_same("unit")
        out = r.text("unit")
        assert "for i_0, i_1, i_2, j in T.grid(1, 4, 4, 1):" in out
        return [line.strip() for line in out.splitlines() if "T.axis" in line]
    assert bindings("") == ["vi = T.axis.spatial(16, i_0 * 16 + i_1 * 4 + i_2)",
                            "vj = T.axis.spatial(1, j)"]
    assert bindings(", preserve_unit_iters=False") == ["vi = T.axis.spatial(16, i_1 * 4 + i_2)",
                                                        "vj = T.axis.spatial(1, 0)"]
    r = sched(schedule(UNIT, "unit", '''
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        i0, i1 = sch.split(i, factors=[1, None])
        f = sch.fuse(i0, i1, preserve_unit_iters=False)
    '''))
    assert "vj = T.axis.spatial(1, 0)" in r.text("unit")
    r.check_same("unit")


def test_split_disable_predication(sched):
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 6], disable_predication=True)
    '''))
    # The schedule promises the tail never runs past the extent: no guard (TVM's meaning).
    assert "for i_0, i_1 in T.grid(3, 6):" in r.text("add")
    assert "T.where" not in r.text("add")
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 6])
    '''))
    assert "T.where(i_0 * 6 + i_1 < 16)" in r.text("add")
    r.check_same("add")


def test_unannotate(sched, sched_error):
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        sch.annotate(i, "pragma_auto_unroll_max_step", 16)
        sch.annotate(b, "meta", "x")
        sch.annotate(b, "keep", 1)
        sch.unannotate(i, "pragma_auto_unroll_max_step")
        sch.unannotate(b, "meta")
    '''))
    assert r.text("add") == '''\
@T.prim_func
def add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(B[vi])
            T.block_attr({"keep": 1})
            B[vi] = A[vi] + T.float32(1.0)
'''
    r.check_same("add")
    msg = sched_error(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        sch.unannotate(i, "pragma_unroll")
    '''))
    assert "error: unannotate: loop i has no annotation 'pragma_unroll'" in msg


INT16_LOOP = '''
@T.prim_func
def narrow(A: T.Buffer((256,), "int32"), B: T.Buffer((256,), "int32")):
    for i in T.serial(T.int16(256)):
        with T.block("B"):
            vi = T.axis.spatial(T.int16(256), i)
            B[vi] = A[vi] + 1
'''


@pytest.mark.parametrize("prim", ["parallel", "vectorize"])
def test_an_int16_loop_with_the_identity_binding_parallelizes(sched, prim):
    """A variable of a type that wraps is still linear in itself: `vi = i` over an int16 loop
    tells the iterations apart (the linear form is kept to int32/int64 expressions otherwise)."""
    r = sched(schedule(INT16_LOOP, "narrow", f'''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        sch.{prim}(i)
    '''))
    r.check_same("narrow")


HOISTED = '''
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((8, 4), "float32"),
      C: T.Buffer((4,), "float32")):
    T1 = T.alloc_buffer((4,), "float32")
    for i in range(8):
        for j in range(4):
            with T.block("T1"):
                vj = T.axis.spatial(4, j)
                T1[vj] = A[vj] * T.float32(2)
        for j in range(4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T1[vj] + T.float32(1)
'''


def test_parallel_and_vectorize_need_the_loop_in_every_writer(sched, sched_error):
    """A block under the loop whose bindings ignore it runs the same instance in every
    iteration: a race on what it writes, unless each iteration of a parallel loop has its own
    copy of the buffer (ir/parallel_private.py); found by the schedule fuzzer
    (tests/difftest/schedule_programs.py)."""
    body = '''
        b = sch.get_block("B")
        i, j = sch.get_loops(b)
        sch.{prim}(i)
    '''
    sched(schedule(HOISTED, "f", body.format(prim="parallel"))).check_same("f")
    assert 'error: vectorize: every iteration of loop i runs the same instance of block "T1" ' \
        '(its bindings do not use the loop), so they all write T1 there' in \
        sched_error(schedule(HOISTED, "f", body.format(prim="vectorize")))
    param = HOISTED.replace("T1[vj] = A[vj]", "C[vj] = A[vj]").replace(
        "T1[vj] + T.float32(1)", "A[vj] + T.float32(1)")
    assert 'error: parallel: every iteration of loop i runs the same instance of block "T1" ' \
        '(its bindings do not use the loop), so they all write C there' in \
        sched_error(schedule(param, "f", body.format(prim="parallel")))


def test_parallel_outer_digit_of_a_split_loop(sched):
    """`j_0 * 4 + j_1` with `j_1` outside `j_0` is one to one (a mixed-radix number), so
    iterations of `j_1` run different instances."""
    r = sched(schedule(ADD, "add", '''
        b = sch.get_block("B")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 4])
        sch.reorder(i1, i0)
        sch.parallel(i1)
    '''))
    assert "for i_1 in T.parallel(4):" in r.text("add")
    r.check_same("add")


# Each element is copied twice (j_0 * 2 + j_1 reaches it from two pairs): harmless serially,
# and under a parallel j_1 only while j_0 stays outside it.
OVERLAP = '''
@T.prim_func
def overlap(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for j0, j1 in T.grid(4, 4):
        with T.block("B"):
            vj = T.axis.spatial(10, j0 * 2 + j1)
            B[vj] = A[vj]
'''


def test_reorder_moving_a_parallel_loop_out_rechecks_it(sched, sched_error):
    body = '''
b = sch.get_block("B")
j0, j1 = sch.get_loops(b)
sch.parallel(j1)
'''
    sched(schedule(OVERLAP, "overlap", body)).check_same("overlap")
    msg = sched_error(schedule(OVERLAP, "overlap", body + "sch.reorder(j1, j0)"))
    assert "sched.tir:14:5: error: reorder under parallel loop j1: different iterations of " \
        "loop j1 may run the same instance of block \"B\" (its bindings do not tell the " \
        "iterations apart), and would write B, which they share" in msg
