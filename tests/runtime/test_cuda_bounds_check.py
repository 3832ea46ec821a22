"""-fbounds-check on a cuda target (gpu-bounds-record): a kernel's failed check fills the call's
error record and ends its thread; the runtime then raises the CPU build's TircError (-5, the
same message). Each program runs through the fake driver (kernels in the GPU interpreter, on
the lowered IR) at -O0 and -O3, and in the GPU interpreter on the host function; the PTX goes
through ptxas."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_support import SAMPLES, FakeDriver, require_ptxas, sample_module
from tirc.backends.nvptx import compile_ptx, cuda_target
from tirc.backends.nvptx.ptxas import run_ptxas
from tirc.driver import build, lower
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.interpreter.gpu import check_races, run_gpu_func
from tirc.ir.module import IRModule
from tirc.runtime import TircError, load
from tirc.runtime.cuda import load_ptx

HEADER = '''
from tvm.script import tir as T

'''

# A read at an index taken from data: the compiler cannot prove it in bounds.
GATHER = HEADER + '''
@T.prim_func
def main(A: T.Buffer((16,), "float32"), I: T.Buffer((8,), "int32"),
         B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[I[vi]]
'''

# A write at an index from data, two dimensions, the shape symbolic.
SCATTER = HEADER + '''
@T.prim_func
def main(a: T.handle, r: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 4), "float32")
    R = T.match_buffer(r, (n,), "int64")
    B = T.match_buffer(b, (n, 4), "float32")
    for i, j in T.grid(n, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[R[vi], vj] = A[vi, vj] * T.float32(2)
'''

# A check before barriers: each block sums a row at gathered columns, 32 threads adding
# partial sums in shared memory after a barrier each; a thread whose column is out of bounds
# leaves before the barriers, which must not hang (or, in the interpreter, diverge).
ROW_GATHER = HEADER + '''
@T.prim_func
def main(a: T.handle, c: T.handle, b: T.handle):
    m = T.int64()
    n = T.int64()
    A = T.match_buffer(a, (m, n), "float32")
    C = T.match_buffer(c, (32,), "int64")
    B = T.match_buffer(b, (m,), "float32")
    partial = T.alloc_buffer((32,), "float32", scope="shared")
    for bx in T.thread_binding(m, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            partial[tx] = A[bx, C[tx]]
        for s in T.unroll(5):
            T.tvm_storage_sync("shared")
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                if tx < T.call_intrin("int32", "shift_right", 16, s):
                    partial[tx] = (
                        partial[tx] + partial[tx + T.call_intrin("int32", "shift_right", 16, s)]
                    )
        T.tvm_storage_sync("shared")
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            if tx == 0:
                B[bx] = partial[0]
'''

# A graph-level `if`, a gather in each branch (R.take at indices from data): the launch plan
# branches, and the record reports the check of the branch that ran.
TAKE_BRANCHES = '''
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @R.function
    def main(
        x: R.Tensor((8,), "float32"), idx: R.Tensor((4,), "int64"), c: R.Prim("bool")
    ) -> R.Tensor((4,), "float32"):
        if c:
            y = R.take(x, idx, axis=0)
        else:
            t = R.exp(x)
            y = R.take(t, idx, axis=0)
        return y
'''

OPTS = [0, 3]
ARCH = "cuda -arch=sm_90"
CHECKED = {"bounds-check": "1"}


@cache
def _lowered(text: str, opt: int) -> IRModule:
    return lower(parse(text), cuda_target(ARCH), opt, config=CHECKED)


def _load(text: str, opt: int, tmp_path: Path) -> Any:
    """`main` of the program's PTX built with -fbounds-check, on the fake driver."""
    lowered = _lowered(text, opt)
    result = compile_ptx(lowered, ARCH, opt)
    path = tmp_path / f"m{opt}.ptx"
    path.write_text(result.ptx)
    return load_ptx(path, FakeDriver(lowered)).main


def _gather_args(index: list[int]) -> list[np.ndarray]:
    return [np.arange(16, dtype=np.float32) + 0.5, np.array(index, np.int32),
            np.zeros(8, np.float32)]


def _scatter_args(rows: list[int]) -> list[np.ndarray]:
    n = len(rows)
    return [np.arange(4 * n, dtype=np.float32).reshape(n, 4), np.array(rows, np.int64),
            np.zeros((n, 4), np.float32)]


def _row_args(cols: list[int]) -> list[np.ndarray]:
    return [np.arange(3 * 40, dtype=np.float32).reshape(3, 40), np.array(cols, np.int64),
            np.zeros(3, np.float32)]


GOOD_COLS = [(7 * k) % 40 for k in range(32)]
BAD_COLS = [*GOOD_COLS[:9], 99, *GOOD_COLS[10:]]
CASES = [
    ("gather", GATHER, lambda: _gather_args([3, 1, 15, 0, 2, 2, 17, 5]),
     "out-of-bounds read of A[17], shape (16,)"),
    ("gather_negative", GATHER, lambda: _gather_args([3, 1, 15, 0, -4, 2, 7, 5]),
     "out-of-bounds read of A[-4], shape (16,)"),
    ("scatter", SCATTER, lambda: _scatter_args([2, 0, 1, 5, 3]),
     "out-of-bounds write to B[5, 0], shape (5, 4)"),
    ("barrier", ROW_GATHER, lambda: _row_args(BAD_COLS),
     "out-of-bounds read of A[0, 99], shape (3, 40)"),
]
GOOD = [
    ("gather", GATHER, lambda: _gather_args([3, 1, 15, 0, 2, 2, 7, 5])),
    ("scatter", SCATTER, lambda: _scatter_args([2, 0, 1, 4, 3])),
    ("barrier", ROW_GATHER, lambda: _row_args(GOOD_COLS)),
]


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize(("name", "text", "make", "message"), CASES,
                         ids=[c[0] for c in CASES])
