"""Forms from TVM's own TVMScript tests (tests/python/tvmscript: roundtrip, complete,
syntax_sugar, parser_tir) that tirc reads as TVM does: `T.boolean`, `T.address_of` of a
whole buffer, `T.allocate_const` with keywords, `A[iters]` for a grid's loop tuple, and the
merge of a block's `T.block_attr` calls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_support import compile_levels
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module

BOOLEAN = '''from tvm.script import tirx as T

@T.prim_func
def f(a: T.boolean, A: T.Buffer((2,), "bool")):
    A[0] = a
    A[1] = T.boolean(False)
'''

ADDRESS_OF = '''from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def f(a: T.handle):
    A = T.match_buffer(a, (4, 4), "float32")
    T.evaluate(T.address_of(A))
'''

ALLOCATE_CONST = '''from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer(4, "int32"), C: T.Buffer(4, "int32")):
    B_data = T.allocate_const([1, 2, 3, 4], "int32", extents=[4])
    B = T.decl_buffer(4, "int32", data=B_data)
    for i in range(4):
        with T.block("compute"):
            vi = T.axis.remap("S", [i])
            C[vi] = A[vi] + B[vi]
'''

GRID_TUPLE = '''from tvm.script import tir as T

@T.prim_func
def f(a: T.handle, b: T.handle):
    A = T.match_buffer(a, [4, 3, 2], "int32")
    B = T.match_buffer(b, [4, 3, 2], "int32")
    for iters in T.grid(*A.shape):
        B[iters] = A[iters] * 2 + 1
'''

BLOCK_ATTRS = '''from tvm.script import tir as T

@T.prim_func
def f():
    with T.block():
        T.block_attr({"key": {"key1": "block1"}, "same": 1})
        T.block_attr({"key": {"key2": "block2"}, "same": 1})
        T.evaluate(0)
'''


def test_boolean_is_bool() -> None:
    """`T.boolean` is TVM's other name of `T.bool`, as annotation and as constructor."""
    mod = parse(BOOLEAN)
    text = print_module(mod)
    assert "a: T.bool," in text and "A[1] = False" in text
    out = np.array([False, True])
    Interpreter(mod).call("f", True, out)
    assert out.tolist() == [True, False]


def test_address_of_whole_buffer() -> None:
    """`T.address_of(A)` is the address of A's first element, as TVM reads it."""
    assert "T.evaluate(T.address_of(A[0, 0]))" in print_module(parse(ADDRESS_OF))


def test_allocate_const_keywords(tmp_path: Path) -> None:
    """`T.allocate_const(values, dtype, extents=[4])` names its extents by keyword."""
    a = np.arange(4, dtype="int32") * 10
    _, libs = compile_levels(ALLOCATE_CONST, tmp_path)
    for lib in libs.values():
        c = np.zeros(4, "int32")
        lib["f"](a, c)
        assert c.tolist() == [1, 12, 23, 34]


def test_grid_tuple_indexes_a_buffer(tmp_path: Path) -> None:
    """`for iters in T.grid(*A.shape)` with `A[iters]`: the tuple is all the loop variables."""
    mod = parse(GRID_TUPLE)
    assert "B[iters_0, iters_1, iters_2] = A[iters_0, iters_1, iters_2] * 2 + 1" \
        in print_module(mod)
    a = np.arange(24, dtype="int32").reshape(4, 3, 2)
    b = np.zeros_like(a)
    Interpreter(mod).call("f", a, b)
    assert (b == a * 2 + 1).all()
    _, libs = compile_levels(GRID_TUPLE, tmp_path)
    for lib in libs.values():
        b = np.zeros_like(a)
        lib["f"](a, b)
        assert (b == a * 2 + 1).all()


def test_grid_tuple_rank_mismatch() -> None:
    """A loop tuple of the wrong length is a rank error counting its variables."""
    text = GRID_TUPLE.replace("B[iters] =", "B[iters, 0] =")
    with pytest.raises(CompileError) as err:
        parse(text)
    assert "buffer 'B' has 3 dimensions, indexed with 4" in str(err.value)


def test_block_attr_calls_merge() -> None:
    """Two `T.block_attr` calls merge key by key, dictionaries under one key too."""
    text = print_module(parse(BLOCK_ATTRS))
    assert 'T.block_attr({"key": {"key1": "block1", "key2": "block2"}, "same": 1})' in text


def test_block_attr_conflict_is_an_error() -> None:
    """A key set again to another value is an error at the second call, as in TVM."""
    text = BLOCK_ATTRS.replace('"same": 1})\n        T.evaluate', '"same": 2})\n        T.evaluate')
    with pytest.raises(CompileError) as err:
        parse(text)
    diag = err.value.diagnostics[0]
    assert diag.message == 'T.block_attr sets "same" twice in this block, to different values'
    assert (diag.span.line, diag.span.col) == (7, 9)


def test_python_target_constructor_in_attributes() -> None:
    """`tvm.target.Target("llvm", host="llvm")` in `T.func_attr` (TVM's hand-written tests
    build the target in Python) reads as `T.target`."""
    text = '''import tvm
from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.func_attr({"target": tvm.target.Target("llvm", host="llvm"), "tir.noalias": True})
    for i in range(4):
        A[i] = A[i] + 1.0
'''
    printed = print_module(parse(text))
    assert 'T.func_attr({"target": T.target({"kind": "llvm", "host": "llvm"}), ' in printed


VTHREAD_NEST = '''from tvm.script import tir as T

@T.prim_func
def f(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i_0 in T.thread_binding(2, "vthread.x"):
        for i_1 in T.thread_binding(4, "threadIdx.x"):
            for j_0 in T.thread_binding(EXTENT, "vthread.x"):
                for j_1 in T.serial(4):
                    with T.block(""):
                        B[i_0 * 4 + i_1, j_0 * 4 + j_1] = A[i_0 * 4 + i_1, j_0 * 4 + j_1] * 2.0
'''


def test_nested_loops_of_one_vthread_are_one_index() -> None:
    """TVM's UnifyThreadBinding `element_wise_vthread_x`: a loop bound to the vthread.x of
    a loop around it is that loop's index (TVM 0.27 prints the unified loop), so only the
    diagonal tiles are written; tirc ran it as an independent loop and wrote all four."""
    mod = parse(VTHREAD_NEST.replace("EXTENT", "2"))
    text = print_module(mod)
    assert "j_0" not in text
    assert "B[i_0 * 4 + i_1, i_0 * 4 + j_1] = A[i_0 * 4 + i_1, i_0 * 4 + j_1]" in text
    a = np.ones((8, 8), "float32")
    b = np.zeros_like(a)
    Interpreter(mod).call("f", a, b)
    assert b[:4, :4].all() and b[4:, 4:].all() and not b[:4, 4:].any() and not b[4:, :4].any()


def test_nested_vthread_loops_of_different_extents_are_an_error() -> None:
    """The two loops must cover the same range to be one index."""
    with pytest.raises(CompileError) as err:
        parse(VTHREAD_NEST.replace("EXTENT", "4"))
    assert "loop 'j_0' is bound to vthread.x inside loop 'i_0', bound to it too with another " \
        "range" in str(err.value)
