"""Direct calls between loop functions and values returned from them, compiled to a `.so`
and run with tirc.runtime: the results agree with numpy and with the reference interpreter,
at -O0 and -O2; a callee's storage parameters alias the caller's buffers; a failure inside a
callee fails the call with its code and message; a returned value comes back as a Python
number through the result tensor of the ABI (docs/abi.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.driver import build
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter
from tirc.runtime import TircError, load

PROGRAM = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(A_data: T.handle("float32"), n: T.int32, s: T.float32):
        A = T.decl_buffer((n,), "float32", data=A_data)
        for i in range(n):
            A[i] = A[i] * s

    @T.prim_func(private=True)
    def total(A_data: T.handle("float32"), n: T.int32) -> T.float32:
        A = T.decl_buffer((n,), "float32", data=A_data)
        acc = T.decl_buffer((1,), "float32")
        acc[0] = T.float32(0)
        for i in range(n):
            acc[0] = acc[0] + A[i]
        return acc[0]

    @T.prim_func(private=True)
    def checked(A_data: T.handle("float32"), n: T.int32) -> T.int32:
        A = T.decl_buffer((n,), "float32", data=A_data)
        assert A[0] >= T.float32(0), "A[0] must not be negative"
        return n * 2

    @T.prim_func
    def add_rows(A: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            A[i, j] = A[i, j] + T.float32(i)

    @T.prim_func
    def first_negative(A: T.Buffer((32,), "float32")) -> T.int32:
        for i in range(32):
            for j in range(1):
                if A[i + j] < T.float32(0):
                    return i
        return -1

    @T.prim_func
    def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((3,), "float32")):
        Module.add_rows(A.data)
        cls.scale(A.data, 32, T.float32(0.5))
        T.evaluate(Module.scale(A, 8, T.float32(2)))
        B[0] = Module.total(A.data, 32)
        x = Module.total(A.data, 8)
        B[1] = x + T.float32(1)
        B[2] = T.Cast("float32", Module.checked(A.data, 16))

    @T.prim_func
    def mean(A: T.Buffer((4, 8), "float32")) -> T.float32:
        return Module.total(A.data, 32) / T.float32(32)
'''


def expected_main(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy's `main`: the updated A and B."""
    out = a.astype(np.float32).copy()
    out += np.arange(4, dtype=np.float32)[:, None]
    out *= np.float32(0.5)
    out.reshape(-1)[:8] *= np.float32(2)
    flat = out.reshape(-1)
    b = np.array([flat.sum(dtype=np.float32), flat[:8].sum(dtype=np.float32) + 1, 32],
                 np.float32)
    return out, b


@pytest.fixture(scope="module", params=[0, 2])
def library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> object:
    path = tmp_path_factory.mktemp("prim_calls") / f"calls{request.param}.so"
    build(parse(PROGRAM), path, opt_level=request.param)
    return load(path)


def test_calls_update_the_callers_storage_and_return_values(library: object) -> None:
    rng = np.random.default_rng(0)
    a = rng.random((4, 8), dtype=np.float32)
    want_a, want_b = expected_main(a)
    got_a, b = a.copy(), np.zeros(3, np.float32)
    library.main(got_a, b)  # type: ignore[attr-defined]
    np.testing.assert_allclose(got_a, want_a, rtol=1e-6)
    np.testing.assert_allclose(b, want_b, rtol=1e-5)
    it_a, it_b = a.copy(), np.zeros(3, np.float32)
    Interpreter(parse(PROGRAM)).call("main", it_a, it_b)
    np.testing.assert_allclose(got_a, it_a, rtol=1e-6)
    np.testing.assert_allclose(b, it_b, rtol=1e-5)


def test_a_public_callee_keeps_its_exported_entry(library: object) -> None:
    a = np.ones((4, 8), np.float32)
    library.add_rows(a)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(a[:, 0], [1, 2, 3, 4])
    exported = set(library.functions)  # type: ignore[attr-defined]
    assert {"add_rows", "first_negative", "main", "mean"} == exported


