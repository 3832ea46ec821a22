"""lower-blocks: blocks become plain loops, with the same results in the interpreter."""

from __future__ import annotations

import pytest
from lowering_support import (
    assert_same_results,
    block,
    body_text,
    buf,
    count_nodes,
    func_text,
    i64,
    loop,
    module,
    prim_func,
    root,
    run_on_text,
    run_pass,
)
from tirc.frontend import parse
from tirc.ir import (
    Allocate,
    Block,
    BlockRealize,
    BufferRegion,
    CompileError,
    FloatImm,
    IfThenElse,
    IntImm,
    MatchBufferRegion,
    Range,
    Var,
    dtype,
)
from tirc.ir.interpreter.values import InterpreterError
from tirc.ir.stmt import BufferStore, seq
from tirc.passes.lower_blocks import LowerBlocks

I64 = dtype("int64")


def matmul_module() -> tuple:
    A, B, C = buf("A", (16, 16)), buf("B", (16, 16)), buf("C", (16, 16))
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    update = BufferStore(C, C.vload(vi, vj) + A.vload(vi, vk) * B.vload(vk, vj), (vi, vj))
    blk = block("C", [(vi, 16, "S"), (vj, 16, "S"), (vk, 16, "R")], [i, j, k], update,
                init=BufferStore(C, FloatImm(0.0), (vi, vj)))
    body = loop(i, 16, loop(j, 16, loop(k, 16, blk)))
    return module(prim_func("matmul", [A, B, C], root(body)))


def test_matmul_init_becomes_if_on_first_reduction_iteration() -> None:
    mod = matmul_module()
    out, _ = run_pass(LowerBlocks(), mod)
    assert body_text(out) == (
        "for i, j, k in T.grid(16, 16, 16):\n"
        "    if k == 0:\n"
        "        C[i, j] = T.float32(0.0)\n"
        "    C[i, j] = C[i, j] + A[i, k] * B[k, j]\n")
    assert count_nodes(out, Block) == 0 and count_nodes(out, BlockRealize) == 0
    assert_same_results(mod, out, "matmul")


def test_where_predicate_becomes_if_and_bindings_are_substituted() -> None:
    A, B = buf("A", (30,)), buf("B", (30,))
    io, ii, vi = Var("io"), Var("ii"), Var("vi")
    value = io * 8 + ii
    blk = block("B", [(vi, 30, "S")], [value],
                BufferStore(B, A.vload(vi) * FloatImm(2.0), (vi,)), predicate=value < 30)
    mod = module(prim_func("scale", [A, B], loop(io, 4, loop(ii, 8, blk))))
    out, _ = run_pass(LowerBlocks(), mod)
    assert body_text(out) == (
        "for io, ii in T.grid(4, 8):\n"
        "    if io * 8 + ii < 30:\n"
        "        B[io * 8 + ii] = A[io * 8 + ii] * T.float32(2.0)\n")
    assert_same_results(mod, out, "scale")


def rowsum_with_local_buffers() -> tuple:
    """A root allocation, and a block with its own allocation holding a nested block."""
    A, B = buf("A", (16, 4)), buf("B", (16,))
    scratch = buf("scratch", (16,))
    acc = buf("acc", (1,), scope="local")
    i, k, vi, vk, i2, vi2 = Var("i"), Var("k"), Var("vi"), Var("vk"), Var("i2"), Var("vi2")
    inner = block("acc", [(vk, 4, "R")], [k],
                  BufferStore(acc, acc.vload(IntImm(0)) + A.vload(vi, vk), (IntImm(0),)))
    outer_body = seq(BufferStore(acc, FloatImm(0.0), (IntImm(0),)), loop(k, 4, inner),
                     BufferStore(scratch, acc.vload(IntImm(0)), (vi,)))
    outer = block("row", [(vi, 16, "S")], [i], outer_body, alloc_buffers=(acc,))
    copy = block("copy", [(vi2, 16, "S")], [i2],
                 BufferStore(B, scratch.vload(vi2) + FloatImm(1.0), (vi2,)))
    body = seq(loop(i, 16, outer), loop(i2, 16, copy))
    return module(prim_func("rowsum", [A, B], root(body, allocs=(scratch,))))


