"""Graph-level `if` on a cuda target: the host function keeps the branch, the launch plan says
which kernels each branch launches (`steps`), and tirc.runtime runs the branch its condition
picks (a scalar parameter, a size, or a 0-d boolean tensor read back from the device). Each
program runs through a fake driver (kernels in the GPU interpreter) for every branch outcome,
at -O0 and -O3, against the reference interpreter; the PTX goes through ptxas."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_support import FakeDriver, require_ptxas
from tirc.backends.nvptx import compile_ptx, cuda_target
from tirc.backends.nvptx.ptxas import run_ptxas
from tirc.driver import lower
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.interpreter.gpu import run_gpu_func
from tirc.ir.module import IRModule
from tirc.runtime import TircError, shape_expr
from tirc.runtime.cuda import load_ptx

HEADER = '''
from tvm.script import ir as I
from tvm.script import tir as T
from tvm.script import relax as R


@I.ir_module
class Module:
'''

# Nested branches, a dataflow block and a call_tir inside one, results used after the join,
# and a branch that only copies a parameter into a result.
NESTED = HEADER + '''
    @T.prim_func
    def scale(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(3)

    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Prim("bool"), d: R.Prim("bool")
             ) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32")):
        if c:
            if d:
                with R.dataflow():
                    a = R.call_tir(Module.scale, (x,), out_sinfo=R.Tensor((4,), "float32"))
                    b = R.exp(a)
                    e = R.add(b, x)
                    R.output(e)
                y = R.subtract(e, x)
            else:
                y = R.add(x, x)
            u = R.multiply(y, x)
        else:
            u = x
        w = R.add(u, x)
        return (w, u)
'''

# A condition on a size, an `elif` on an `R.Prim(value="f")` size, and one on a 0-d boolean
# tensor parameter, read back from the device.
SIZES = HEADER + '''
    @R.function
    def main(x: R.Tensor(("n",), "float32"), flag: R.Prim(value="f"), t: R.Tensor((), "bool")
             ) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        f = T.int64()
        big = R.prim_value(n > 2)
        one = R.prim_value(f == 1)
        if big:
            if t:
                y0 = R.exp(x)
            else:
                y0 = R.negative(x)
            y = R.add(y0, x)
        elif one:
            y = R.negative(x)
        else:
            y = x
        return y
'''

# The condition computed by kernels on the device (the sum of x is positive).
COMPUTED = HEADER + '''
    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        s = R.sum(x)
        p = R.greater(s, R.const(0, "float32"))
        if p:
            y = R.exp(x)
        else:
            y = R.negative(x)
        return y
'''

# A C function called on the host inside a branch.
HOST_CALL = HEADER + '''
    @R.function
    def main(h: R.Tensor(("n", 4), "float32"), b: R.Tensor((4,), "float32"), c: R.Prim("bool")
             ) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        if c:
            t = R.call_dps_packed("mlp_bias_relu", (h, b),
                                  out_sinfo=R.Tensor((n, 4), "float32"))
            y = R.add(t, h)
        else:
            y = R.multiply(h, h)
        return y
'''

EXTERN_C = Path(__file__).resolve().parents[2] / "samples" / "mlp_dps_extern.c"


def _bias_relu(h: np.ndarray, b: np.ndarray, out: np.ndarray) -> int:
    out[...] = np.maximum(h + b, 0)
    return 0


@cache
def _lowered(text: str, opt: int) -> IRModule:
    return lower(parse(text), cuda_target("cuda -arch=sm_90"), opt)


def _load(text: str, opt: int, tmp_path: Path, libs: tuple[str, ...] = (),
          dirs: tuple[str, ...] = ()) -> tuple[Any, FakeDriver, dict[str, Any]]:
    """`main` of the module's PTX, loaded with a fake driver; the PTX metadata."""
    lowered = _lowered(text, opt)
    result = compile_ptx(lowered, "cuda -arch=sm_90", opt, libs, dirs)
    path = tmp_path / f"m{opt}.ptx"
    path.write_text(result.ptx)
    fake = FakeDriver(lowered)
    return load_ptx(path, fake).main, fake, result.metadata


def _tuple(v: Any) -> tuple[Any, ...]:
    return v if isinstance(v, tuple) else (v,)


