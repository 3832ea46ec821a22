"""compute_at and reverse_compute_at: region cover, placement, and their checks."""

from __future__ import annotations

import textwrap

import numpy as np
from tirc.ir.interpreter import run_prim_func

TWO_STAGE = '''
@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
'''

STENCIL = '''
@T.prim_func
def stencil(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[T.max(vi - 1, 0)] + B[vi] + B[T.min(vi + 1, 15)]
'''


def schedule(kernel: str, func: str, body: str) -> str:
    return kernel + f'\n@S.schedule("{func}")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_compute_at_tile(sched):
    r = sched(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        io, ii = sch.split(i, factors=[None, 4])
        sch.compute_at(b, io)
    '''))
    assert r.text("f") == '''\
@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i_0 in range(4):
        for ax0, ax1 in T.grid(4, 16):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 4 + ax0)
                vj = T.axis.spatial(16, ax1)
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
        for i_1, j in T.grid(4, 16):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 4 + i_1)
                vj = T.axis.spatial(16, j)
                T.reads(B[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = B[vi, vj] + T.float32(1.0)
'''
    r.check_same("f")


def test_compute_at_innermost_point(sched):
    r = sched(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        sch.compute_at(b, j)
    '''))
    out = r.text("f")
    assert '''\
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])''' in out
    r.check_same("f")


def test_compute_at_stencil_halo(sched):
    r = sched(schedule(STENCIL, "stencil", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(c)
        i0, i1 = sch.split(i, factors=[None, 4])
        sch.compute_at(b, i0)
    '''))
    assert r.text("stencil") == '''\
@T.prim_func
def stencil(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i_0 in range(4):
        for ax0 in range(6):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 4 + ax0 - 1)
                T.where(i_0 * 4 + ax0 - 1 >= 0 and i_0 * 4 + ax0 - 1 < 16)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] * T.float32(2.0)
        for i_1 in range(4):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 4 + i_1)
                T.reads(B[T.max(vi - 1, 0)], B[vi], B[T.min(vi + 1, 15)])
                T.writes(C[vi])
                C[vi] = B[T.max(vi - 1, 0)] + B[vi] + B[T.min(vi + 1, 15)]
'''
    r.check_same("stencil")


def test_reverse_compute_at(sched):
    r = sched(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        bi, bj = sch.get_loops(b)
        bio, bii = sch.split(bi, factors=[None, 8])
        sch.reverse_compute_at(c, bio)
    '''))
    assert r.text("f") == '''\
@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i_0 in range(2):
        for i_1, j in T.grid(8, 16):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 8 + i_1)
                vj = T.axis.spatial(16, j)
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * T.float32(2.0)
        for ax0, ax1 in T.grid(8, 16):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 8 + ax0)
                vj = T.axis.spatial(16, ax1)
                T.reads(B[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = B[vi, vj] + T.float32(1.0)
'''
    r.check_same("f")


def test_compute_at_of_reduction_into_consumer(sched):
    text = '''
@T.prim_func
def rowsum(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32")
    for i, k in T.grid(8, 16):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = S[vi] * T.float32(0.5)
'''
    r = sched(schedule(text, "rowsum", '''
        s = sch.get_block("S")
        c = sch.get_block("C")
        i, = sch.get_loops(c)
        sch.compute_at(s, i)
    '''))
    assert '''\
    for i in range(8):
        for ax0 in range(16):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, ax0])''' in r.text("rowsum")
    r.check_same("rowsum")


def test_compute_at_errors(sched_error):
    def err(body: str) -> str:
        return sched_error(schedule(TWO_STAGE, "f", 'b = sch.get_block("B")\n'
                                    'c = sch.get_block("C")\n' + body))
    msg = err("i, j = sch.get_loops(b)\nsch.compute_at(c, i)")
    assert 'error: compute_at: block "C" writes C, an output of function "f"; only blocks ' \
        'computing intermediate buffers can move' in msg
    msg = err("i, j = sch.get_loops(b)\nsch.compute_at(b, j)")
    assert 'error: compute_at: block "B" is already under loop j' in msg
    msg = err("i, j = sch.get_loops(b)\nsch.reverse_compute_at(b, j)")
    assert 'error: reverse_compute_at: block "B" is already under loop j' in msg
    msg = err("i, j = sch.get_loops(c)\nsch.reverse_compute_at(c, i)")
    assert 'error: reverse_compute_at: block "C" is already under loop i' in msg


