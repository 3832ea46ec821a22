"""The `lower-init` pass: exact printed results, and meaning kept (checked by the interpreter)."""

from __future__ import annotations

from lowering_support import assert_same_results, block, body_text, buf, loop, module, prim_func
from tirc.ir import BufferStore, FloatImm, IntImm, IterKind, IterVar, Range, Var
from tirc.ir.dtype import dtype
from tirc.passes.lower_init import LowerInit
from tirc.passes.registry import all_passes

F32 = dtype("float32")
ZERO = FloatImm(0.0, F32)


def matmul(n: int = 4, m: int = 5, k: int = 6):
    A, B, C = buf("A", (n, k)), buf("B", (k, m)), buf("C", (n, m))
    i, j, r = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    body = BufferStore(C, C.vload(vi, vj) + A.vload(vi, vk) * B.vload(vk, vj), (vi, vj))
    blk = block("C", [(vi, n, "S"), (vj, m, "S"), (vk, k, "R")], [i, j, r], body,
                init=BufferStore(C, ZERO, (vi, vj)))
    return module(prim_func("matmul", [A, B, C], loop(i, n, loop(j, m, loop(r, k, blk)))))


def test_registered() -> None:
    assert all_passes()["lower-init"] is LowerInit
    assert LowerInit.description


def test_matmul_init_becomes_if() -> None:
    mod = matmul()
    out = LowerInit()(mod)
    assert body_text(out) == (
        "for i, j, k in T.grid(4, 5, 6):\n"
        '    with T.block("C"):\n'
        '        vi, vj, vk = T.axis.remap("SSR", [i, j, k])\n'
        "        T.reads()\n"
        "        T.writes()\n"
        "        if vk == 0:\n"
        "            C[vi, vj] = T.float32(0.0)\n"
        "        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
    )
    assert_same_results(mod, out, "matmul", seeds=(0, 1, 2))


def test_two_reduce_vars_and_nonzero_domain_min() -> None:
    A, Acc = buf("A", (3, 4, 5)), buf("Acc", (3,))
    i, r, q = Var("i"), Var("r"), Var("q")
    vi, vr, vq = Var("vi"), Var("vr"), Var("vq")
    body = BufferStore(Acc, Acc.vload(vi) + A.vload(vi, vr, vq), (vi,))
    blk = block("acc", [(vi, 3, "S"), (vr, 4, "R")], [i, r, q + 1], body,
                init=BufferStore(Acc, ZERO, (vi,)))
    ivs = (*blk.block.iter_vars, IterVar(vq, Range(IntImm(1), IntImm(4)), IterKind.REDUCE))
    blk = blk.replace(block=blk.block.replace(iter_vars=ivs))
    mod = module(prim_func("rowsum", [A, Acc], loop(i, 3, loop(r, 4, loop(q, 4, blk)))))
    out = LowerInit()(mod)
    assert body_text(out) == (
        "for i, r, q in T.grid(3, 4, 4):\n"
        '    with T.block("acc"):\n'
        "        vi = T.axis.spatial(3, i)\n"
        "        vr = T.axis.reduce(4, r)\n"
        "        vq = T.axis.reduce((1, 5), q + 1)\n"
        "        T.reads()\n"
        "        T.writes()\n"
        "        if vr == 0 and vq == 1:\n"
        "            Acc[vi] = T.float32(0.0)\n"
        "        Acc[vi] = Acc[vi] + A[vi, vr, vq]\n"
    )
    assert_same_results(mod, out, "rowsum")


def test_init_without_reduce_vars_runs_unconditionally() -> None:
    A = buf("A", (4,))
    i, vi = Var("i"), Var("vi")
    body = BufferStore(A, A.vload(vi) + FloatImm(1.0, F32), (vi,))
    blk = block("B", [(vi, 4, "S")], [i], body, init=BufferStore(A, ZERO, (vi,)))
    mod = module(prim_func("f", [A], loop(i, 4, blk)))
    out = LowerInit()(mod)
    assert body_text(out) == (
        "for i in range(4):\n"
        '    with T.block("B"):\n'
        '        vi = T.axis.remap("S", [i])\n'
        "        T.reads()\n"
        "        T.writes()\n"
        "        A[vi] = T.float32(0.0)\n"
        "        A[vi] = A[vi] + T.float32(1.0)\n"
    )
    assert_same_results(mod, out, "f")


def test_int64_iteration_variables() -> None:
    i64 = dtype("int64")
    A, Acc = buf("A", (2, 3)), buf("Acc", (2,))
    i, r, vi, vr = Var("i", i64), Var("r", i64), Var("vi", i64), Var("vr", i64)
    body = BufferStore(Acc, Acc.vload(vi) + A.vload(vi, vr), (vi,))
    blk = block("acc", [(vi, IntImm(2, i64), "S"), (vr, IntImm(3, i64), "R")], [i, r], body,
                init=BufferStore(Acc, ZERO, (vi,)))
    mod = module(prim_func("f", [A, Acc], loop(i, 2, loop(r, 3, blk))))
    out = LowerInit()(mod)
    assert "        if vr == T.int64(0):\n" in out.script()
    assert_same_results(mod, out, "f")


def test_module_without_init_is_unchanged() -> None:
    A = buf("A", (4,))
    i = Var("i")
    mod = module(prim_func("f", [A], loop(i, 4, BufferStore(A, ZERO, (i,)))))
    assert LowerInit()(mod) is mod


MATMUL = '''
@T.prim_func
def mm(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"),
       C: T.Buffer((4, 4), "float32")):
    for i, j, k in T.grid(4, 4, 4):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''

MATMUL_LOWERED = '''# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def mm(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"), C: T.Buffer((4, 4), "float32")):
        for i, j, k in T.grid(4, 4, 4):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                if vk == 0:
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''  # noqa: E501 (the printer writes the signature on one line)


def test_text_in_text_out() -> None:
    from tirc.frontend import parse

    mod = parse(MATMUL, filename="mm.tir")
    out = LowerInit()(mod)
    assert out.script() == MATMUL_LOWERED
    assert LowerInit()(parse(out.script())).script() == MATMUL_LOWERED
    assert_same_results(mod, out, "mm")