def test_alloc_buffers_become_allocates_around_the_block_body() -> None:
    mod = rowsum_with_local_buffers()
    out, _ = run_pass(LowerBlocks(), mod)
    assert body_text(out) == (
        'scratch = T.decl_buffer((16,), "float32")\n'
        "for i in range(16):\n"
        '    acc = T.decl_buffer((1,), "float32", scope="local")\n'
        "    acc[0] = T.float32(0.0)\n"
        "    for k in range(4):\n"
        "        acc[0] = acc[0] + A[i, k]\n"
        "    scratch[i] = acc[0]\n"
        "for i2 in range(16):\n"
        "    B[i2] = scratch[i2] + T.float32(1.0)\n")
    assert count_nodes(out, Allocate) == 2
    assert_same_results(mod, out, "rowsum")


def match_module(sub_shape: tuple, region: tuple) -> tuple:
    """Blocks that view tiles of A and B through match_buffer."""
    A, B = buf("A", (16, 8)), buf("B", (16, 8))
    i, j, k, vi = Var("i"), Var("j"), Var("k"), Var("vi")
    a_sub = buf("A_sub", sub_shape)
    b_sub = buf("B_sub", sub_shape)

    def reg(b):
        return BufferRegion(b, tuple(Range(lo(vi), IntImm(e)) for lo, e in region))

    if len(sub_shape) == 2:
        body = loop(j, sub_shape[0], loop(k, sub_shape[1], BufferStore(
            b_sub, a_sub.vload(j, k) + FloatImm(1.0), (j, k))))
    else:
        body = loop(k, sub_shape[0], BufferStore(b_sub, a_sub.vload(k) * FloatImm(3.0), (k,)))
    matches = (MatchBufferRegion(a_sub, reg(A)), MatchBufferRegion(b_sub, reg(B)))
    blk = block("tile", [(vi, 4 if len(sub_shape) == 2 else 16, "S")], [i], body,
                match_buffers=matches)
    return module(prim_func("tiles", [A, B], loop(i, 4 if len(sub_shape) == 2 else 16, blk)))


def test_match_buffer_accesses_become_offsets_into_the_source() -> None:
    mod = match_module((4, 8), ((lambda vi: vi * 4, 4), (lambda vi: IntImm(0), 8)))
    out, _ = run_pass(LowerBlocks(), mod)
    assert body_text(out) == (
        "for i, j, k in T.grid(4, 4, 8):\n"
        "    B[i * 4 + j, k] = A[i * 4 + j, k] + T.float32(1.0)\n")
    assert_same_results(mod, out, "tiles")


def test_match_buffer_of_lower_rank_takes_the_non_unit_dimension() -> None:
    mod = match_module((8,), ((lambda vi: vi, 1), (lambda vi: IntImm(0), 8)))
    out, _ = run_pass(LowerBlocks(), mod)
    assert body_text(out) == (
        "for i, k in T.grid(16, 8):\n"
        "    B[i, k] = A[i, k] * T.float32(3.0)\n")
    assert_same_results(mod, out, "tiles")


def test_match_buffer_shape_variable_is_bound_to_the_region_extent() -> None:
    n = Var("n")
    A, B = buf("A", (n, 8)), buf("B", (n, 8))
    i, k, vi, m = Var("i"), Var("k"), Var("vi"), Var("m")
    a_row, b_row = buf("a_row", (m,)), buf("b_row", (m,))
    matches = (MatchBufferRegion(a_row, BufferRegion(A, (Range(vi, IntImm(1)),
                                                          Range(IntImm(0), IntImm(8))))),
               MatchBufferRegion(b_row, BufferRegion(B, (Range(vi, IntImm(1)),
                                                          Range(IntImm(0), IntImm(8))))))
    body = loop(k, m, BufferStore(b_row, a_row.vload(k) - FloatImm(1.0), (k,)))
    blk = block("row", [(vi, n, "S")], [i], body, match_buffers=matches)
    mod = module(prim_func("rows", [A, B], loop(i, n, blk)))
    out, _ = run_pass(LowerBlocks(), mod)
    assert body_text(out).endswith(
        "for i, k in T.grid(n, 8):\n"
        "    B[i, k] = A[i, k] - T.float32(1.0)\n")
    assert_same_results(mod, out, "rows", sizes={"n": 5})