def test_compute_at_consumer_outside_loop(sched_error):
    text = TWO_STAGE.replace('''    for i, j in T.grid(16, 16):
        with T.block("C"):''', '''    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj]
    for i, j in T.grid(16, 16):
        with T.block("C"):''')
    msg = sched_error(schedule(text, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        sch.compute_at(b, i)
    '''))
    assert 'error: compute_at: consumer block "D" of block "B" is not under loop i' in msg


def test_reverse_compute_at_window_rejected(sched_error):
    msg = sched_error(schedule(STENCIL, "stencil", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 4])
        sch.reverse_compute_at(c, i0)
    '''))
    assert 'error: reverse_compute_at: the iterations of loop i_0 would not run each ' \
        'instance of block "C" exactly once: per iteration it may only run the instances ' \
        'whose reads the producers have completed, and the values of vi that allows do not ' \
        'tile its range' in msg


POOL = '''
@T.prim_func
def pool(A: T.Buffer((32,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((32,), "float32")
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi * 2] + B[vi * 2 + 1]
'''


def test_reverse_compute_at_strided_window(sched):
    """The consumer reads the window [2 vi, 2 vi + 1]: per tile of 8 produced elements it
    runs the 4 instances whose windows lie inside the tile."""
    r = sched(schedule(POOL, "pool", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 8])
        sch.reverse_compute_at(c, i0)
    '''))
    assert '''\
        for ax0 in range(4):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 4 + ax0)
                T.reads(B[vi * 2], B[vi * 2 + 1])''' in r.text("pool")
    r.check_same("pool")


def test_reverse_compute_at_window_with_guarded_tail(sched):
    r = sched(schedule(POOL, "pool", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 6])
        sch.reverse_compute_at(c, i0)
    '''))
    assert '''\
        for ax0 in range(3):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 3 + ax0)
                T.where(i_0 * 3 + ax0 < 16)''' in r.text("pool")
    r.check_same("pool")


def test_reverse_compute_at_window_across_tiles_rejected(sched_error):
    msg = sched_error(schedule(POOL, "pool", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 5])
        sch.reverse_compute_at(c, i0)
    '''))
    assert 'error: reverse_compute_at: the iterations of loop i_0 would not run each ' \
        'instance of block "C" exactly once' in msg


def test_reverse_compute_at_reduction_consumer_reads_a_range(sched):
    text = '''
@T.prim_func
def psum(A: T.Buffer((64,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((64,), "float32")
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi] * T.float32(2)
    for i, k in T.grid(16, 4):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + B[vi * 4 + vk]
'''
    r = sched(schedule(text, "psum", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 16])
        sch.reverse_compute_at(c, i0)
    '''))
    assert r.text("psum") == '''\
@T.prim_func
def psum(A: T.Buffer((64,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((64,), "float32")
    for i_0 in range(4):
        for i_1 in range(16):
            with T.block("B"):
                vi = T.axis.spatial(64, i_0 * 16 + i_1)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] * T.float32(2.0)
        for ax0, ax1 in T.grid(4, 4):
            with T.block("C"):
                vi = T.axis.spatial(16, i_0 * 4 + ax0)
                vk = T.axis.reduce(4, ax1)
                T.reads(C[vi], B[vi * 4 + vk])
                T.writes(C[vi])
                with T.init():
                    C[vi] = T.float32(0.0)
                C[vi] = C[vi] + B[vi * 4 + vk]
'''
    r.check_same("psum")


