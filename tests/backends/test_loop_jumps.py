"""Code generation of `break` / `continue`: a branch to the loop's exit or increment, heap
storage of the loop body freed on the way out; the NVPTX backend shares the code, and a jump
that would leave a thread-bound loop is refused at its place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from backend_support import build_library, emit
from tirc.driver import compile_ptx
from tirc.frontend import parse
from tirc.ir import CompileError, For, ForKind, IntImm, IRModule, PrimFunc, Span, Var, dtype
from tirc.ir.expr import Call
from tirc.ir.interpreter import Interpreter
from tirc.ir.intrinsics import BREAK_LOOP
from tirc.ir.stmt import Evaluate

HEAP = '''
from tvm.script import tir as T

@T.prim_func
def scratch(A: T.Buffer((16,), "float32"), n: T.int32, limit: T.float32):
    for i in range(16):
        tmp = T.decl_buffer((n,), "float32")
        for j in range(n):
            tmp[j] = A[i] * T.Cast("float32", j)
        if tmp[n - 1] > limit:
            break
        for j in range(n):
            if j % 2 == 1:
                continue
            A[i] = A[i] + tmp[j]
'''


def test_break_frees_the_heap_storage_of_the_loop_body() -> None:
    ll = emit(parse(HEAP), "ll", None, 0).decode()
    # one free where the scope ends, one on the way out through `break`
    assert ll.count("call void @free") == 2
    assert "after.break_loop" in ll and "for.j.latch" in ll


@pytest.mark.parametrize("opt", [0, 3])
@pytest.mark.parametrize("limit", [0.5, 5.0, 1e9])
def test_compiled_jumps_agree_with_the_interpreter(tmp_path: Path, opt: int, limit: float
                                                   ) -> None:
    mod = parse(HEAP)
    lib = build_library([mod["scratch"]], tmp_path / "jumps.so", opt)
    got = np.linspace(0, 1, 16).astype("float32")
    want = got.copy()
    lib.scratch(got, 4, limit)
    Interpreter(mod).call("scratch", want, 4, limit)
    np.testing.assert_array_equal(got, want)


def test_a_jump_without_its_loop_is_a_codegen_error() -> None:
    span = Span("j.tir", 4, 9, 4, 14)
    jump = Evaluate(Call(BREAK_LOOP, (), dtype("int32"), span=span), span=span)
    loop = For(Var("i"), IntImm(0, dtype("int32")), IntImm(4, dtype("int32")),
               ForKind.PARALLEL, For(Var("j"), IntImm(0, dtype("int32")),
                                     IntImm(4, dtype("int32")), ForKind.PARALLEL, jump))
    mod = IRModule({"f": PrimFunc("f", (), {}, loop)})
    with pytest.raises(CompileError, match="'break' in a parallel loop"):
        emit(mod, "ll", None, 0)


GPU = '''
from tvm.script import tir as T

@T.prim_func
def first_big(A: T.Buffer((32, 16), "float32"), out: T.Buffer((32,), "int32")):
    for t in T.thread_binding(32, thread="threadIdx.x"):
        out[t] = -1
        for j in range(16):
            if A[t, j] < T.float32(0):
                continue
            if A[t, j] > T.float32(0.5):
                out[t] = j
                break
'''


def test_ptx_of_a_kernel_whose_threads_break_their_own_loops() -> None:
    ptx = compile_ptx(parse(GPU), "cuda -arch=sm_90").ptx
    assert ".entry" in ptx and "bra" in ptx
