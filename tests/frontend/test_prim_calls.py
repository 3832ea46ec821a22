"""Direct calls between loop functions and returned values in the frontend and printer: the
IR they build, round trips, callees defined later or imported, and the interpreter running
them (storage aliased, early exits, errors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.frontend import parse, parse_file
from tirc.ir import intrinsics as intrin
from tirc.ir.expr import Call, StringImm
from tirc.ir.function import PrimFunc
from tirc.ir.interpreter import Interpreter, run_prim_func
from tirc.ir.interpreter.values import InterpreterError
from tirc.ir.prim_call import called_functions, rename_calls
from tirc.ir.printer import print_module
from tirc.ir.structural import structural_equal
from tirc.ir.visitor import post_order_visit

SOURCE = '''
from tvm.script import ir as I
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "int32")):
        Module.fill(A.data, 8, T.float32(3))
        B[0] = cls.find(A.data, 8, T.float32(3)) + 1

    @T.prim_func(private=True)
    def fill(A_data: T.handle("float32"), n: T.int32, v: T.float32):
        A = T.decl_buffer((n,), "float32", data=A_data)
        for i in range(n):
            A[i] = v + T.Cast("float32", i)

    @T.prim_func(private=True)
    def find(A_data: T.handle("float32"), n: T.int32, v: T.float32) -> T.int32:
        A = T.decl_buffer((n,), "float32", data=A_data)
        for i in range(n):
            for j in range(n):
                if A[j] == v + T.Cast("float32", i * 0 + 4):
                    T.ret(j)
        return -1
'''


def _calls(func: PrimFunc) -> list[Call]:
    found: list[Call] = []
    post_order_visit(func.body, lambda n: found.append(n)
                     if isinstance(n, Call) and n.op == intrin.CALL_PRIM else None)
    return found


def test_a_call_of_a_later_function_is_a_call_prim_of_its_result_dtype() -> None:
    mod = parse(SOURCE)
    main = mod.functions["main"]
    assert isinstance(main, PrimFunc)
    calls = _calls(main)
    assert [c.args[0] for c in calls] == [StringImm("fill"), StringImm("find")]
    assert [str(c.dtype) for c in calls] == ["void", "int32"]
    assert called_functions(main.body) == ["fill", "find"]
    find = mod.functions["find"]
    assert isinstance(find, PrimFunc) and str(find.ret_dtype) == "int32"
    assert main.ret_dtype is None


def test_the_printed_module_parses_back_to_the_same_ir() -> None:
    mod = parse(SOURCE)
    text = print_module(mod)
    assert "Module.fill(A.data, 8, T.float32(3.0))" in text
    assert "def find(A_data: T.handle, n: T.int32, v: T.float32) -> T.int32:" in text
    again = parse(text)
    assert print_module(again) == text
    for name in mod.functions:
        assert structural_equal(mod.functions[name], again.functions[name]), name


def test_renaming_calls() -> None:
    main = parse(SOURCE).functions["main"]
    assert called_functions(rename_calls(main.body, {"find": "find2"})) == ["fill", "find2"]


def test_the_interpreter_runs_callees_on_the_callers_storage() -> None:
    a, b = np.zeros(8, np.float32), np.zeros(1, np.int32)
    Interpreter(parse(SOURCE)).call("main", a, b)
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32) + 3)
    assert b[0] == 5  # find returned 4 from the middle of its loop nest


def test_a_call_needs_the_module_and_a_value_needs_a_return() -> None:
    mod = parse(SOURCE)
    with pytest.raises(InterpreterError, match="needs the whole module"):
        run_prim_func(mod.functions["main"], [np.zeros(8, np.float32), np.zeros(1, np.int32)])
    assert run_prim_func(mod.functions["find"], [np.zeros(8, np.float32), 8, 0.0]) == -1
    text = SOURCE.replace("        return -1\n", "")
    with pytest.raises(InterpreterError, match="find ended without returning its int32 value"):
        Interpreter(parse(text)).call("find", np.zeros(8, np.float32), 8, 0.0)


def test_an_imported_callee_is_checked_and_called(tmp_path: Path) -> None:
    (tmp_path / "helpers.tir").write_text('''
from tvm.script import tir as T


@T.prim_func
def twice(A: T.Buffer((4,), "float32")) -> T.float32:
    A[0] = A[0] * T.float32(2)
    return A[0]
''')
    (tmp_path / "main.tir").write_text('''
from tvm.script import ir as I
from tvm.script import tir as T
from helpers import twice


@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), B: T.Buffer((1,), "float32")):
        B[0] = Module.twice(A.data) + T.float32(1)
''')
    mod = parse_file(tmp_path / "main.tir")
    a, b = np.full(4, 3, np.float32), np.zeros(1, np.float32)
    Interpreter(mod).call("main", a, b)
    assert a[0] == 6 and b[0] == 7


def test_a_return_without_annotation_sets_the_result_dtype() -> None:
    """TVM reads `return v` in a function with no `->`: the first value returned sets the
    dtype, printed back as an annotation; a later return of another dtype is an error."""
    mod = parse('''
from tvm.script import tir as T

@T.prim_func
def first_positive(A: T.Buffer((8,), "int32")):
    for i in range(8):
        if A[i] > 0:
            return i
    return -1
''')
    func = mod["first_positive"]
    assert str(func.ret_dtype) == "int32"
    assert "-> T.int32:" in print_module(mod)
    assert structural_equal(parse(print_module(mod)), mod)
    assert run_prim_func(func, [np.array([0, -2, 5, 1, 0, 0, 0, 0], np.int32)]) == 2
    with pytest.raises(Exception, match="cannot return a value of dtype float32 from a "
                                        "function returning int32"):
        parse('''
from tvm.script import tir as T

@T.prim_func
def mixed(A: T.Buffer((8,), "float32")):
    if A[0] > T.float32(0):
        return 1
    return A[1]
''')