def test_out_of_bounds_fails_with_the_cpu_message(name: str, text: str, make: Any,
                                                  message: str, opt: int,
                                                  tmp_path: Path) -> None:
    """The fake-driver call and the GPU interpreter both fail with the check's message
    (the place, the index values, the shape), the call with code -5."""
    main = _load(text, opt, tmp_path)
    with pytest.raises(TircError) as exc:
        main(*make())
    assert exc.value.code == -5
    assert str(exc.value).endswith(message), str(exc.value)
    assert str(exc.value).startswith("<string>:"), str(exc.value)
    with pytest.raises(InterpreterError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        run_gpu_func(_lowered(text, opt), "main", make())


@pytest.mark.parametrize(("name", "text", "make", "message"), CASES[:3],
                         ids=[c[0] for c in CASES[:3]])
def test_the_message_is_the_cpu_builds(name: str, text: str, make: Any, message: str,
                                       tmp_path: Path) -> None:
    """The same program built for the CPU with -fbounds-check fails with the same message."""
    lib = build(parse(text), tmp_path / "lib.so", None, 0, config=CHECKED)
    with pytest.raises(TircError) as cpu:
        load(str(lib)).main(*make())
    with pytest.raises(TircError) as gpu:
        _load(text, 0, tmp_path)(*make())
    assert (cpu.value.code, str(cpu.value)) == (gpu.value.code, str(gpu.value))


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize(("name", "text", "make"), GOOD, ids=[c[0] for c in GOOD])
def test_in_bounds_programs_give_the_interpreters_results(name: str, text: str, make: Any,
                                                          opt: int, tmp_path: Path) -> None:
    """With every index in bounds the checks change nothing: the results are the reference
    interpreter's, and a failed call before does not fail the next one (fresh record)."""
    want = make()
    Interpreter(parse(text)).call("main", *want)
    main = _load(text, opt, tmp_path)
    if name == "gather":
        with pytest.raises(TircError):
            main(*_gather_args([0, 0, 0, 0, 0, 0, 0, 16]))
    got = make()
    main(*got)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_the_record_is_in_the_plan_and_the_kernels() -> None:
    """The host plan carries the record and the formats; each kernel with checks takes it."""
    result = compile_ptx(_lowered(SCATTER, 0), ARCH, 0)
    assert result.metadata["tirc_abi"] == 3  # a reader of version 2 would not pass the record
    (fn,) = result.metadata["functions"]
    record = fn["bounds_record"]
    assert [c["values"] for c in record["checks"]] == [3]  # two indices and the size n
    assert record["size"] == 2 + 2 * 3
    assert record["checks"][0]["format"].endswith(
        "out-of-bounds write to B[%lld, %lld], shape (%lld, 4)")
    assert all(launch["args"][-1] == {"kind": "bounds_record"} for launch in fn["launches"])
    assert "//   bounds checks 1, error record of 8 int32" in result.ptx


def test_without_the_flag_nothing_changes() -> None:
    """Without -fbounds-check the plan has no record and the kernels no extra argument."""
    lowered = lower(parse(GATHER), cuda_target(ARCH), 3)
    result = compile_ptx(lowered, ARCH, 3)
    assert result.metadata["tirc_abi"] == 1
    (fn,) = result.metadata["functions"]
    assert "bounds_record" not in fn
    assert all(a["kind"] == "buffer" for launch in fn["launches"] for a in launch["args"])


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("text", [GATHER, SCATTER, ROW_GATHER], ids=["gather", "scatter",
                                                                   "barrier"])
def test_ptxas_assembles_the_checked_kernels(text: str, opt: int) -> None:
    """The record's atomic, stores and the early exit assemble for sm_90."""
    require_ptxas()
    result = compile_ptx(_lowered(text, opt), ARCH, opt)
    assert "atom.relaxed.gpu.add.s32" in result.ptx
    cubin, _ = run_ptxas(result.ptx, "sm_90")
    assert cubin


@pytest.mark.parametrize("opt", OPTS)
def test_a_check_in_each_branch(opt: int, tmp_path: Path) -> None:
    """Each branch's gather has its check; the message names the buffer of the branch that
    ran, and in-bounds calls give the reference interpreter's results."""
    main = _load(TAKE_BRANCHES, opt, tmp_path)
    x = np.linspace(-1, 1, 8).astype(np.float32)
    good, bad = np.array([1, 2, 7, 0]), np.array([1, 9, 7, 0])
    for c, name in ((True, "x"), (False, "t")):
        want = Interpreter(parse(TAKE_BRANCHES)).call("main", x.copy(), good, c)
        np.testing.assert_allclose(main(x, good, c), want, rtol=1e-6)
        with pytest.raises(TircError, match=rf"out-of-bounds read of {name}\[9\], shape \(8,\)"):
            main(x, bad, c)


@pytest.mark.parametrize("opt", OPTS)
def test_a_gpu_sample_with_a_check_equals_numpy(opt: int) -> None:
    """row_sum_shared keeps a check (its column index is not proved below n) before its
    barriers; with every index in bounds it runs in both thread orders equal to NumPy."""
    sample = next(s for s in SAMPLES if s.name == "row_sum_shared")
    inputs = sample.inputs(sample.interp_sizes)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    lowered = lower(sample_module(sample.name), cuda_target(ARCH), opt, config=CHECKED)
    assert "bounds_record" in compile_ptx(lowered, ARCH, opt).metadata["functions"][0]
    check_races(lowered, sample.func, args)
    assert sample.matches(args, want), sample.max_error(args, want)