def test_reverse_compute_at_incomplete_reduction_producer(sched_error):
    text = '''
@T.prim_func
def rowsum(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32")
    for i, k in T.grid(8, 16):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = S[vi] * T.float32(0.5)
'''
    msg = sched_error(schedule(text, "rowsum", '''
        s = sch.get_block("S")
        c = sch.get_block("C")
        i, k = sch.get_loops(s)
        sch.reverse_compute_at(c, k)
    '''))
    assert 'error: reverse_compute_at: producer block "S" is a reduction that does not ' \
        'complete its elements within one iteration of loop k (its reduction variable vk ' \
        'also runs over loops outside it)' in msg


PARTIAL = '''
@T.prim_func
def part(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            T.where(i < 12)
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi] + T.float32(1)
'''

SPLIT_C = '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(c)
        i0, i1 = sch.split(i, factors=[None, 4])
        sch.compute_at(b, i0)
'''


def test_compute_at_keeps_the_predicate(sched):
    """A predicate over the block's own loops is rewritten over its iteration variables."""
    r = sched(schedule(PARTIAL, "part", SPLIT_C))
    assert '''\
        for ax0 in range(4):
            with T.block("B"):
                vi = T.axis.spatial(16, i_0 * 4 + ax0)
                T.where(i_0 * 4 + ax0 < 12)''' in r.text("part")
    r.check_same("part")


def test_compute_at_predicate_that_cannot_move(sched_error):
    msg = sched_error(schedule(PARTIAL.replace("T.where(i < 12)", "T.where(i % 3 == 0)"),
                               "part", SPLIT_C))
    assert 'error: compute_at: the predicate i % 3 == 0 of block "B" cannot be written over ' \
        'its iteration variables, so it cannot move with the block' in msg


def test_compute_at_after_guarded_tails(sched):
    """The producer's tail guard is implied by its domain and goes; the tile of the
    consumer's guarded split gets a guard of its own."""
    text = '''
@T.prim_func
def tail(A: T.Buffer((10, 16), "float32"), C: T.Buffer((10, 16), "float32")):
    B = T.alloc_buffer((10, 16), "float32")
    for i, j in T.grid(10, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(10, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
'''
    r = sched(schedule(text, "tail", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 4])
        ci, cj = sch.get_loops(c)
        ci0, ci1 = sch.split(ci, factors=[None, 3])
        sch.compute_at(b, ci0)
    '''))
    assert '''\
    for i_0 in range(4):
        for ax0, ax1 in T.grid(3, 16):
            with T.block("B"):
                vi = T.axis.spatial(10, i_0 * 3 + ax0)
                vj = T.axis.spatial(16, ax1)
                T.where(i_0 * 3 + ax0 < 10)''' in r.text("tail")
    r.check_same("tail")


INDEXED = '''
@T.prim_func
def two(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
        D: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = A[vi] + T.float32(3)
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
'''


