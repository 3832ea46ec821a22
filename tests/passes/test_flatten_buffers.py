"""flatten-buffers: n-d accesses become 1-d offsets; parameter buffers keep their logical form."""

from __future__ import annotations

from lowering_support import (
    assert_same_results,
    block,
    body_text,
    buf,
    func_text,
    i64,
    loop,
    module,
    prim_func,
    root,
    run_on_text,
    run_pass,
    stores_to,
)
from tirc.ir import Allocate, BufferLoad, FloatImm, IntImm, Var, dtype
from tirc.ir.stmt import BufferStore, seq
from tirc.ir.visitor import post_order_visit
from tirc.passes.flatten_buffers import FlattenBuffers
from tirc.passes.lower_blocks import LowerBlocks

I64 = dtype("int64")


def accessed_buffers(mod, name: str) -> list:
    found: list = []

    def check(n) -> None:
        if isinstance(n, (BufferLoad, BufferStore)) and n.buffer not in found:
            found.append(n.buffer)

    post_order_visit(mod[name].body, check)
    return found


def transpose_module():
    A, B = buf("A", (8, 16)), buf("B", (16, 8))
    i, j = Var("i"), Var("j")
    body = loop(i, 16, loop(j, 8, BufferStore(B, A.vload(j, i) + FloatImm(1.0), (i, j))))
    return module(prim_func("transpose", [A, B], body)), A, B


def test_row_major_accesses_become_offsets_and_params_stay_logical() -> None:
    mod, A, B = transpose_module()
    out, _ = run_pass(FlattenBuffers(), mod)
    assert body_text(out) == (
        'A_1 = T.Buffer((128,), "float32", data=A.data)\n'
        'B_1 = T.Buffer((128,), "float32", data=B.data)\n'
        "for i, j in T.grid(16, 8):\n"
        "    B_1[i * 8 + j] = A_1[j * 16 + i] + T.float32(1.0)\n")
    func = out["transpose"]
    assert func.buffer_map == mod["transpose"].buffer_map
    flat = {b.name: b for b in accessed_buffers(out, "transpose")}
    assert [str(d.value) for d in flat["A"].shape] == ["128"]
    assert flat["A"].data is A.data and flat["B"].data is B.data
    assert_same_results(mod, out, "transpose")


def test_symbolic_int64_shape_uses_products_of_dimensions() -> None:
    n, m = Var("n", I64), Var("m", I64)
    A, B = buf("A", (n, m, i64(4))), buf("B", (n,))
    i, j, k = Var("i", I64), Var("j", I64), Var("k", I64)
    body = loop(i, n, seq(BufferStore(B, FloatImm(0.0), (i,)), loop(j, m, loop(k, i64(4), (
        BufferStore(B, B.vload(i) + A.vload(i, j, k), (i,)))))))
    mod = module(prim_func("total", [A, B], body))
    out, _ = run_pass(FlattenBuffers(), mod)
    text = body_text(out)
    assert 'A_1 = T.Buffer((n * m * T.int64(4),), "float32", data=A.data)\n' in text
    assert "B[i] = B[i] + A_1[i * (m * T.int64(4)) + j * T.int64(4) + k]" in text
    flat_a = next(b for b in accessed_buffers(out, "total") if b.name == "A")
    assert flat_a.shape[0].dtype == I64
    assert_same_results(mod, out, "total", sizes={"n": 3, "m": 5})


def test_explicit_strides_and_elem_offset_are_used() -> None:
    A = buf("A", (4, 4), strides=(IntImm(8), IntImm(1)))
    B = buf("B", (4,), strides=(IntImm(2),), elem_offset=IntImm(1))
    i = Var("i")
    body = loop(i, 4, BufferStore(B, A.vload(i, i), (i,)))
    mod = module(prim_func("diag", [A, B], body))
    out, _ = run_pass(FlattenBuffers(), mod)
    assert body_text(out).endswith(
        'A_1 = T.Buffer((28,), "float32", data=A.data)\n'
        'B_1 = T.Buffer((8,), "float32", data=B.data)\n'
        "for i in range(4):\n"
        "    B_1[1 + i * 2] = A_1[i * 8 + i]\n")
    sizes = {b.name: b.shape[0].value for b in accessed_buffers(out, "diag")}
    assert sizes == {"B": 8, "A": 28}  # 1 + (4 - 1) * 2 + offset 1; 1 + 3 * 8 + 3 * 1


def test_allocations_and_zero_dim_buffers_are_flattened() -> None:
    A, B = buf("A", (4, 3)), buf("B", ())
    tmp = buf("tmp", (4, 3))
    i, j, i2, j2 = Var("i"), Var("j"), Var("i2"), Var("j2")
    body = Allocate(tmp, seq(
        loop(i, 4, loop(j, 3, BufferStore(tmp, A.vload(i, j) * A.vload(i, j), (i, j)))),
        BufferStore(B, FloatImm(0.0), ()),
        loop(i2, 4, loop(j2, 3, BufferStore(B, B.vload() + tmp.vload(i2, j2), ())))))
    mod = module(prim_func("sumsq", [A, B], body))
    out, _ = run_pass(FlattenBuffers(), mod)
    assert body_text(out) == (
        'A_1 = T.Buffer((12,), "float32", data=A.data)\n'
        'B_1 = T.Buffer((1,), "float32", data=B.data)\n'
        'tmp = T.decl_buffer((12,), "float32")\n'
        "for i, j in T.grid(4, 3):\n"
        "    tmp[i * 3 + j] = A_1[i * 3 + j] * A_1[i * 3 + j]\n"
        "B_1[0] = T.float32(0.0)\n"
        "for i2, j2 in T.grid(4, 3):\n"
        "    B_1[0] = B_1[0] + tmp[i2 * 3 + j2]\n")
    assert_same_results(mod, out, "sumsq")


