"""compute_inline and reverse_compute_inline."""

from __future__ import annotations

import textwrap

CHAIN = '''
@T.prim_func
def chain(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8), "float32")
    C = T.alloc_buffer((8, 8), "float32")
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vj, vi] + T.float32(1)
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vj, vi] = T.exp(C[vi, vj])
'''

MATMUL_RELU = '''
@T.prim_func
def mm_relu(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
            D: T.Buffer((8, 8), "float32")):
    C = T.alloc_buffer((8, 8), "float32")
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0))
'''


def schedule(kernel: str, func: str, body: str) -> str:
    return kernel + f'\n@S.schedule("{func}")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_compute_inline(sched):
    r = sched(schedule(CHAIN, "chain", '''
        b = sch.get_block("B")
        sch.compute_inline(b)
    '''))
    assert r.text("chain") == '''\
@T.prim_func
def chain(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    C = T.alloc_buffer((8, 8), "float32")
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vj, vi])
            T.writes(C[vi, vj])
            C[vi, vj] = A[vj, vi] * T.float32(2.0) + T.float32(1.0)
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(C[vi, vj])
            T.writes(D[vj, vi])
            D[vj, vi] = T.exp(C[vi, vj])
'''
    r.check_same("chain")


def test_reverse_compute_inline(sched):
    r = sched(schedule(CHAIN, "chain", '''
        d = sch.get_block("D")
        sch.reverse_compute_inline(d)
    '''))
    assert r.text("chain") == '''\
@T.prim_func
def chain(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    B = T.alloc_buffer((8, 8), "float32")
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(B[vi, vj])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B[vj, vi])
            T.writes(D[vj, vi])
            D[vj, vi] = T.exp(B[vj, vi] + T.float32(1.0))
'''
    r.check_same("chain")


def test_inline_both_ways(sched):
    r = sched(schedule(CHAIN, "chain", '''
        b = sch.get_block("B")
        d = sch.get_block("D")
        sch.compute_inline(b)
        sch.reverse_compute_inline(d)
    '''))
    assert "D[vj, vi] = T.exp(A[vj, vi] * T.float32(2.0) + T.float32(1.0))" in r.text("chain")
    assert "alloc_buffer" not in r.text("chain")
    r.check_same("chain")


def test_compute_inline_errors(sched_error):
    msg = sched_error(schedule(MATMUL_RELU, "mm_relu", '''
        c = sch.get_block("C")
        sch.compute_inline(c)
    '''))
    assert 'error: compute_inline: block "C" is a reduction (it has an init); only a block ' \
        'with a single store can be inlined' in msg
    msg = sched_error(schedule(CHAIN, "chain", '''
        d = sch.get_block("D")
        sch.compute_inline(d)
    '''))
    assert 'error: compute_inline: block "D" writes D, a parameter of function "chain"; only ' \
        'intermediate buffers can be inlined' in msg


def test_reverse_compute_inline_into_reduction_rejected(sched_error):
    msg = sched_error(schedule(MATMUL_RELU, "mm_relu", '''
        d = sch.get_block("D")
        sch.reverse_compute_inline(d)
    '''))
    assert 'error: reverse_compute_inline: producer block "C" of block "D" is a reduction; ' \
        'as in TVM, a consumer is inlined only into a complete producer (one that writes each ' \
        'element of C once, with spatial iteration variables only)' in msg


def test_reverse_compute_inline_second_reader(sched_error):
    text = CHAIN.replace('D[vj, vi] = T.exp(C[vi, vj])', 'D[vj, vi] = T.exp(C[vi, vj]) + B[vi, vj]')
    msg = sched_error(schedule(text, "chain", '''
        c = sch.get_block("C")
        sch.reverse_compute_inline(c)
    '''))
    assert 'error: reverse_compute_inline: buffer B is also read by block "D"' in msg

TRANSPOSE_MAX = '''
@T.prim_func
def transpose_max(A: T.Buffer((8, 8), "float32"), O: T.Buffer((8, 8), "float32")):
    C = T.alloc_buffer((8, 8), "float32")
    Ct = T.alloc_buffer((8, 8), "float32")
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * A[vk, vj]
    for i, j in T.grid(8, 8):
        with T.block("Ct"):
            vi, vj = T.axis.remap("SS", [i, j])
            Ct[vi, vj] = C[vj, vi]
    for i, j in T.grid(8, 8):
        with T.block("O"):
            vi, vj = T.axis.remap("SS", [i, j])
            O[vi, vj] = T.max(Ct[vi, vj], C[vi, vj])
'''


def test_compute_inline_widens_a_read_the_consumer_declared(sched, sched_error):
    """The consumer already reads C[vi, vj]; the inlined value reads C[vj, vi] too, so the
    read region covers both (difftest loop seed 506199: with only C[vi, vj] declared, the
    default schedule moved O under C's (i, j) loop and read C[j, i] before it was computed)."""
    r = sched(schedule(TRANSPOSE_MAX, "transpose_max", '''
        ct = sch.get_block("Ct")
        sch.compute_inline(ct)
    '''))
    assert "T.reads(C[T.min(vj, vi):T.min(vj, vi) + (T.max(vj, vi) - T.min(vj, vi) + 1), " \
        "T.min(vi, vj):T.min(vi, vj) + (T.max(vi, vj) - T.min(vi, vj) + 1)])" in r.text(
            "transpose_max")
    r.check_same("transpose_max")
    msg = sched_error(schedule(TRANSPOSE_MAX, "transpose_max", '''
        ct = sch.get_block("Ct")
        c = sch.get_block("C")
        o = sch.get_block("O")
        sch.compute_inline(ct)
        i, j, k = sch.get_loops(c)
        sch.reverse_compute_at(o, j)
    '''))
    # O now reads C at (vj, vi) and (vi, vj): no single iteration of C's (i, j) loop holds
    # what one iteration of O needs, and reverse_compute_at refuses
    assert 'error: reverse_compute_at: cannot derive the iteration domain of block "O": ' \
        'dimension 0 of its region of C uses several iteration variables' in msg