def _same(got: Any, want: Any) -> None:
    for g, w in zip(_tuple(got), _tuple(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt", [0, 3])
def test_nested_branches_equal_the_interpreter(opt: int, tmp_path: Path) -> None:
    main, fake, meta = _load(NESTED, opt, tmp_path)
    assert meta["tirc_abi"] == 2
    (plan,) = meta["functions"]
    assert [s["kind"] for s in plan["steps"]] == ["if", "launch"]
    outer = plan["steps"][0]
    assert outer["cond"] == "c" and outer["loads"] == []
    assert outer["then"][0]["kind"] == "if" and outer["then"][0]["cond"] == "d"
    x = np.linspace(-1, 1, 4).astype(np.float32)
    kernels: dict[tuple[bool, bool], list[str]] = {}
    for c in (True, False):
        for d in (True, False):
            fake.launches.clear()
            _same(main(x, c, d), Interpreter(parse(NESTED)).call("main", x.copy(), c, d))
            kernels[c, d] = [k[0] for k in fake.launches]
            assert fake.memory == {}
    # Each run launches only its branch's kernels, and the last kernel after the join.
    assert kernels[False, True] == kernels[False, False]
    assert len({tuple(k) for k in kernels.values()}) == 3
    assert all(k[-1] == kernels[False, False][-1] for k in kernels.values())
    assert len(kernels[True, True]) > len(kernels[False, False])


@pytest.mark.parametrize("opt", [0, 3])
def test_size_and_tensor_conditions(opt: int, tmp_path: Path) -> None:
    main, fake, meta = _load(SIZES, opt, tmp_path)
    (plan,) = meta["functions"]
    (branch,) = [s for s in plan["steps"] if s["kind"] == "if"]
    assert branch["cond"] == "n > 2"
    (inner,) = [s for s in branch["then"] if s["kind"] == "if"]
    (load,) = inner["loads"]
    assert (load["kind"], load["param"], load["dtype"], load["offset"]) == ("buffer", "t",
                                                                            "bool", 0)
    assert inner["cond"] == load["name"]
    assert branch["else"][0]["cond"] == "flag == 1"
    for n in (2, 5):
        for f in (0, 1):
            for t in (True, False):
                x = np.linspace(-1, 1, n).astype(np.float32)
                want = Interpreter(parse(SIZES)).call("main", x.copy(), f, np.array(t))
                _same(main(x, f, np.array(t)), want)


@pytest.mark.parametrize("opt", [0, 3])
def test_condition_computed_on_the_device(opt: int, tmp_path: Path) -> None:
    main, fake, meta = _load(COMPUTED, opt, tmp_path)
    (plan,) = meta["functions"]
    (branch,) = [s for s in plan["steps"] if s["kind"] == "if"]
    (load,) = branch["loads"]
    assert load["kind"] == "workspace" and load["dtype"] == "bool"
    for x in (np.linspace(-1, 2, 7), np.linspace(-2, 1, 300)):
        x = x.astype(np.float32)
        fake.launches.clear()
        _same(main(x), Interpreter(parse(COMPUTED)).call("main", x.copy()))
        # the sum and the comparison, then one kernel of the branch taken
        assert len(fake.launches) == 3


@pytest.mark.parametrize("opt", [0, 3])
def test_lowered_host_function_in_the_gpu_interpreter(opt: int) -> None:
    """The host function itself (its IfThenElse around the launches) in the GPU interpreter."""
    lowered = _lowered(NESTED, opt)
    x = np.linspace(-1, 1, 4).astype(np.float32)
    for c in (True, False):
        for d in (True, False):
            w, u = np.zeros(4, np.float32), np.zeros(4, np.float32)
            run_gpu_func(lowered, "main", [x.copy(), c, d, w, u])
            _same((w, u), Interpreter(parse(NESTED)).call("main", x.copy(), c, d))


def test_host_call_inside_a_branch(tmp_path: Path) -> None:
    from tirc.backends.link import c_compiler

    subprocess.run([*c_compiler(), "-shared", "-fPIC", "-O2", "-o",
                    str(tmp_path / "libbias_relu.so"), str(EXTERN_C)], check=True)
    main, fake, meta = _load(HOST_CALL, 2, tmp_path, ("bias_relu",), (str(tmp_path),))
    (plan,) = meta["functions"]
    (branch,) = plan["steps"]
    assert [s["kind"] for s in branch["then"]] == ["host_call", "launch"]
    rng = np.random.default_rng(0)
    h = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    interp = Interpreter(parse(HOST_CALL), externs={"mlp_bias_relu": _bias_relu})
    for c in (True, False):
        fake.launches.clear()
        _same(main(h, b, c), interp.call("main", h.copy(), b.copy(), c))
        assert len(fake.launches) == 1


def test_ptx_with_branches_assembles(tmp_path: Path) -> None:
    require_ptxas()
    for text in (NESTED, SIZES, COMPUTED):
        ptx = compile_ptx(_lowered(text, 2), "cuda -arch=sm_90").ptx
        assert "//   if " in ptx and "//   else:" in ptx
        assert run_ptxas(ptx, "sm_90")[0]


def test_plans_without_branches_stay_version_1() -> None:
    text = HEADER + '''
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.exp(x)
        return y
'''
    meta = compile_ptx(_lowered(text, 2), "cuda -arch=sm_90").metadata
    assert meta["tirc_abi"] == 1 and "steps" not in meta["functions"][0]


def test_condition_the_host_cannot_evaluate_is_an_error() -> None:
    text = '''
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    if T.exp(A[0]) > T.float32(1):
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            B[tx] = A[tx]
    else:
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            B[tx] = T.float32(0)
'''
    with pytest.raises(CompileError, match="codegen: f: the condition of a branch of the GPU "
                       "launch plan holds a Call"):
        compile_ptx(_lowered(text, 2), "cuda -arch=sm_90")


def test_condition_expressions() -> None:
    env = {"n": 5, "c": 1, "x": 0.5}
    assert shape_expr.truth("c", env)
    assert shape_expr.truth("(n > 2) and (not (c == 0))", env)
    assert not shape_expr.truth("(n // 2 >= 3) or (x < 0.25)", env)
    assert shape_expr.truth("min(n, 3) != 5", env)
    with pytest.raises(shape_expr.ShapeExprError, match="unsupported"):
        shape_expr.truth("__import__('os')", env)


def test_unknown_step_is_a_tirc_error() -> None:
    from tirc.runtime.cuda_steps import run_steps

    with pytest.raises(TircError, match="unknown launch plan step 'jump'"):
        run_steps([{"kind": "jump"}], {}, None, lambda a: 0, lambda k: None, lambda j: None)
