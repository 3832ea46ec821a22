"""cache_read, cache_write, set_scope and storage_align."""

# ruff: noqa: E501 (expected printer output has long lines)
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from tirc.ir.printer import print_module

MATMUL = '''
@T.prim_func
def matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
           C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''

TRANSPOSE = '''
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
            C[vi, vj] = B[vj, vi] + T.float32(1)
'''


def schedule(kernel: str, func: str, body: str) -> str:
    return kernel + f'\n@S.schedule("{func}")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_cache_read_and_write_at_tiles(sched):
    r = sched(schedule(MATMUL, "matmul", '''
        b0 = sch.get_block("C")
        i, j, k = sch.get_loops(b0)
        io, ii = sch.split(i, factors=[None, 8])
        jo, ji = sch.split(j, factors=[None, 16])
        sch.reorder(io, jo, k, ii, ji)
        bl = sch.cache_read(b0, 2, "local")
        cw = sch.cache_write(b0, 0, "local")
        sch.compute_at(bl, k)
        sch.reverse_compute_at(cw, jo)
    '''))
    assert r.text("matmul") == '''\
@T.prim_func
def matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B_local = T.alloc_buffer((32, 32), "float32", scope="local")
    C_local = T.alloc_buffer((32, 32), "float32", scope="local")
    for i_0, j_0 in T.grid(4, 2):
        for k in range(32):
            for ax0 in range(16):
                with T.block("B_local"):
                    v0 = T.axis.spatial(32, k)
                    v1 = T.axis.spatial(32, j_0 * 16 + ax0)
                    T.reads(B[v0, v1])
                    T.writes(B_local[v0, v1])
                    B_local[v0, v1] = B[v0, v1]
            for i_1, j_1 in T.grid(8, 16):
                with T.block("C"):
                    vi = T.axis.spatial(32, i_0 * 8 + i_1)
                    vj = T.axis.spatial(32, j_0 * 16 + j_1)
                    vk = T.axis.reduce(32, k)
                    T.reads(C_local[vi, vj], A[vi, vk], B_local[vk, vj])
                    T.writes(C_local[vi, vj])
                    with T.init():
                        C_local[vi, vj] = T.float32(0.0)
                    C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B_local[vk, vj]
        for ax0, ax1 in T.grid(8, 16):
            with T.block("C_local"):
                v0 = T.axis.spatial(32, i_0 * 8 + ax0)
                v1 = T.axis.spatial(32, j_0 * 16 + ax1)
                T.reads(C_local[v0, v1])
                T.writes(C[v0, v1])
                C[v0, v1] = C_local[v0, v1]
'''
    r.check_same("matmul")


def test_cache_read_whole_buffer(sched):
    r = sched(schedule(MATMUL, "matmul", '''
        b0 = sch.get_block("C")
        a = sch.cache_read(b0, 1, "global")
    '''))
    assert '''\
    A_global = T.alloc_buffer((32, 32), "float32")
    for ax0, ax1 in T.grid(32, 32):
        with T.block("A_global"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(A[v0, v1])
            T.writes(A_global[v0, v1])
            A_global[v0, v1] = A[v0, v1]
    for i, j, k in T.grid(32, 32, 32):''' in r.text("matmul")
    r.check_same("matmul")


DEAD_BRANCH = '''
@T.prim_func
def f(A: T.Buffer((3, 1), "int32"), B: T.Buffer((3, 1), "int32")):
    for i, j in T.grid(3, 1):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj + 2])
            T.writes(B[vi, vj])
            B[vi, vj] = T.if_then_else(vj + 2 < 1, A[vi, vj + 2], -2)
