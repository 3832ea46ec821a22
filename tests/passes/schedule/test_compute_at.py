"""compute_at and reverse_compute_at: region cover, placement, and their checks."""

from __future__ import annotations

import textwrap

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
                vi = T.axis.spatial(16, T.max(i_0 * 4 - 1, 0) + ax0)
                T.where(ax0 < T.min(i_0 * 4 + 4, 15) - T.max(i_0 * 4 - 1, 0) + 1)
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
    assert 'error: reverse_compute_at: cannot derive the iteration domain of block "C": ' \
        'dimension 0 of its region of B is not an iteration variable plus a constant' in msg
