"""make-entry: the entry-point form of a loop function, its signature, and its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from backend_support import build_library, func, i64
from tirc.ir import AttrStmt, For, ForKind, IRModule, Var, make_buffer
from tirc.ir.analysis.entry_signature import shape_text
from tirc.ir.attrs import COMPUTE_SCOPE, ENTRY
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import dtype
from tirc.ir.expr import binop, const
from tirc.ir.stmt import BufferStore
from tirc.ir.visitor import post_order_visit
from tirc.passes.make_entry import MakeEntry, make_entry
from tirc.passes.registry import all_passes
from tirc.runtime.shape_expr import evaluate

I64 = dtype("int64")


def _repeat() -> tuple:
    """out[i] = x[i // 2] + s: Out has the symbolic shape n * 2."""
    n = Var("n", I64)
    x, out = make_buffer("X", (n,), "float32"), make_buffer("Out", (n * 2,), "float32")
    s = Var("s", dtype("float32"))
    i = Var("i", I64)
    body = For(i, i64(0), n * 2, ForKind.SERIAL, BufferStore(out, x.vload(i // 2) + s, (i,)))
    return func("repeat2", [x, out], body, scalars=(s,)), body


def test_registered_under_its_name() -> None:
    assert all_passes()["make-entry"] is MakeEntry


def test_entry_form() -> None:
    f, body = _repeat()
    e = make_entry(f)
    assert [p.name for p in e.params] == ["args", "num_args"]
    assert [str(p.dtype) for p in e.params] == ["handle", "int32"]
    assert e.buffer_map == {}
    scopes = []

    def find(node: object) -> None:
        if isinstance(node, AttrStmt) and node.key == COMPUTE_SCOPE:
            scopes.append(node)

    post_order_visit(e.body, find)
    assert len(scopes) == 1 and scopes[0].body is body
    assert MakeEntry()(IRModule({"repeat2": e}))["repeat2"] is e


def test_signature() -> None:
    f, _ = _repeat()
    assert make_entry(f).attrs[ENTRY] == {
        "name": "repeat2", "kind": "prim_func",
        "params": [
            {"name": "X", "kind": "buffer", "buffer": "X", "dtype": "float32", "shape": ["n"],
             "input": True, "output": False},
            {"name": "Out", "kind": "buffer", "buffer": "Out", "dtype": "float32",
             "shape": ["n * 2"], "input": False, "output": True},
            {"name": "s", "kind": "scalar", "dtype": "float32"},
        ],
        "vars": {"n": {"dtype": "int64", "from": "X.shape[0]"}, "s": {"dtype": "float32",
                                                                       "from": "argument s"}},
    }


def test_shape_text_round_trips_through_the_runtime_evaluator() -> None:
    n, m = Var("n", I64), Var("m", I64)
    exprs = [n * 2, (n + 1) // 2, n - (m - 1), binop("min", n, i64(4)), n % 3 * m]
    texts = [shape_text(e) for e in exprs]
    assert texts == ["n * 2", "(n + 1) // 2", "n - (m - 1)", "min(n, 4)", "n % 3 * m"]
    env = {"n": 7, "m": 3}
    assert [evaluate(t, env) for t in texts] == [14, 4, 5, 4, 3]
    assert shape_text(i64(5)) == 5


def test_unbindable_symbol_is_a_compile_error() -> None:
    n = Var("n", I64)
    x = make_buffer("X", (n * 2,), "float32")
    i = Var("i", I64)
    f = func("f", [x], For(i, i64(0), n, ForKind.SERIAL, BufferStore(x, const(0.0), (i,))))
    with pytest.raises(CompileError, match="symbolic size 'n' of buffer 'X' is not a whole "
                                           "dimension of any parameter"):
        make_entry(f)


def test_a_fixed_elem_offset_parameter_is_a_compile_error() -> None:
    """`A: T.Buffer((8,), elem_offset=2)` read A[2 + i] from the 8-element argument: two
    elements past its end, unseen by -fbounds-check (a hand-written probe); a symbolic offset
    binds to 0 and stays accepted."""
    from tirc.driver import lower
    from tirc.frontend import parse

    text = '''
@T.prim_func
def f(a: T.handle, B: T.Buffer((8,), "int32")):
    e = T.int32()
    A = T.match_buffer(a, (8,), "int32", elem_offset={})
    for i in range(8):
        B[i] = A[i] * 2
'''
    with pytest.raises(CompileError, match="buffer parameter 'A' declares a fixed "
                                           "elem_offset"):
        lower(parse(text.format(2)), "llvm", 0)
    for ok in ("e", "0"):
        assert "tirc.entry" in lower(parse(text.format(ok)), "llvm", 0)["f"].attrs


def test_an_elem_offset_another_argument_sets_must_be_zero(tmp_path: Path) -> None:
    """TVM's `mem_copy` (tests/python/tir-base/test_tir_specialize.py): `elem_offset=q` with
    `q` a scalar parameter (or a dimension, `elem_offset=n`). The library added q to the
    argument's data pointer, reading and writing past the view, where the interpreter took
    the array's first element; both now require q == 0, as TVM checks it against the
    tensor's byte_offset, and run the copy when it is."""
    from graph_support import compile_levels
    from tirc.frontend import parse
    from tirc.ir.interpreter import Interpreter, InterpreterError
    from tirc.runtime import TircError

    text = """from tvm.script import tir as T

@T.prim_func
def mem_copy(a: T.handle, b: T.handle, m: T.int32, n: T.int32, p: T.int32, q: T.int32):
    A = T.match_buffer(a, (m, n), "float32", strides=[p, 1], elem_offset=q)
    B = T.match_buffer(b, (m, n), "float32", strides=[p, 1], elem_offset=q)
    for i, j in T.grid(m, n):
        with T.block():
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]
"""
    src = np.arange(20, dtype="float32").reshape(4, 5)

    def views() -> tuple[np.ndarray, np.ndarray]:
        return src.copy()[:, :3], np.zeros((4, 5), "float32")[:, :3]

    message = "elem_offset q is 2, but an argument's elements start at its data pointer"
    a, b = views()
    with pytest.raises(InterpreterError, match=message):
        Interpreter(parse(text)).call("mem_copy", a, b, 4, 3, 5, 2)
    _, libs = compile_levels(text, tmp_path)
    for lib in libs.values():
        a, b = views()
        with pytest.raises(TircError, match=message):
            lib["mem_copy"](a, b, 4, 3, 5, 2)
        assert not b.any()
        lib["mem_copy"](a, b, 4, 3, 5, 0)
        assert (b == src[:, :3]).all()


def test_outputs_allocated_from_shape_expressions(tmp_path: Path) -> None:
    f, _ = _repeat()
    lib = build_library([f], tmp_path / "rep.so", 1)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(lib.repeat2(x, s=0.5), np.repeat(x, 2) + 0.5)
    with pytest.raises(ValueError, match=r"expected shape \(10,\), got \(9,\) "
                                         r"\(n = 5 from X.shape\[0\]\)"):
        lib.repeat2(x, np.zeros(9, np.float32), 1.0)
