"""`break` and `continue` (TVM's `T.break_loop()` / `T.continue_loop()`) compiled to a `.so` at
-O0..-O3: every function computes what the reference interpreter computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.runtime import load

PROGRAM = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def tvm_case(a: T.handle, b: T.handle):
        A = T.match_buffer(a, (4,), "float32")
        B = T.match_buffer(b, (4,), "float32")
        for i in range(1000):
            if i % 13 == 0:
                A[1] = A[1] + 1
                continue
            if A[0] >= B[0]:
                break

    @T.prim_func
    def counter(A: T.Buffer((4,), "int32"), limit: T.int32):
        for i in range(100):
            A[0] = A[0] + 1
            if A[0] >= limit:
                break
            A[1] = A[1] + i
        A[2] = A[0] * 10

    @T.prim_func
    def nested(A: T.Buffer((8, 8), "float32"), S: T.Buffer((8,), "float32")):
        for i in range(8):
            for j in range(8):
                if A[i, j] < T.float32(0):
                    continue
                if A[i, j] > T.float32(2):
                    T.break_loop()
                S[i] = S[i] + A[i, j]
            S[i] = S[i] * T.float32(2)

    @T.prim_func
    def search(A: T.Buffer((64,), "int32"), out: T.Buffer((2,), "int32")):
        out[0] = -1
        k = T.decl_buffer((1,), "int32")
        k[0] = 0
        while k[0] < 64:
            k[0] = k[0] + 1
            if A[k[0] - 1] % 2 == 0:
                continue
            out[1] = out[1] + 1
            if A[k[0] - 1] > 90:
                out[0] = k[0] - 1
                break

    @T.prim_func
    def scratch(A: T.Buffer((16,), "float32"), n: T.int32, limit: T.float32):
        for i in range(16):
            tmp = T.decl_buffer((n,), "float32")
            tmp[0] = A[i] * T.float32(2)
            if tmp[0] > limit:
                break
            for j in T.unroll(4):
                if j == 2:
                    continue
                A[i] = A[i] + tmp[0]
'''


@pytest.fixture(scope="module", params=[0, 1, 2, 3])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    path = Path(tmp_path_factory.mktemp("jumps")) / f"jumps{request.param}.so"
    build(parse(PROGRAM), path, opt_level=request.param)
    return load(path)


def _same(lib, name: str, *args):
    want = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    Interpreter(parse(PROGRAM)).call(name, *want)
    got = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    getattr(lib, name)(*got)
    for w, g in zip(want, got):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)
    return got


def test_tvm_program_runs_every_iteration_or_breaks_early(lib) -> None:
    full = _same(lib, "tvm_case", np.zeros(4, "float32"), np.array([1, 0, 0, 0], "float32"))
    assert full[0][1] == 77  # i = 0, 13, ..., 988
    early = _same(lib, "tvm_case", np.zeros(4, "float32"), np.zeros(4, "float32"))
    assert early[0][1] == 1  # i = 0 continues, i = 1 breaks


@pytest.mark.parametrize("limit", [1, 5, 50, 1000])
def test_counter_breaks_mid_loop(lib, limit: int) -> None:
    got = _same(lib, "counter", np.zeros(4, "int32"), limit)
    n = min(limit, 100)
    assert got[0][0] == n and got[0][2] == 10 * n
    assert got[0][1] == sum(range(n - 1 if limit <= 100 else n))


def test_nested_continue_and_break_act_on_the_inner_loop(lib) -> None:
    rng = np.random.default_rng(0)
    _same(lib, "nested", rng.uniform(-1, 3, (8, 8)).astype("float32"), np.zeros(8, "float32"))


def test_while_loop_with_break_and_continue(lib) -> None:
    rng = np.random.default_rng(1)
    got = _same(lib, "search", rng.integers(0, 100, 64).astype("int32"), np.zeros(2, "int32"))
    assert got[1][0] >= 0
    _same(lib, "search", np.zeros(64, "int32"), np.zeros(2, "int32"))


@pytest.mark.parametrize("limit", [0.5, 3.0, 100.0])
def test_break_past_a_heap_allocation_and_continue_in_an_unrolled_loop(lib, limit: float
                                                                       ) -> None:
    A = np.linspace(0, 2, 16).astype("float32")
    _same(lib, "scratch", A, 4, limit)


GRAPH = '''
from tvm.script import ir as I
from tvm.script import tir as T
from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func
    def first_big(A: T.Buffer((8, 16), "float32"), out: T.Buffer((8,), "float32")):
        for i in range(8):
            out[i] = T.float32(-1)
            for j in range(16):
                if A[i, j] < T.float32(0):
                    continue
                if A[i, j] > T.float32(0.5):
                    out[i] = T.Cast("float32", j)
                    break

    @R.function
    def main(x: R.Tensor((8, 16), "float32")):
        y = R.call_tir(Module.first_big, (x,), out_sinfo=R.Tensor((8,), "float32"))
        z = R.add(y, y)
        return z
'''


@pytest.mark.parametrize("opt", [0, 3])
@pytest.mark.parametrize("outer", ["range(8)", "T.parallel(8)"])
def test_a_kernel_that_breaks_through_the_graph_pipeline(tmp_path: Path, opt: int, outer: str
                                                         ) -> None:
    """The default schedule leaves the jumping kernel alone; fusion keeps its loops whole; a
    parallel loop around the jumping one runs its iterations on threads."""
    mod = parse(GRAPH.replace("range(8)", outer))
    x = np.random.default_rng(0).uniform(-1, 1, (8, 16)).astype("float32")
    want = [2 * next((j for j in range(16) if x[i, j] > 0.5), -1) for i in range(8)]
    np.testing.assert_array_equal(np.asarray(Interpreter(mod).call("main", x)), want)
    build(mod, tmp_path / "g.so", opt_level=opt)
    np.testing.assert_array_equal(np.asarray(load(tmp_path / "g.so").main(x)), want)
