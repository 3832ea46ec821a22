"""storage-rewrite: allocations hoisted to their outermost legal scope and marked stack or heap."""

from __future__ import annotations

from lowering_support import (
    assert_same_results,
    body_text,
    buf,
    func_text,
    loop,
    module,
    prim_func,
    run_on_text,
    run_pass,
)
from tirc.ir import Allocate, AttrStmt, FloatImm, ForKind, IntImm, LetStmt, StringImm, Var
from tirc.ir.stmt import BufferStore, seq
from tirc.passes.storage_rewrite import StorageRewrite, allocation_bytes


def staged(outer_kind: ForKind = ForKind.SERIAL):
    """out[i, j] = sum over k of A[i*8 + j*2 + k] through a temporary, per (i, j)."""
    A, B = buf("A", (64,)), buf("B", (32,))
    tmp = buf("tmp", (2,), scope="local")
    i, j, k = Var("i"), Var("j"), Var("k")
    inner = Allocate(tmp, seq(
        loop(k, 2, BufferStore(tmp, A.vload(i * 8 + j * 2 + k), (k,))),
        BufferStore(B, tmp.vload(IntImm(0)) + tmp.vload(IntImm(1)), (i * 4 + j,))))
    return module(prim_func("f", [A, B], loop(i, 8, loop(j, 4, inner), outer_kind)))


def test_constant_allocation_is_hoisted_out_of_serial_loops_onto_the_stack() -> None:
    mod = staged()
    out, _ = run_pass(StorageRewrite(), mod)
    assert body_text(out) == (
        'tmp = T.decl_buffer((2,), "float32", scope="local")\n'
        'with T.attr(tmp, "storage_kind", "stack"):\n'
        "    for i, j in T.grid(8, 4):\n"
        "        for k in range(2):\n"
        "            tmp[k] = A[i * 8 + j * 2 + k]\n"
        "        B[i * 4 + j] = tmp[0] + tmp[1]\n")
    assert_same_results(mod, out, "f")


def test_allocation_stays_inside_a_parallel_loop() -> None:
    mod = staged(ForKind.PARALLEL)
    out, _ = run_pass(StorageRewrite(), mod)
    assert body_text(out) == (
        "for i in T.parallel(8):\n"
        '    tmp = T.decl_buffer((2,), "float32", scope="local")\n'
        '    with T.attr(tmp, "storage_kind", "stack"):\n'
        "        for j in range(4):\n"
        "            for k in range(2):\n"
        "                tmp[k] = A[i * 8 + j * 2 + k]\n"
        "            B[i * 4 + j] = tmp[0] + tmp[1]\n")
    assert_same_results(mod, out, "f")


def test_size_that_depends_on_a_loop_variable_or_a_let_stays_inside() -> None:
    n = Var("n")
    A = buf("A", (n,))
    i, j, m = Var("i"), Var("j"), Var("m")
    row = buf("row", (i + 1,))
    other = buf("other", (m,))
    body = loop(i, n, LetStmt(m, i * 2 + 1, seq(
        Allocate(row, seq(loop(j, i + 1, BufferStore(row, FloatImm(1.0), (j,))),
                          BufferStore(A, row.vload(i), (i,)))),
        Allocate(other, BufferStore(other, FloatImm(2.0), (IntImm(0),))))))
    mod = module(prim_func("f", [A], body))
    out, _ = run_pass(StorageRewrite(), mod)
    text = body_text(out)
    assert text.endswith(
        "for i in range(n):\n"
        "    row = T.decl_buffer((i + 1,), \"float32\")\n"
        '    with T.attr(row, "storage_kind", "heap"):\n'
        "        m: T.int32 = i * 2 + 1\n"
        "        other = T.decl_buffer((m,), \"float32\")\n"
        '        with T.attr(other, "storage_kind", "heap"):\n'
        "            for j in range(i + 1):\n"
        "                row[j] = T.float32(1.0)\n"
        "            A[i] = row[i]\n"
        "            other[0] = T.float32(2.0)\n")
    assert_same_results(mod, out, "f", sizes={"n": 5})