@pytest.mark.parametrize("where", [-1, 0, 7, 31])
def test_a_returned_value_comes_back_as_a_number(library: object, where: int) -> None:
    a = np.ones(32, np.float32)
    if where >= 0:
        a[where] = -1
        a[min(where + 1, 31)] = -2
    got = library.first_negative(a)  # type: ignore[attr-defined]
    assert isinstance(got, int) and got == where
    assert Interpreter(parse(PROGRAM)).call("first_negative", a) == where


def test_a_value_returned_through_a_call(library: object) -> None:
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    got = library.mean(a)  # type: ignore[attr-defined]
    assert isinstance(got, float) and got == pytest.approx(15.5)
    assert Interpreter(parse(PROGRAM)).call("mean", a) == pytest.approx(15.5)
    assert "mean(A: float32[4, 8]) -> float32" in repr(library.mean)  # type: ignore[attr-defined]


def test_a_failure_inside_a_callee_fails_the_call(library: object) -> None:
    a = -np.ones((4, 8), np.float32) * 10
    with pytest.raises(TircError, match="A\\[0\\] must not be negative") as err:
        library.main(a, np.zeros(3, np.float32))  # type: ignore[attr-defined]
    assert err.value.code == -3
    a = np.ones((4, 8), np.float32)  # the failure is not sticky
    b = np.zeros(3, np.float32)
    library.main(a, b)  # type: ignore[attr-defined]
    assert b[2] == 32


def test_the_result_tensor_is_checked_by_the_entry(tmp_path: Path) -> None:
    import ctypes

    from tirc.runtime.dlpack import ArgsPacker

    path = tmp_path / "r.so"
    build(parse(PROGRAM), path)
    lib = ctypes.CDLL(str(path))
    fn = lib.first_negative
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    a = np.ones(32, np.float32)
    wrong = np.zeros((), np.float64)
    packed = ArgsPacker([1, 0], ["float32", "float64"]).pack([a, wrong])
    assert fn(ctypes.addressof(packed), 2) == -1
    lib.r_last_error.restype = ctypes.c_char_p
    assert lib.r_last_error() == b"first_negative: result: expected dtype int32, got float64"
    packed = ArgsPacker([1], ["float32"]).pack([a])
    assert fn(ctypes.addressof(packed), 1) == -1
    assert lib.r_last_error() == b"first_negative: expected 2 arguments (A, result), got 1"
    right = np.full((), 7, np.int32)
    packed = ArgsPacker([1, 0], ["float32", "int32"]).pack([a, right])
    assert fn(ctypes.addressof(packed), 2) == 0 and right[()] == -1


GRAPH = '''
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(A_data: T.handle("float32"), n: T.int32, s: T.float32):
        A = T.decl_buffer((n,), "float32", data=A_data)
        for i in range(n):
            A[i] = A[i] * s

    @T.prim_func(private=True)
    def kernel(X: T.Buffer((8,), "float32"), Y: T.Buffer((8,), "float32")):
        for i in range(8):
            Y[i] = X[i] + T.float32(1)
        Module.scale(Y.data, 8, T.float32(3))

    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        y = R.call_tir(Module.kernel, (x,), out_sinfo=R.Tensor((8,), "float32"))
        return y
'''


def test_a_kernel_of_a_graph_function_calls_a_subroutine(tmp_path: Path) -> None:
    path = tmp_path / "graph.so"
    build(parse(GRAPH), path)
    x = np.arange(8, dtype=np.float32)
    got = load(path).main(x)
    np.testing.assert_array_equal(got, (x + 1) * 3)
    np.testing.assert_array_equal(Interpreter(parse(GRAPH)).call("main", x), got)


def test_call_tir_of_a_function_returning_a_value_is_refused() -> None:
    from tirc.driver import lower
    from tirc.ir.diagnostics import CompileError

    signature = 'Y: T.Buffer((8,), "float32")):'
    text = GRAPH.replace(signature, signature[:-1] + " -> T.int32:")
    text = text.replace("        Module.scale(Y.data, 8, T.float32(3))\n",
                        "        Module.scale(Y.data, 8, T.float32(3))\n        return 0\n")
    with pytest.raises(CompileError, match="R.call_tir of 'kernel', which returns a value"):
        lower(parse(text))
