"""TVM's hand-written cross-thread reduction (`T.comm_reducer` attribute, then
`T.tvm_thread_allreduce`), as TVM's decode-attention kernel writes it: every thread of a
group gets the group's reduction, in the GPU interpreter and in PTX."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import lower, require_ptxas
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter.gpu import GPUInterpreter

KERNEL = """
@T.prim_func
def f(A: T.Buffer((2, 4, 24), "float32"), B: T.Buffer((2, 4, 24), "float32")):
    for tz in T.thread_binding(2, thread="threadIdx.z"):
        for ty in T.thread_binding(4, thread="threadIdx.y"):
            for tx in T.thread_binding(24, thread="threadIdx.x"):
                with T.sblock("b"):
                    acc = T.sblock_alloc_buffer((1,), scope="local")
                    t0 = T.sblock_alloc_buffer((1,), scope="local")
                    B[tz, ty, tx] = T.float32(0)
                    for j in range(2):
                        acc[0] = A[tz, ty, tx] + T.Cast("float32", j)
                        with T.sblock("block_cross_thread"):
                            T.reads(acc[0])
                            T.writes(t0[0])
                            T.attr(T.comm_reducer(REDUCER, [IDENTITY]), "reduce_scope", 0)
                            T.tvm_thread_allreduce(T.uint32(1), acc[0], COND, t0[0], THREADS)
                        B[tz, ty, tx] = B[tz, ty, tx] + t0[0]
"""


def _run(**subst: str) -> np.ndarray:
    src = KERNEL
    for k, v in subst.items():
        src = src.replace(k, v)
    a = np.random.default_rng(0).standard_normal((2, 4, 24)).astype(np.float32)
    out = np.zeros_like(a)
    GPUInterpreter(lower(parse(src))).call("f", a, out)
    return a, out


def test_sum_over_one_thread_axis_reaches_every_thread_of_the_group() -> None:
    a, out = _run(REDUCER="lambda x, y: x + y", IDENTITY="T.float32(0)",
                  COND="T.bool(True)", THREADS="tx")
    want = sum(np.broadcast_to((a + j).sum(2, keepdims=True), a.shape) for j in range(2))
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_max_over_two_axes_where_the_condition_holds() -> None:
    """Threads whose condition is false give the identity; the group is the threads that
    differ only in the reduced axes (here ty and tx, for each tz)."""
    a, out = _run(REDUCER="lambda x, y: T.max(x, y)", IDENTITY="T.float32(-1e30)",
                  COND="tx < 20", THREADS="tx, ty")
    want = sum(np.broadcast_to((a + j)[:, :, :20].max(axis=(1, 2), keepdims=True), a.shape)
               for j in range(2))
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_the_with_form_of_the_reducer_attribute() -> None:
    """`with T.attr(T.comm_reducer(...), "reduce_scope", ...):` over the allreduce, as TVM
    prints it too, means the same."""
    with_form = KERNEL.replace(
        'T.attr(T.comm_reducer(REDUCER, [IDENTITY]), "reduce_scope", 0)\n',
        'with T.attr(T.comm_reducer(REDUCER, [IDENTITY]), "reduce_scope", '
        'T.reinterpret("handle", T.uint64(0))):\n    ')
    assert with_form != KERNEL
    a = np.random.default_rng(0).standard_normal((2, 4, 24)).astype(np.float32)
    outs = []
    for src in (KERNEL, with_form):
        src = src.replace("REDUCER", "lambda x, y: x + y").replace("IDENTITY", "T.float32(0)")
        out = np.zeros_like(a)
        GPUInterpreter(lower(parse(src.replace("COND", "T.bool(True)").replace(
            "THREADS", "tx")))).call("f", a, out)
        outs.append(out)
    np.testing.assert_array_equal(outs[1], outs[0])


def test_it_assembles() -> None:
    from tirc.driver import compile_ptx

    require_ptxas()
    src = KERNEL.replace("REDUCER", "lambda x, y: x + y").replace("IDENTITY", "T.float32(0)")
    res = compile_ptx(parse(src.replace("COND", "T.bool(True)").replace("THREADS", "tx")),
                      "cuda -arch=sm_80")
    assert "bar.sync" in res.ptx and res.cubin()


@pytest.mark.parametrize("change, message", [
    (('T.attr(T.comm_reducer(REDUCER, [IDENTITY]), "reduce_scope", 0)', "T.evaluate(0)"),
     "17:29: T.tvm_thread_allreduce needs T.attr(T.comm_reducer(...), \"reduce_scope\", 0) "
     "right before it"),
    (("THREADS", "j"), "17:94: T.tvm_thread_allreduce reduces over the variables of "
     "threadIdx loops around it"),
    (("IDENTITY", "T.int32(0)"), "17:29: T.tvm_thread_allreduce of a float32 value into "
     "float32 with a int32 reducer"),
])
def test_misuse_is_reported_at_its_place(change: tuple[str, str], message: str) -> None:
    src = KERNEL.replace(*change)
    for k, v in (("REDUCER", "lambda x, y: x + y"), ("IDENTITY", "T.float32(0)"),
                 ("COND", "T.bool(True)"), ("THREADS", "tx")):
        src = src.replace(k, v)
    with pytest.raises(CompileError) as info:
        parse(src, "k.tir")
    d = info.value.diagnostics[0]
    assert f"{d.span.line}:{d.span.col}: {d.message}" == message