def test_match_buffer_with_too_many_dimensions_is_a_diagnostic() -> None:
    mod = match_module((8,), ((lambda vi: vi * 4, 4), (lambda vi: IntImm(0), 8)))
    with pytest.raises(CompileError) as err:
        LowerBlocks()(mod)
    assert str(err.value) == (
        "tirc: error: match_buffer 'A_sub' has 1 dimension(s), but its source region of 'A' "
        "has 2 dimension(s) of extent other than 1 (of 2)")


def test_int64_loop_values_are_cast_to_int32_iteration_variables() -> None:
    n = Var("n", I64)
    A, B = buf("A", (n,)), buf("B", (n,))
    i, vi = Var("i", I64), Var("vi")
    blk = block("copy", [(vi, 1 << 20, "S")], [i], BufferStore(B, A.vload(vi), (vi,)))
    mod = module(prim_func("copy", [A, B], loop(i, n, blk, lo=i64(0))))
    out, _ = run_pass(LowerBlocks(), mod)
    assert body_text(out) == (
        "n = T.int64()\n"
        'A = T.match_buffer(a_h, (n,), "float32")\n'
        'B = T.match_buffer(b_h, (n,), "float32")\n'
        "for i in range(n):\n"
        '    B[T.Cast("int32", i)] = A[T.Cast("int32", i)]\n')
    assert_same_results(mod, out, "copy", sizes={"n": 7})


def test_reduction_init_with_two_reduce_axes_and_symbolic_extent() -> None:
    n = Var("n")
    A, B = buf("A", (n, 4, 3)), buf("B", (n,))
    i, j, k, vi, vj, vk = (Var(x) for x in ("i", "j", "k", "vi", "vj", "vk"))
    update = BufferStore(B, B.vload(vi) + A.vload(vi, vj, vk), (vi,))
    blk = block("sum", [(vi, n, "S"), (vj, 4, "R"), (vk, 3, "R")], [i, j, k], update,
                init=BufferStore(B, FloatImm(0.0), (vi,)))
    mod = module(prim_func("sum", [A, B], loop(i, n, loop(j, 4, loop(k, 3, blk)))))
    out, _ = run_pass(LowerBlocks(), mod)
    assert "    if j == 0 and k == 0:\n        B[i] = T.float32(0.0)\n" in body_text(out)
    assert_same_results(mod, out, "sum", sizes={"n": 3})


def test_function_without_blocks_is_returned_unchanged() -> None:
    A = buf("A", (4,))
    i = Var("i")
    mod = module(prim_func("fill", [A], loop(i, 4, BufferStore(A, FloatImm(1.0), (i,)))))
    assert LowerBlocks()(mod) is mod


def test_block_without_reduce_axes_runs_init_unconditionally() -> None:
    A = buf("A", (4,))
    i, vi = Var("i"), Var("vi")
    blk = block("b", [(vi, 4, "S")], [i], BufferStore(A, A.vload(vi) + FloatImm(1.0), (vi,)),
                init=BufferStore(A, FloatImm(5.0), (vi,)))
    mod = module(prim_func("f", [A], loop(i, 4, blk)))
    out, _ = run_pass(LowerBlocks(), mod)
    assert count_nodes(out, IfThenElse) == 0
    assert body_text(out) == (
        "for i in range(4):\n"
        "    A[i] = T.float32(5.0)\n"
        "    A[i] = A[i] + T.float32(1.0)\n")
    assert_same_results(mod, out, "f")


