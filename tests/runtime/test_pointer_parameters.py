"""An exported function with a bare pointer parameter (`a: T.handle("float32")`, viewed by
`T.decl_buffer((n,), data=a)` or `T.Buffer(..., data=a)`, as TVM's tests write them) takes a
1-d tensor of the views' dtype (the loader flattens any C-contiguous array); the entry checks
dtype, contiguity and that the tensor holds each view the arguments size. Results equal the
interpreter's, which also takes the storage as a contiguous array."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tirc.driver import build, compile_ptx, lower
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.runtime import TircError, load

SOURCE = '''
from tvm.script import tir as T

@T.prim_func
def scale(a: T.handle("float32"), n: T.int32, B: T.Buffer((4,), "float32")):
    A = T.decl_buffer((n,), data=a)
    for i in range(n):
        A[i] = A[i] * T.float32(2) + B[i % 4]


@T.prim_func
def first(a: T.handle("float32"), out: T.Buffer((1,), "float32")):
    A = T.Buffer(shape=1, dtype="float32", data=a)
    out[0] = A[0]
'''


@pytest.fixture(scope="module", params=[0, 3])
def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("pointer") / f"pointer{request.param}.so"
    return load(build(parse(SOURCE), Path(out), "llvm", request.param))


def test_a_pointer_parameter_computes_what_the_interpreter_does(lib: Any) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2, 3, 4], np.float32)
    want = a.copy()
    Interpreter(parse(SOURCE)).call("scale", want, 6, b)
    lib["scale"](a, 6, b)
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(a.reshape(-1), np.arange(6) * 2 + [1, 2, 3, 4, 1, 2])
    out = np.zeros(1, np.float32)
    lib["first"](np.array([7.5, 1.0], np.float32), out)
    assert out[0] == 7.5


def test_a_tensor_smaller_than_a_view_is_refused(lib: Any) -> None:
    a = np.zeros(6, np.float32)
    with pytest.raises(TircError, match=r"scale: argument a: holds 24 bytes, but buffer 'A' "
                                        r"viewing it needs 28"):
        lib["scale"](a, 7, np.zeros(4, np.float32))
    with pytest.raises(TircError, match="argument a: holds 0 bytes, but buffer 'A' viewing it "
                                        "needs 4"):
        lib["first"](np.zeros(0, np.float32), np.zeros(1, np.float32))


def test_wrong_dtype_or_layout_is_refused(lib: Any) -> None:
    b = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="argument a: expected dtype float32, got float64"):
        lib["scale"](np.zeros(4), 4, b)
    with pytest.raises(ValueError, match="argument a: a pointer parameter takes a C-contiguous"):
        lib["scale"](np.zeros((4, 2), np.float32).T, 8, b)


def test_the_signature_says_pointer(lib: Any) -> None:
    fn = lib["scale"]
    assert fn.params[0]["kind"] == "pointer" and fn.params[0]["dtype"] == "float32"
    assert str(fn) == "<tirc function scale(a: float32* (output), n: int32, B: float32[4])>"


@pytest.mark.parametrize("body, seen", [
    ('A = T.Buffer((1,), "float32", data=a)\n    C = T.Buffer((4,), "int8", data=a)\n'
     '    C[0] = T.int8(1)\n    A[0] = T.float32(1)', "viewed as float32 and int8"),
    ("T.evaluate(0)", "viewed by no buffer"),
])
def test_a_pointer_whose_dtype_is_unknown_is_a_diagnostic(body: str, seen: str) -> None:
    mod = parse(f'''
from tvm.script import tir as T

@T.prim_func
def f(a: T.handle):
    {body}
''')
    with pytest.raises(CompileError, match=f"pointer parameter 'a' is {seen}"):
        lower(mod, "llvm", 2)


def test_a_pointer_parameter_in_a_gpu_build_is_a_diagnostic() -> None:
    with pytest.raises(CompileError, match="the pointer parameter 'a' is supported by CPU "
                                           "builds only"):
        compile_ptx(parse(SOURCE), "cuda -arch=sm_80", opt_level=2)


def test_a_pointer_viewed_through_a_pointer_bound_to_it(tmp_path: Any) -> None:
    """TVM's simplify test `A_ptr_redef = A_ptr; A = T.decl_buffer(..., data=A_ptr_redef)`:
    the view through the alias gives the parameter its dtype, and the write makes it an
    output."""
    mod = parse('''
from tvm.script import tir as T

@T.prim_func
def redef(A_ptr: T.handle("float32")):
    A_ptr_redef: T.handle("float32") = A_ptr
    A = T.decl_buffer(1, "float32", data=A_ptr_redef)
    A[0] = 42.0
''')
    fn = load(build(mod, tmp_path / "redef.so", "llvm", 2))["redef"]
    assert str(fn) == "<tirc function redef(A_ptr: float32* (output))>"
    a = np.zeros(3, np.float32)
    fn(a)
    np.testing.assert_array_equal(a, [42, 0, 0])