def test_one_dimensional_buffers_are_kept_as_they_are() -> None:
    A, B = buf("A", (8,)), buf("B", (8,))
    i = Var("i")
    mod = module(prim_func("copy", [A, B], loop(i, 8, BufferStore(B, A.vload(i), (i,)))))
    out, _ = run_pass(FlattenBuffers(), mod)
    assert out is mod


def test_buffers_with_a_layout_are_left_alone_with_a_note() -> None:
    A = buf("A", (4, 4), layout="S[(4, 4):(4, 1)]")
    B = buf("B", (4, 4))
    i, j = Var("i"), Var("j")
    mod = module(prim_func("f", [A, B], loop(i, 4, loop(j, 4, BufferStore(B, A.vload(i, j),
                                                                          (i, j))))))
    out, ctx = run_pass(FlattenBuffers(), mod)
    assert body_text(out) == (
        'B_1 = T.Buffer((16,), "float32", data=B.data)\n'
        "for i, j in T.grid(4, 4):\n"
        "    B_1[i * 4 + j] = A[i, j]\n")
    assert ctx.notes == ["flatten-buffers: buffer A in f has a layout; left as is "
                         "(lower-layouts must run first)"]


def test_remaining_blocks_are_lowered_first() -> None:
    A, B = buf("A", (4, 4)), buf("B", (4, 4))
    acc = buf("acc", (2, 2))
    i, j, vi, vj = Var("i"), Var("j"), Var("vi"), Var("vj")
    blk = block("b", [(vi, 4, "S"), (vj, 4, "S")], [i, j],
                BufferStore(B, A.vload(vi, vj) + acc.vload(IntImm(0), IntImm(1)), (vi, vj)))
    init = BufferStore(acc, FloatImm(2.0), (IntImm(0), IntImm(1)))
    mod = module(prim_func("f", [A, B], root(seq(init, loop(i, 4, loop(j, 4, blk))),
                                             allocs=(acc,))))
    out, _ = run_pass(FlattenBuffers(), mod)
    expected, _ = run_pass(FlattenBuffers(), LowerBlocks()(mod))
    assert out.script() == expected.script()
    assert body_text(out) == (
        'A_1 = T.Buffer((16,), "float32", data=A.data)\n'
        'B_1 = T.Buffer((16,), "float32", data=B.data)\n'
        'acc = T.decl_buffer((4,), "float32")\n'
        "acc[1] = T.float32(2.0)\n"
        "for i, j in T.grid(4, 4):\n"
        "    B_1[i * 4 + j] = A_1[i * 4 + j] + acc[1]\n")
    assert len(stores_to(out)) == 2
    assert_same_results(mod, out, "f")


STENCIL = '''
@T.prim_func
def stencil(a: T.handle, b: T.handle):
    h = T.int64()
    w = T.int64()
    A = T.match_buffer(a, (h, w), "float32")
    B = T.match_buffer(b, (h, w), "float32")
    tmp = T.alloc_buffer((h, w), "float32")
    for i, j in T.grid(h, w):
        tmp[i, j] = A[i, j] * T.float32(0.5)
    for i, j in T.grid(h - 2, w - 2):
        B[i + 1, j + 1] = tmp[i, j + 1] + tmp[i + 2, j + 1] + tmp[i + 1, j] + tmp[i + 1, j + 2]
'''


def test_text_symbolic_stencil_with_a_temporary() -> None:
    before, after, _ = run_on_text(FlattenBuffers(), STENCIL)
    one, two = "T.int64(1)", "T.int64(2)"
    assert func_text(after, "stencil") == (
        "@T.prim_func\n"
        "def stencil(a: T.handle, b: T.handle):\n"
        "    h = T.int64()\n"
        "    w = T.int64()\n"
        '    A = T.match_buffer(a, (h, w), "float32")\n'
        '    B = T.match_buffer(b, (h, w), "float32")\n'
        '    A_1 = T.Buffer((h * w,), "float32", data=A.data)\n'
        '    B_1 = T.Buffer((h * w,), "float32", data=B.data)\n'
        '    tmp = T.decl_buffer((h * w,), "float32")\n'
        "    for i, j in T.grid(h, w):\n"
        "        tmp[i * w + j] = A_1[i * w + j] * T.float32(0.5)\n"
        f"    for i, j in T.grid(h - {two}, w - {two}):\n"
        f"        B_1[(i + {one}) * w + (j + {one})] = tmp[i * w + (j + {one})]"
        f" + tmp[(i + {two}) * w + (j + {one})] + tmp[(i + {one}) * w + j]"
        f" + tmp[(i + {one}) * w + (j + {two})]\n")
    assert_same_results(before, after, "stencil", sizes={"h": 5, "w": 6})