ROWMAX_AND_TILES = '''
@T.prim_func
def rowmax(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 16), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i_0, i_1, k in T.grid((n + 3) // 4, 4, 16):
        with T.block("max"):
            vi = T.axis.spatial(n, i_0 * 4 + i_1)
            vk = T.axis.reduce(16, k)
            T.where(i_0 * 4 + i_1 < n)
            T.reads(A[vi, vk])
            T.writes(B[vi])
            with T.init():
                B[vi] = T.float32(-1000)
            B[vi] = T.max(B[vi], A[vi, vk])

@T.prim_func
def tiles(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("tile"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])
            T.writes(B[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])
            A_tile = T.match_buffer(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], (4, 4), "float32",
                                    strides=(16, 1))
            B_tile = T.match_buffer(B[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], (4, 4), "float32",
                                    strides=(16, 1))
            acc = T.alloc_buffer((4,), "float32", scope="local")
            for x in range(4):
                acc[x] = T.float32(0)
                for y in range(4):
                    acc[x] = acc[x] + A_tile[x, y]
            for x, y in T.grid(4, 4):
                B_tile[x, y] = A_tile[x, y] - acc[x] * T.float32(0.25)
'''


def test_text_split_reduction_and_matched_tiles() -> None:
    before, after, _ = run_on_text(LowerBlocks(), ROWMAX_AND_TILES)
    row = 'i_0 * T.int64(4) + T.Cast("int64", i_1)'
    assert func_text(after, "rowmax") == (
        "@T.prim_func\n"
        "def rowmax(a: T.handle, b: T.handle):\n"
        "    n = T.int64()\n"
        '    A = T.match_buffer(a, (n, 16), "float32")\n'
        '    B = T.match_buffer(b, (n,), "float32")\n'
        "    for i_0, i_1, k in T.grid((n + T.int64(3)) // T.int64(4), 4, 16):\n"
        f"        if {row} < n:\n"
        "            if k == 0:\n"
        f"                B[{row}] = T.float32(-1000.0)\n"
        f"            B[{row}] = T.max(B[{row}], A[{row}, k])\n")
    assert func_text(after, "tiles") == (
        "@T.prim_func\n"
        'def tiles(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):\n'
        "    for i, j in T.grid(4, 4):\n"
        '        acc = T.decl_buffer((4,), "float32", scope="local")\n'
        "        for x in range(4):\n"
        "            acc[x] = T.float32(0.0)\n"
        "            for y in range(4):\n"
        "                acc[x] = acc[x] + A[i * 4 + x, j * 4 + y]\n"
        "        for x, y in T.grid(4, 4):\n"
        "            B[i * 4 + x, j * 4 + y] = "
        "A[i * 4 + x, j * 4 + y] - acc[x] * T.float32(0.25)\n")
    for n in (1, 6, 8):
        assert_same_results(before, after, "rowmax", sizes={"n": n}, seeds=(0,))
    assert_same_results(before, after, "tiles")


MATCHED_TILE_TO_EXTERN = '''
from tvm.script import tir as T

@T.prim_func
def tile_call(a: T.handle) -> None:
    A = T.match_buffer(a, (32, 64))
    for i, k in T.grid(2, 4):
        with T.block():
            T.reads([])
            T.writes(A[i * 16 : i * 16 + 16, k * 16 : k * 16 + 16])
            sub = T.match_buffer(A[i * 16 : i * 16 + 16, k * 16 : k * 16 + 16], (16, 16),
                                 strides=[64, 1], offset_factor=1)
            T.evaluate(T.call_extern("int32", "tile_op", sub.data, sub.elem_offset,
                                     sub.strides[0]))
'''


def test_a_matched_tile_passed_to_an_extern_call_is_the_source_and_its_offset() -> None:
    """As TVM: `offset_factor` without `elem_offset` makes the tile's offset a variable, bound
    to the region's offset; `sub.data` is the source's storage (it was left undefined, and
    the offset printed as 0)."""
    _, after, _ = run_on_text(LowerBlocks(), MATCHED_TILE_TO_EXTERN)
    assert 'T.call_extern("int32", "tile_op", A.data, i * 16 * 64 + k * 16, 64)' in \
        func_text(after, "tile_call")