'''


def test_cache_read_of_a_load_never_taken_copies_nothing(sched):
    """A region of one element outside the buffer (the untaken side of `T.if_then_else`) is
    no element: the copy block has an empty loop. It copied A[v0, 2] out of bounds, bound
    outside its domain (from the random schedules, seed 300230)."""
    r = sched(schedule(DEAD_BRANCH, "f", '''
        b = sch.get_block("B")
        sch.cache_read(b, 0, "shared")
    '''))
    assert "for ax0, ax1 in T.grid(3, 0):" in r.text("f")
    r.check_same("f")


def test_cache_errors(sched_error):
    def err(body: str) -> str:
        return sched_error(schedule(MATMUL, "matmul", 'b0 = sch.get_block("C")\n' + body))
    assert 'error: cache_read: block "C" reads 3 buffers; index 3 is out of range' in \
        err('x = sch.cache_read(b0, 3, "local")')
    assert "error: cache_read: unknown storage scope 'texture'" in \
        err('x = sch.cache_read(b0, 1, "texture")')
    assert 'error: cache_read: block "C" also writes C; use cache_write for a buffer a block ' \
        'updates' in err('x = sch.cache_read(b0, 0, "local")')


def test_set_scope_and_storage_align(sched, tmp_path: Path):
    r = sched(schedule(TRANSPOSE, "f", '''
        b = sch.get_block("B")
        sch.storage_align(b, 0, 0, 8, 1)
        sch.set_scope(b, 0, "local")
    '''))
    assert r.text("f").splitlines()[2] == \
        '    B = T.alloc_buffer((16, 16), "float32", strides=(17, 1), scope="local")'
    # The padded strides take effect in compiled code: compare it with numpy.
    src = tmp_path / "aligned.tir"
    src.write_text(print_module(r.after))
    lib = tmp_path / "aligned.so"
    tirc = Path(sys.executable).parent / "tirc"
    done = subprocess.run([str(tirc), str(src), "-o", str(lib)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    from tirc.runtime import load

    a = np.random.default_rng(0).standard_normal((16, 16)).astype("float32")
    c = np.zeros((16, 16), "float32")
    load(lib)["f"](a, c)
    np.testing.assert_allclose(c, (a * 2).T + 1, rtol=1e-6)


def test_set_scope_and_align_errors(sched_error):
    def err(body: str) -> str:
        return sched_error(schedule(TRANSPOSE, "f", 'b = sch.get_block("B")\n'
                                    'c = sch.get_block("C")\n' + body))
    assert 'error: set_scope: C is a parameter of function "f"; only buffers the function ' \
        'allocates can change' in err('sch.set_scope(c, 0, "shared")')
    assert "error: storage_align: axis 1 is the innermost dimension of B, whose stride is 1" in \
        err("sch.storage_align(b, 0, 1, 8, 1)")
    assert "error: storage_align: need factor > 0 and 0 <= offset < factor, got factor 8 and " \
        "offset 9" in err("sch.storage_align(b, 0, 0, 8, 9)")


FANOUT = '''
@T.prim_func
def fan(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
        D: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            D[vi] = B[vi] * B[vi]
'''


def test_cache_write_consumer_blocks(sched):
    """TVM's consumer_blocks: the named consumers read the cache, the others the buffer the
    write-back stage fills."""
    r = sched(schedule(FANOUT, "fan", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        sch.cache_write(b, 0, "local", consumer_blocks=[c])
    '''))
    assert r.text("fan") == '''\
@T.prim_func
def fan(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    B_local = T.alloc_buffer((8,), "float32", scope="local")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads(A[vi])
            T.writes(B_local[vi])
            B_local[vi] = A[vi] * T.float32(2.0)
    for ax0 in range(8):
        with T.block("B_local"):
            v0 = T.axis.remap("S", [ax0])
            T.reads(B_local[v0])
            T.writes(B[v0])
            B[v0] = B_local[v0]
    for i in range(8):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads(B_local[vi])
            T.writes(C[vi])
            C[vi] = B_local[vi] + T.float32(1.0)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.remap("S", [i])
            T.reads(B[vi])
            T.writes(D[vi])
            D[vi] = B[vi] * B[vi]
'''
    r.check_same("fan")


def test_cache_read_consumer_blocks_and_buffer_name(sched):
    r = sched(schedule(FANOUT, "fan", '''
        d = sch.get_block("D")
        sch.cache_read(d, "B", "local", consumer_blocks=[d])
    '''))
    out = r.text("fan")
    assert 'C[vi] = B[vi] + T.float32(1.0)' in out
    assert 'D[vi] = B_local[vi] * B_local[vi]' in out
    r.check_same("fan")


def test_consumer_blocks_errors(sched_error):
    def err(body: str) -> str:
        return sched_error(schedule(FANOUT, "fan", 'b = sch.get_block("B")\n'
                                    'c = sch.get_block("C")\n' + body))
    assert 'error: cache_write: block "B" does not read B' in \
        err('sch.cache_write(b, 0, "local", consumer_blocks=[b])')
    assert 'error: cache_read: block "C" does not read A' in \
        err('sch.cache_read(b, 0, "local", consumer_blocks=[c])')
    assert "error: cache_read: block \"C\" reads no buffer named 'X'" in \
        err('sch.cache_read(c, "X", "local")')
    assert 'error: cache_write: expected a block for consumer_blocks, got loop i' in \
        err('i, = sch.get_loops(c)\nsch.cache_write(b, 0, "local", consumer_blocks=[i])')


def test_cache_write_refuses_update_without_own_init(sched, sched_error):
    """A block that reads what it writes without an init of its own (the update of a
    decomposed reduction, the inner block of a blockized one) would read the cache before
    anything wrote it; a reduction with its own init is cached (found by the schedule fuzzer,
    tests/difftest/schedule_programs.py)."""
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        init = sch.decompose_reduction(b, k)
        c = sch.cache_write(b, 0, "local")
    '''))
    assert 'error: cache_write: block "C_update" reads C before writing it (it has no init ' \
        'of its own); the cache would not hold the values it reads' in msg
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        o = sch.blockize(k)
        c = sch.cache_write(b, 0, "local")
    '''))
    assert 'error: cache_write: block "C" reads C before writing it' in msg
    msg = sched_error(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        i, j, k = sch.get_loops(b)
        init = sch.decompose_reduction(b, i)
        u = sch.get_block("C_update")
        ui, uj, uk = sch.get_loops(u)
        rf = sch.rfactor(uk, 0)
        c = sch.cache_write(u, 0, "local")
    '''))
    assert 'error: cache_write: block "C_update" reads C before writing it' in msg
    r = sched(schedule(MATMUL, "matmul", '''
        b = sch.get_block("C")
        c = sch.cache_write(b, 0, "local")
    '''))
    r.check_same("matmul")

