"""transform_layout: index maps and Axe layout strings."""

from __future__ import annotations

import textwrap

import numpy as np
from tirc.ir.interpreter import run_prim_func

TWO_STAGE = '''
@T.prim_func
def f(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8, 16), "float32")):
    B = T.alloc_buffer((8, 16), "float32")
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(8, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
'''

ROWS = '''
@T.prim_func
def rows(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8, 16), "float32")
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi, 0] + B[vi, 15]
'''


def schedule(kernel: str, func: str, body: str) -> str:
    return kernel + f'\n@S.schedule("{func}")\ndef _(sch):\n' + textwrap.indent(
        textwrap.dedent(body).strip(), "    ") + "\n"


def test_transform_layout_index_map(sched):
    r = sched(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        sch.transform_layout(b, ("write", 0), lambda i, j: (j // 4, i, j % 4))
    '''))
    assert r.text("f") == '''\
@T.prim_func
def f(A: T.Buffer((8, 16), "float32"), C: T.Buffer((8, 16), "float32")):
    B = T.alloc_buffer((4, 8, 4), "float32")
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(B[vj // 4, vi, vj % 4])
            B[vj // 4, vi, vj % 4] = A[vi, vj] * T.float32(2.0)
    for i, j in T.grid(8, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B[vj // 4, vi, vj % 4])
            T.writes(C[vi, vj])
            C[vi, vj] = B[vj // 4, vi, vj % 4] + T.float32(1.0)
'''
    r.check_same("f")


def test_transform_layout_by_name_and_read_index(sched):
    r = sched(schedule(ROWS, "rows", '''
        c = sch.get_block("C")
        sch.transform_layout(c, ("read", 0), lambda i, j: (j, i))
    '''))
    out = r.text("rows")
    assert 'B = T.alloc_buffer((16, 8), "float32")' in out
    assert "C[vi] = B[0, vi] + B[15, vi]" in out
    r.check_same("rows")


def test_transform_layout_region_of_window(sched):
    """A region (not a point) is mapped to the bounds of its image."""
    text = ROWS.replace("C[vi] = B[vi, 0] + B[vi, 15]", '''\
T.reads(B[vi, 0:16])
            T.writes(C[vi])
            C[vi] = B[vi, 0] + B[vi, 15]''')
    r = sched(schedule(text, "rows", '''
        b = sch.get_block("B")
        sch.transform_layout(b, "B", lambda i, j: (i // 2, j, i % 2))
    '''))
    assert "T.reads(B[vi // 2, 0:16, vi % 2])" in r.text("rows")
    r.check_same("rows")


def test_layout_string(sched):
    r = sched(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        sch.transform_layout(b, ("write", 0), layout="S[(8, 4, 4):(4, 32, 1)]")
    '''))
    out = r.text("f")
    assert 'B = T.alloc_buffer((8, 16), "float32", layout="S[(8, 4, 4):(4, 32, 1)]")' in out
    from tirc.ir.layout import TileLayout

    buf = r.after["f"].body.block.alloc_buffers[0]  # type: ignore[union-attr]
    assert isinstance(buf.layout, TileLayout)
    r.check_same("f")


def test_transform_layout_errors(sched_error):
    def err(body: str) -> str:
        return sched_error(schedule(TWO_STAGE, "f", 'b = sch.get_block("B")\n' + body))
    assert "error: transform_layout: the index map sends B's 128 elements into a shape of 160; " \
        "padding needs a pad_value" in err(
            'sch.transform_layout(b, ("write", 0), lambda i, j: (i, j // 5, j % 5))')
    assert "error: transform_layout: the index map sends two elements of B to the same place" \
        in err('sch.transform_layout(b, ("write", 0), lambda i, j: (i // 2, j, j % 2))')
    assert "error: transform_layout: the index map takes 1 indices but B has 2 dimensions" in \
        err('sch.transform_layout(b, ("write", 0), lambda i: (i,))')
    assert 'error: transform_layout: layout "S[(4, 4):(4, 1)]" holds 16 elements but B has ' \
        '128' in err('sch.transform_layout(b, ("write", 0), layout="S[(4, 4):(4, 1)]")')
    assert 'error: transform_layout: bad layout "S[(4, 4):(4, 1)"' in \
        err('sch.transform_layout(b, ("write", 0), layout="S[(4, 4):(4, 1)")')
    assert 'error: transform_layout: block "B" has 1 read regions; index 1 is out of range' in \
        err('sch.transform_layout(b, ("read", 1), lambda i, j: (j, i))')


def test_transform_layout_assume_injective(sched, sched_error):
    """TVM's keyword: the schedule vouches for the map, so only the size is checked."""
    body = '''
        b = sch.get_block("B")
        sch.transform_layout(b, ("write", 0), lambda i, j: (j, i), assume_injective_transform=True)
    '''
    r = sched(schedule(TWO_STAGE, "f", body))
    r.check_same("f")
    msg = sched_error(schedule(TWO_STAGE, "f", body.replace("(j, i)", "(i, j // 5, j % 5)")))
    assert "padding needs a pad_value" in msg
    msg = sched_error(schedule(TWO_STAGE, "f", body.replace("=True", "=1")))
    assert "error: transform_layout: assume_injective_transform must be True or False" in msg


def test_transform_layout_pad_value(sched, sched_error):
    r = sched(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        sch.transform_layout(b, ("write", 0), lambda i, j: (i, j // 5, j % 5), pad_value=0.0)
    '''))
    assert '''\
    for ax0, ax1, ax2 in T.grid(8, 4, 5):
        with T.block("B_pad"):
            v0, v1, v2 = T.axis.remap("SSS", [ax0, ax1, ax2])
            T.where(ax1 * 5 + ax2 >= 16)
            T.reads()
            T.writes(B[v0, v1, v2])
            B[v0, v1, v2] = T.float32(0.0)
    for i, j in T.grid(8, 16):
        with T.block("C"):''' in r.text("f")
    r.check_same("f")
    msg = sched_error(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        sch.transform_layout(b, ("read", 0), lambda i, j: (i, j // 5, j % 5), pad_value=0.0)
    '''))
    assert "error: transform_layout: pad_value needs the block that produces A, but no block " \
        "writes it (an input)" in msg
    msg = sched_error(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        sch.transform_layout(b, ("write", 0), lambda i, j: (i, (j + 1) // 5, j % 5),
                             pad_value=0.0)
    '''))
    assert "error: transform_layout: cannot find the padding: index j is not an output of " \
        "the map" in msg


def test_transform_layout_pads_an_output(sched):
    """The padding of an output holds pad_value; the rest holds the results."""
    r = sched(schedule(TWO_STAGE, "f", '''
        c = sch.get_block("C")
        sch.transform_layout(c, ("write", 0), lambda i, j: (i // 3, j, i % 3), pad_value=-1.0)
    '''))
    a = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    out = np.zeros((3, 16, 3), "float32")
    run_prim_func(r.after["f"], [a, out])  # type: ignore[arg-type]
    full = out.transpose(0, 2, 1).reshape(9, 16)
    np.testing.assert_allclose(full[:8], a * 2 + 1, rtol=1e-6)
    assert (full[8] == -1.0).all()


def test_an_index_map_over_int64_indices_is_int64_throughout(sched):
    """A lambda reads as int32 (`j // 5`); over a buffer of int64 extents its parameters become
    int64 and so must its constants: left `vj // 5` (int64 // int32), the LLVM backend failed
    on the store (from the schedule fuzzer)."""
    from tirc.ir.expr import BinOp
    from tirc.ir.visitor import post_order_visit

    kernel = TWO_STAGE.replace("(8, 16)", "(T.int64(8), T.int64(16))").replace(
        "T.grid(8, 16)", "T.grid(T.int64(8), T.int64(16))")
    r = sched(schedule(kernel, "f", '''
        b = sch.get_block("B")
        sch.transform_layout(b, ("write", 0), lambda i, j: (i, j // 5, j % 5), pad_value=0.0)
    '''))
    mixed: list[BinOp] = []
    post_order_visit(r.after["f"].body, lambda n: mixed.append(n) if isinstance(n, BinOp)
                     and n.a.dtype != n.b.dtype else None)
    assert not mixed
    assert "B[vi, vj // T.int64(5), vj % T.int64(5)] = A[vi, vj] * T.float32(2.0)" in r.text("f")
    r.check_same("f")


def test_padding_after_a_parallel_loop_keeps_its_iterations_apart(sched, sched_error):
    """B computed at C's parallel loop has a copy per iteration; the padding block after the
    loop makes it one shared buffer. Iterations writing their own rows of it stay accepted;
    iterations each recomputing all of it would race (the interpreter's data race, from the
    schedule fuzzer) and are refused."""
    rows = sched(schedule(TWO_STAGE, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        sch.compute_at(b, i)
        sch.parallel(i)
        sch.transform_layout(b, ("write", 0), lambda i, j: (i, j // 5, j % 5), pad_value=0.0)
    '''))
    assert 'with T.block("B_pad")' in rows.text("f")
    rows.check_same("f")
    whole = TWO_STAGE.replace("B[vi, vj] + T.float32(1)", "B[0, vj] + T.float32(1)")
    msg = sched_error(schedule(whole, "f", '''
        b = sch.get_block("B")
        c = sch.get_block("C")
        i, j = sch.get_loops(c)
        sch.compute_at(b, i)
        sch.parallel(i)
        sch.transform_layout(b, ("write", 0), lambda i, j: (i, j // 5, j % 5), pad_value=0.0)
    '''))
    assert "error: transform_layout (pad_value) under parallel loop i" in msg
