"""Graph level: fused groups a module writes itself (`R.func_attr({"Primitive": 1})`, as TVM's
FuseOps prints them) compile at every -O level, and a group may take tuple parameters: a tuple
of values built in the caller (nested too) or a tuple parameter of the entry, of which the
group reads some fields. The libraries at -O0 and -O2 and the interpreter agree with NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_support import compile_with_cli
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter

HEADER = '''
from tvm.script import ir as I
from tvm.script import tir as T
from tvm.script import relax as R


@I.ir_module
class Module:
    @T.prim_func
    def axpy(A: T.Buffer((3, 5), "float32"), B: T.Buffer((3, 5), "float32"),
             C: T.Buffer((3, 5), "float32")):
        for i, j in T.grid(3, 5):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(2) + B[vi, vj]

    @T.prim_func
    def rowsum(A: T.Buffer((3, 5), "float32"), S: T.Buffer((3,), "float32")):
        for i, k in T.grid(3, 5):
            with T.block("S"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]
'''

T35 = 'R.Tensor((3, 5), "float32")'

# A nested tuple of values built in the caller; the group reads the inner tuple's second field.
NESTED = HEADER + f'''
    @R.function(private=True)
    def group(p: R.Tuple({T35}, R.Tuple({T35}, {T35})), q: {T35}) -> R.Tensor((3,), "float32"):
        R.func_attr({{"Primitive": 1}})
        cls = Module
        with R.dataflow():
            inner = p[1]
            b = inner[1]
            c = R.call_tir(cls.axpy, (b, q), out_sinfo={T35})
            s = R.call_tir(cls.rowsum, (c,), out_sinfo=R.Tensor((3,), "float32"))
            R.output(s)
        return s

    @R.function
    def main(x: {T35}, y: {T35}, z: {T35}) -> R.Tensor((3,), "float32"):
        cls = Module
        with R.dataflow():
            t = (x, (y, z))
            s = cls.group(t, x)
            R.output(s)
        return s
'''

# The entry's own tuple parameter, passed whole; the group leaves its first field unused.
PARAM = HEADER + f'''
    @R.function(private=True)
    def group(p: R.Tuple({T35}, {T35})) -> {T35}:
        R.func_attr({{"Primitive": 1}})
        cls = Module
        with R.dataflow():
            b = p[1]
            c = R.call_tir(cls.axpy, (b, b), out_sinfo={T35})
            R.output(c)
        return c

    @R.function
    def main(t: R.Tuple({T35}, {T35})) -> {T35}:
        cls = Module
        with R.dataflow():
            c = cls.group(t)
            R.output(c)
        return c
'''


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_group_with_a_nested_tuple_of_values(tmp_path: Path, opt: str) -> None:
    x, y, z = _inputs()
    want = (z * 2 + x).sum(axis=1)
    got = compile_with_cli(NESTED, tmp_path / "nested.so", opt).main(x, y, z)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    interpreted = Interpreter(parse(NESTED)).call("main", x, y, z)
    np.testing.assert_allclose(interpreted, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_group_with_the_entrys_tuple_parameter(tmp_path: Path, opt: str) -> None:
    x, y, _ = _inputs()
    want = y * 3
    got = compile_with_cli(PARAM, tmp_path / "param.so", opt).main((x, y))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Interpreter(parse(PARAM)).call("main", (x, y)), want, rtol=1e-5)