MATCHED_ELEMENT_AT_OFFSET = '''
from tvm.script import tir as T

@T.prim_func
def f(a: T.handle) -> None:
    A = T.match_buffer(a, (8, 8))
    for i, j in T.grid(8, 8):
        with T.block():
            T.reads([])
            T.writes(A[i, j])
            sub_A = T.match_buffer(A[i, j], (), elem_offset={offset})
            sub_A[()] = 1
'''


def test_a_declared_offset_not_the_regions_is_an_error() -> None:
    """TVM's LowerMatchBuffer `fail_match_store`: `elem_offset=0` on the element A[i, j] is not
    its offset (i * 8 + j). The library wrote A[i, j] regardless while the interpreter
    refused at (0, 1); lower-blocks now refuses it as TVM does, and a declared offset that
    is the region's is accepted."""
    with pytest.raises(CompileError, match="match_buffer 'sub_A' declares elem_offset = 0, but "
                                           "its region of 'A' has i \\* 8 \\+ j, which is not "
                                           "provably the same"):
        run_on_text(LowerBlocks(), MATCHED_ELEMENT_AT_OFFSET.format(offset="0"))
    before, after, _ = run_on_text(LowerBlocks(), MATCHED_ELEMENT_AT_OFFSET.format(
        offset="i * 8 + j"))
    assert "A[i, j] = T.float32(1.0)" in func_text(after, "f")
    assert_same_results(before, after, "f")


def test_a_declared_shape_not_the_regions_is_an_error() -> None:
    """A constant dimension that is not the region's extent (3 for a region of 2) is refused
    at the match, as the interpreter refuses it when it runs."""
    text = MATCHED_ELEMENT_AT_OFFSET.replace("A[i, j], (), elem_offset={offset}",
                                             "A[i, 0:2], (1, 3)").replace(
        "sub_A[()] = 1", "sub_A[0, 0] = 1").replace("T.writes(A[i, j])", "T.writes(A[i, 0:2])")
    with pytest.raises(CompileError, match="declares dimension 1 = 3, but its region of 'A' "
                                           "has 2"):
        run_on_text(LowerBlocks(), text)


MATCHED_ROWS = '''
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    with T.block("root"):
        s = T.int32()
        t = T.int32()
        A0 = T.match_buffer(A[0:4, 0:4], (4, 4), "float32", strides=[s, {second}])
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A0[vi, vj] * T.float32(2)
'''


def test_a_stride_variable_named_twice_must_be_one_value() -> None:
    """TVM's `rd_match_buffer` (found by pipeline_fuzz --run): `strides=[s, s]` over a
    row-major region binds s to 4 at the first stride and cannot also be 1 at the second,
    which TVM's LowerMatchBuffer refuses (`constraint ... unmet`). lower-blocks skipped
    every declared variable, so the library ran with s = 4 while the interpreter had bound
    s twice (last 1); both refuse it now, and `[s, t]` or `[s, 1]` are accepted."""
    with pytest.raises(CompileError, match="declares stride 1 = s \\(bound to 4 where it "
                                           "first appears\\), but its region of 'A' has 1"):
        run_on_text(LowerBlocks(), MATCHED_ROWS.format(second="s"))
    with pytest.raises(InterpreterError, match="match_buffer A0: strides 1 is 1, declared "
                                               "s = 4"):
        assert_same_results(parse(MATCHED_ROWS.format(second="s")),
                            parse(MATCHED_ROWS.format(second="s")), "f")
    for second in ("t", "1"):
        before, after, _ = run_on_text(LowerBlocks(), MATCHED_ROWS.format(second=second))
        assert_same_results(before, after, "f")


def test_a_matched_buffer_of_another_dtype_is_a_diagnostic() -> None:
    """A mutated TVM program (pipeline_fuzz --run) matched a float32 region as int8: nothing
    checked it, and the library and the interpreter read the bytes differently. TVM's
    LowerMatchBuffer requires the dtypes to be equal; tirc says so at the match."""
    text = MATCHED_ROWS.format(second="t").replace('(4, 4), "float32", strides', '(4, 4), '
                                                    '"int8", strides')
    with pytest.raises(CompileError, match="T.match_buffer: 'A0' is int8, but its region of "
                                           "'A' is float32"):
        parse(text)