def test_compute_at_index(sched, sched_error):
    """index=-1 (the default) places the block just before its first consumer, -2 just after
    its last producer (here: first), a number at that position."""
    def order(index: str) -> list[str]:
        r = sched(schedule(INDEXED, "two", f'''
            b = sch.get_block("B")
            c = sch.get_block("C")
            i, = sch.get_loops(c)
            sch.compute_at(b, i{index})
        '''))
        r.check_same("two")
        return [line.strip() for line in r.text("two").splitlines() if "T.block(" in line]
    assert order("") == ['with T.block("D"):', 'with T.block("B"):', 'with T.block("C"):']
    assert order(", index=-2") == ['with T.block("B"):', 'with T.block("D"):',
                                   'with T.block("C"):']
    assert order(", index=0") == order(", index=-2")
    msg = sched_error(schedule(INDEXED, "two", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(c)
        sch.compute_at(b, i, index=2)
    '''))
    assert 'error: compute_at: index 2 is not a valid position under loop i: use -1, -2, ' \
        'or 0 to 1' in msg


FLAT_WRITE = '''
@T.prim_func
def flat(A: T.Buffer((4, 4), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i, j in T.grid(4, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi * 4 + vj] = A[vi, vj] * T.float32(2)
    for x in range(16):
        with T.block("C"):
            vx = T.axis.spatial(16, x)
            C[vx] = B[vx] + T.float32(1)
'''

FLAT_READ = '''
@T.prim_func
def flat(A: T.Buffer((16,), "float32"), C: T.Buffer((4, 4), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for x in range(16):
        with T.block("B"):
            vx = T.axis.spatial(16, x)
            B[vx] = A[vx] * T.float32(2)
    for i, j in T.grid(4, 4):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi * 4 + vj] + T.float32(1)
'''


def test_compute_at_flattened_write(sched):
    """The producer writes B[vi * 4 + vj]: a tile of 8 elements is two rows of it."""
    r = sched(schedule(FLAT_WRITE, "flat", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        x, = sch.get_loops(c)
        x0, x1 = sch.split(x, factors=[None, 8])
        sch.compute_at(b, x0)
    '''))
    assert '''\
    for x_0 in range(2):
        for ax0, ax1 in T.grid(2, 4):
            with T.block("B"):
                vi = T.axis.spatial(4, x_0 * 2 + ax0)
                vj = T.axis.spatial(4, ax1)''' in r.text("flat")
    r.check_same("flat")


def test_reverse_compute_at_flattened_read(sched):
    r = sched(schedule(FLAT_READ, "flat", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        x, = sch.get_loops(b)
        x0, x1 = sch.split(x, factors=[None, 8])
        sch.reverse_compute_at(c, x0)
    '''))
    assert '''\
        for ax0, ax1 in T.grid(2, 4):
            with T.block("C"):
                vi = T.axis.spatial(4, x_0 * 2 + ax0)
                vj = T.axis.spatial(4, ax1)''' in r.text("flat")
    r.check_same("flat")


def test_compute_at_needs_complete_or_reduction_block(sched_error):
    text = '''
@T.prim_func
def rowsum(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32")
    for i, k in T.grid(8, 16):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = S[vi] * T.float32(0.5)
'''
    msg = sched_error(schedule(text, "rowsum", '''
        s = sch.get_block("S")
        c = sch.get_block("C")
        i, k = sch.get_loops(s)
        sch.decompose_reduction(s, k)
        ci, = sch.get_loops(c)
        sch.compute_at(s, ci)
    '''))
    assert 'error: compute_at: block "S_update" has reduction variables but no init' in msg
    two_writers = TWO_STAGE.replace('''    for i, j in T.grid(16, 16):
        with T.block("C"):''', '''    for i, j in T.grid(16, 16):
        with T.block("B2"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = B[vi, vj] + T.float32(1)
    for i, j in T.grid(16, 16):
        with T.block("C"):''')
    msg = sched_error(schedule(two_writers, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        sch.compute_at(b, i)
    '''))
    assert 'error: compute_at: block "B" is not the only writer of B (block "B2" writes it ' \
        'too)' in msg


SYMBOLIC = '''
@T.prim_func
def f(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    B = T.alloc_buffer((n,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(n):
        with T.block("C"):
            vi = T.axis.spatial(n, i)
            C[vi] = B[vi] + T.float32(1)
'''


def test_both_ways_with_a_symbolic_extent(sched):
    r = sched(schedule(SYMBOLIC, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(b)
        i0, i1 = sch.split(i, factors=[None, 8])
        sch.reverse_compute_at(c, i0)
    '''))
    assert '''\
        for ax0 in range(8):
            with T.block("C"):
                vi = T.axis.spatial(n, i_0 * 8 + ax0)
                T.where(i_0 * 8 + ax0 < n)''' in r.text("f")
    for n in (21, 24):
        r.check_same("f", sizes={"n": n})
    r = sched(schedule(SYMBOLIC, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(c)
        i0, i1 = sch.split(i, factors=[None, 8])
        sch.compute_at(b, i0)
    '''))
    assert '''\
        for ax0 in range(8):
            with T.block("B"):
                vi = T.axis.spatial(n, i_0 * 8 + ax0)
                T.where(i_0 * 8 + ax0 < n)''' in r.text("f")
    r.check_same("f", sizes={"n": 21})


def test_compute_at_cannot_cover(sched_error):
    """A producer whose writes can't be inverted onto the needed region is a diagnostic."""
    text = STENCIL.replace("B[vi] = A[vi] * T.float32(2)", "B[vi * 5 % 16] = A[vi] * T.float32(2)")
    msg = sched_error(schedule(text, "stencil", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, = sch.get_loops(c)
        i0, i1 = sch.split(i, factors=[None, 4])
        sch.compute_at(b, i0)
    '''))
    assert 'error: compute_at: cannot derive the iteration domain of block "B": dimension 0 ' \
        'of its region of B is not an iteration variable times a positive constant plus an ' \
        'offset (a point or a window), nor a floor division or modulo of one by a constant' \
        in msg


NEIGHBOURS = '''
@T.prim_func
def pairs(A: T.Buffer((4, 17), "float32"), C: T.Buffer((4, 16), "float32")):
    B = T.alloc_buffer((4, 17), "float32")
    for i, j, k in T.grid(4, 17, 8):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                B[vi, vj] = T.float32(0)
            B[vi, vj] = B[vi, vj] + A[vi, vj] * T.float32(vk)
    for i, j in T.grid(4, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + B[vi, vj + 1]
'''


def test_compute_at_under_a_parallel_loop_sharing_the_buffer_is_refused(sched_error):
    """Iterations j and j + 1 of the parallel loop would both compute B[i, j + 1] (init and
    sum) in one B, the interpreter's data race; the loop i around j keeps B shared."""
    msg = sched_error(schedule(NEIGHBOURS, "pairs", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        sch.parallel(j)
        sch.compute_at(b, j)
    '''))
    assert "sched.tir:22:5: error: compute_at under parallel loop j: different iterations of " \
        "loop j may run the same instance of block \"B\" (its bindings do not tell the " \
        "iterations apart), and would write B, which they share" in msg


def test_compute_at_under_a_vectorized_loop_is_refused_too(sched_error):
    msg = sched_error(schedule(NEIGHBOURS, "pairs", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        jo, ji = sch.split(j, factors=[None, 4])
        sch.vectorize(ji)
        sch.compute_at(b, ji)
    '''))
    assert "error: compute_at under vectorized loop j_1: different iterations of loop j_1 " \
        "may run the same instance of block \"B\"" in msg


NEIGHBOURS_1D = '''
@T.prim_func
def pairs(A: T.Buffer((17,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((17,), "float32")
    for j, k in T.grid(17, 8):
        with T.block("B"):
            vj, vk = T.axis.remap("SR", [j, k])
            with T.init():
                B[vj] = T.float32(0)
            B[vj] = B[vj] + A[vj] * T.float32(vk)
    for j in range(16):
        with T.block("C"):
            vj = T.axis.spatial(16, j)
            C[vj] = B[vj] + B[vj + 1]
'''


def test_compute_at_under_an_outer_parallel_loop_recomputes_privately(sched):
    """With the parallel loop outermost, B is allocated afresh in each of its iterations
    (ir/parallel_private.py): the recomputed neighbour is no race, as in TVM."""
    r = sched(schedule(NEIGHBOURS_1D, "pairs", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        j, = sch.get_loops(c)
        sch.parallel(j)
        sch.compute_at(b, j)
    '''))
    assert "for j in T.parallel(16):\n        for ax0, ax1 in T.grid(2, 8):" in r.text("pairs")
    r.check_same("pairs")


def test_parallel_after_compute_at_still_refused(sched_error):
    msg = sched_error(schedule(NEIGHBOURS, "pairs", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        sch.compute_at(b, j)
        sch.parallel(j)
    '''))
    assert "error: parallel: different iterations of loop j may run the same instance of " \
        "block \"B\"" in msg


READ_BEFORE_WRITE = '''
@T.prim_func
def mirror(A: T.Buffer((16,), "float32"), Y: T.Buffer((16,), "float32"),
           C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for j in range(16):
        with T.block("B"):
            vj = T.axis.spatial(16, j)
            B[vj] = A[vj] * T.float32(2)
        with T.block("Q"):
            vj = T.axis.spatial(16, j)
            Y[vj] = C[15 - vj]
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi]
'''


def test_reverse_compute_at_under_a_loop_reading_its_output_first_is_refused(sched_error):
    """Q reads C's old values before C is written; with C inside loop j, Q would read
    C[15 - j] already overwritten for j >= 8 (Y[8:] wrong)."""
    msg = sched_error(schedule(READ_BEFORE_WRITE, "mirror", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        j, = sch.get_loops(b)
        sch.reverse_compute_at(c, j)
    '''))
    assert "error: reverse_compute_at: block \"Q\" under loop j reads C before block \"C\" " \
        "writes it; inside the loop, \"C\" would overwrite what it reads" in msg


def test_compute_at_under_a_loop_writing_its_input_later_is_refused(sched_error):
    """B reads A before block W overwrites it; inside W's loop B would read new values."""
    text = '''
@T.prim_func
def clobber(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[15 - vi]
    for j in range(16):
        with T.block("W"):
            vj = T.axis.spatial(16, j)
            A[vj] = T.float32(0)
        with T.block("C"):
            vj = T.axis.spatial(16, j)
            C[vj] = B[vj]
'''
    msg = sched_error(schedule(text, "clobber", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        j, = sch.get_loops(c)
        sch.compute_at(b, j)
    '''))
    assert "error: compute_at: block \"W\" under loop j writes A after block \"B\" reads it; " \
        "inside the loop, \"B\" would read what it writes" in msg


GATHER = '''
@T.prim_func
def gather(A: T.Buffer((8, 4), "float32"), Idx: T.Buffer((4, 3), "int32"),
           W: T.Buffer((4, 3), "float32"), O: T.Buffer((4, 4), "float32")):
    T3 = T.alloc_buffer((8, 4), "float32")
    for r, c in T.grid(8, 4):
        with T.block("T3"):
            vr, vc = T.axis.remap("SS", [r, c])
            T3[vr, vc] = A[vr, vc] * T.float32(2)
    for i, k, j in T.grid(4, 4, 3):
        with T.block("O"):
            vi, vk, vj = T.axis.remap("SSR", [i, k, j])
            with T.init():
                O[vi, vk] = T.float32(0)
            O[vi, vk] = O[vi, vk] + W[vi, vj] * T3[Idx[vi, vj], vk]
'''

GATHER_AT = '''
    b = sch.get_block("T3")
    o = sch.get_block("O")
    i, k, j = sch.get_loops(o)
    sch.compute_at(b, j)
'''


def test_a_gathered_compute_at_computes_the_gathered_rows(sched):
    r = sched(schedule(GATHER, "gather", GATHER_AT))
    assert "T.where(Idx[i, j] >= 0 and Idx[i, j] < 8)" in r.text("gather")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 4)).astype("float32")
    idx = rng.integers(0, 8, (4, 3)).astype("int32")
    w = rng.standard_normal((4, 3)).astype("float32")
    out = np.zeros((4, 4), "float32")
    run_prim_func(r.after["gather"], [a, idx, w, out])
    np.testing.assert_allclose(out, np.einsum("ij,ijk->ik", w, (a * 2)[idx]), rtol=1e-5)


def test_a_guarded_split_under_a_predicate_that_loads_is_refused(sched_error):
    """The tail j = 3 of the split would evaluate `Idx[i, 3]` in T3's predicate (compiled
    code does not short-circuit `and`), past Idx's 3 columns."""
    msg = sched_error(schedule(GATHER, "gather", GATHER_AT + '''
    j0, j1 = sch.split(j, factors=[None, 2])
    '''))
    assert "error: split: the predicate of block \"T3\" loads from a buffer at an index over " \
        "loop j; the guarded tail of a split that does not divide the extent would read it " \
        "out of bounds" in msg