def test_stack_limit_decides_stack_or_heap() -> None:
    A = buf("A", (4,))
    small, big = buf("small", (16,)), buf("big", (16385,))
    body = Allocate(small, Allocate(big, seq(
        BufferStore(small, A.vload(IntImm(0)), (IntImm(0),)),
        BufferStore(big, small.vload(IntImm(0)), (IntImm(16384),)),
        BufferStore(A, big.vload(IntImm(16384)), (IntImm(1),)))))
    mod = module(prim_func("f", [A], body))
    assert allocation_bytes(small) == 64 and allocation_bytes(big) == 65540

    def kinds(m) -> dict[str, str]:
        found = {}
        stmt = m["f"].body
        while isinstance(stmt, (Allocate, AttrStmt)):
            if isinstance(stmt, AttrStmt):
                found[stmt.node.name] = stmt.value.value
            stmt = stmt.body
        return found

    out, _ = run_pass(StorageRewrite(), mod)
    assert kinds(out) == {"small": "stack", "big": "heap"}
    out, _ = run_pass(StorageRewrite(), mod, **{"storage.stack-limit": "63"})
    assert kinds(out) == {"small": "heap", "big": "heap"}
    out, _ = run_pass(StorageRewrite(), mod, **{"storage.stack-limit": "1048576"})
    assert kinds(out) == {"small": "stack", "big": "stack"}
    assert_same_results(mod, out, "f")


def test_running_twice_changes_nothing_more() -> None:
    once, _ = run_pass(StorageRewrite(), staged())
    twice, _ = run_pass(StorageRewrite(), once)
    assert twice is once


def test_allocation_with_an_initial_value_stays_in_place() -> None:
    A = buf("A", (4,))
    ev = buf("ev", (4,), "int32", scope="event")
    i = Var("i")
    body = loop(i, 4, Allocate(ev, BufferStore(A, FloatImm(1.0), (i,)), init=IntImm(2)))
    mod = module(prim_func("f", [A], body))
    out, _ = run_pass(StorageRewrite(), mod)
    loop_body = out["f"].body.body
    assert isinstance(loop_body, Allocate) and loop_body.init == IntImm(2)
    assert isinstance(loop_body.body, AttrStmt)
    assert loop_body.body.value == StringImm("stack")


def test_function_without_allocations_is_unchanged() -> None:
    A = buf("A", (4,))
    i = Var("i")
    mod = module(prim_func("f", [A], loop(i, 4, BufferStore(A, FloatImm(1.0), (i,)))))
    assert StorageRewrite()(mod) is mod


TWO_PASS = '''
@T.prim_func
def two_pass(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 32), "float32")
    B = T.match_buffer(b, (n, 32), "float32")
    for i in T.parallel(n):
        for j in range(32):
            row = T.decl_buffer((32,), "float32")
            for k in range(32):
                row[k] = A[i, k] * T.float32(2)
            B[i, j] = row[j] + row[31 - j]
'''


def test_text_row_buffer_leaves_the_serial_loop_but_not_the_parallel_one() -> None:
    before, after, _ = run_on_text(StorageRewrite(), TWO_PASS)
    assert func_text(after, "two_pass") == (
        "@T.prim_func\n"
        "def two_pass(a: T.handle, b: T.handle):\n"
        "    n = T.int32()\n"
        '    A = T.match_buffer(a, (n, 32), "float32")\n'
        '    B = T.match_buffer(b, (n, 32), "float32")\n'
        "    for i in T.parallel(n):\n"
        '        row = T.decl_buffer((32,), "float32")\n'
        '        with T.attr(row, "storage_kind", "stack"):\n'
        "            for j in range(32):\n"
        "                for k in range(32):\n"
        "                    row[k] = A[i, k] * T.float32(2.0)\n"
        "                B[i, j] = row[j] + row[31 - j]\n")
    assert_same_results(before, after, "two_pass", sizes={"n": 3})
