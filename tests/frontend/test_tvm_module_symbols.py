"""Symbolic sizes as TVM 0.27 prints a legalized module whose functions share them:
`n = TypeVar("n")` above the class, the bare name in each function's signature, and a size
computed from them written as a string (`T.Buffer(("n + m", 4), ...)`). Each function reads
its own int64 size variable; the module runs in the interpreter and at -O0 and -O3 as NumPy
computes, and a malformed declaration is a diagnostic."""
# ruff: noqa: E501 (the programs are TVM's printed lines, kept as printed)

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc import driver
from tirc.frontend import parse
from tirc.ir import PrimFunc
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.runtime import load

# TVM 0.27's `LegalizeOps()(mod).script()` of R.concat on two tensors of symbolic length.
CONCAT = '''# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

s0 = TypeVar("s0")
s0___1 = TypeVar("s0___1")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def concatenate(x: T.Buffer((s0, T.int64(4)), "float32"), y: T.Buffer((s0___1, T.int64(4)), "float32"), T_concat: T.Buffer(("s0 + s0___1", T.int64(4)), "float32")):
        T.func_attr({"tirx.noalias": True})
        for ax0, ax1 in T.grid(s0 + s0___1, T.int64(4)):
            with T.sblock("T_concat"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(y[v_ax0 - s0, v_ax1], x[v_ax0, v_ax1])
                T.writes(T_concat[v_ax0, v_ax1])
                T_concat[v_ax0, v_ax1] = T.if_then_else(T.int64(0) <= v_ax0 - s0, y[v_ax0 - s0, v_ax1], x[v_ax0, v_ax1])

    @R.function
    def main(x: R.Tensor((s0, 4), dtype="float32"), y: R.Tensor((s0___1, 4), dtype="float32")) -> R.Tuple(R.Tensor(("s0 + s0___1", 4), dtype="float32")):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.concatenate, (x, y), out_ty=R.Tensor((s0 + s0___1, 4), dtype="float32"))
            gv: R.Tuple(R.Tensor((s0 + s0___1, 4), dtype="float32")) = (lv,)
            R.output(gv)
        return gv
'''

# TOPI's searchsorted (R.bucketize legalized): the buffers' element offsets are free variables.
OFFSETS = '''from typing import TypeVar

elem_offset = TypeVar("elem_offset")
elem_offset_1 = TypeVar("elem_offset_1")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def count_below(b: T.Buffer((T.int64(4),), "int64", elem_offset=elem_offset_1), x: T.Buffer((T.int64(6),), "int64"), out: T.Buffer((T.int64(6),), "int64", elem_offset=elem_offset)):
        for v in range(T.int64(6)):
            out[v] = T.int64(0)
            for k in range(T.int64(4)):
                if b[k] < x[v]:
                    out[v] = out[v] + T.int64(1)

    @R.function
    def main(b: R.Tensor((4,), dtype="int64"), x: R.Tensor((6,), dtype="int64")) -> R.Tensor((6,), dtype="int64"):
        cls = Module
        gv = R.call_tir(cls.count_below, (b, x), out_ty=R.Tensor((6,), dtype="int64"))
        return gv
'''

# A size the loop function cannot read off its buffers' shapes is passed as a value: TVM 0.27
# prints R.prim_value(n) in a call's arguments as the bare name.
SIZE_ARG = '''n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add_n(y: T.Buffer(("n * T.int64(2)",), "float32"), n: T.int64, out: T.Buffer((n * T.int64(2),), "float32")):
        for i in range(n * T.int64(2)):
            with T.sblock("o"):
                vi = T.axis.spatial(n * T.int64(2), i)
                out[vi] = y[vi] + T.Cast("float32", n)

    @R.function
    def main(x: R.Tensor((n, 2), dtype="float32")) -> R.Tensor(("n * 2",), dtype="float32"):
        cls = Module
        y = R.reshape(x, R.shape([n * 2]))
        z = R.call_tir(cls.add_n, (y, n), out_ty=R.Tensor((n * 2,), dtype="float32"))
        return z
'''


def _runs_as(text: str, args: list[np.ndarray], want: np.ndarray, tmp_path: Path) -> None:
    """`main` returns `want` in the interpreter and at -O0 and -O3."""
    mod = parse(text, "m.tir")
    got = Interpreter(mod).call("main", *[a.copy() for a in args])
    got = got[0] if isinstance(got, tuple) else got
    np.testing.assert_array_equal(got, want)
    for level in (0, 3):
        lib = load(driver.build(mod, tmp_path / f"m_O{level}.so", "llvm", level))
        got = lib["main"](*[a.copy() for a in args])
        got = got[0] if isinstance(got, tuple) else got
        np.testing.assert_array_equal(np.asarray(got), want)


def test_shared_sizes_are_each_functions_own_int64_variables() -> None:
    mod = parse(CONCAT, "m.tir")
    func = mod["concatenate"]
    assert isinstance(func, PrimFunc)
    x, y, out = (func.buffer_map[p] for p in func.params)
    assert x.shape[0].name == "s0" and str(x.shape[0].dtype) == "int64"
    assert mod["main"].params[0].struct_info.shape[0] is not x.shape[0]
    assert out.shape[0].op == "add" and out.shape[0].a is x.shape[0] and out.shape[0].b is y.shape[0]


def test_concat_of_symbolic_lengths_runs(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype("float32")
    y = rng.standard_normal((5, 4)).astype("float32")
    _runs_as(CONCAT, [x, y], np.concatenate([x, y]), tmp_path)


def test_free_element_offsets_run(tmp_path: Path) -> None:
    b = np.array([1, 3, 5, 7], dtype="int64")
    x = np.array([0, 2, 4, 6, 8, 3], dtype="int64")
    _runs_as(OFFSETS, [b, x], np.searchsorted(b, x, side="left"), tmp_path)


def test_size_passed_as_a_value_runs(tmp_path: Path) -> None:
    x = np.arange(10, dtype="float32").reshape(5, 2)
    _runs_as(SIZE_ARG, [x], x.reshape(10) + 5, tmp_path)


@pytest.mark.parametrize("line, message", [
    ('n = TypeVar("m")', 'm.tir:1:13: error: expected TypeVar("n"), the name it is assigned to'),
    ("n = TypeVar()", "m.tir:1:5: error: TypeVar takes 1 argument, got 0"),
    ('n = m = TypeVar("n")', 'm.tir:1:1: error: a TypeVar is assigned to one name'),
])
def test_malformed_declarations_are_diagnostics(line: str, message: str) -> None:
    with pytest.raises(CompileError) as err:
        parse(line + "\n" + OFFSETS.split("\n", 1)[1], "m.tir")
    assert message in str(err.value)
