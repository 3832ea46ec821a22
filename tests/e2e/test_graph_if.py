"""Graph level: `if`/`else` on an `R.Prim("bool")` value. The reference interpreter after each
graph pass, the library compiled at -O0 and -O3 (called with the condition as a Python bool)
and NumPy agree on both branches; bad programs get diagnostics at the `if`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_with_cli
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.graph import If
from tirc.ir.interpreter import Interpreter
from tirc.ir.stmt import IfThenElse
from tirc.ir.visitor import any_node
from tirc.passes.manager import run_pipeline
from tirc.passes.pipeline import build_pipeline

HEADER = '''
from tvm.script import ir as I
from tvm.script import tir as T
from tvm.script import relax as R


@I.ir_module
class Module:
'''

# TVM Relax's example, with a kernel call, a dataflow block (fused inside its branch), an
# intermediate used after the `if`, and a branch that only copies a parameter.
SELECT = HEADER + '''
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
            y = R.add(x, x)
        else:
            y = R.multiply(x, x)
        if d:
            with R.dataflow():
                a = R.call_tir(Module.scale, (y,), out_sinfo=R.Tensor((4,), "float32"))
                b = R.exp(a)
                e = R.add(b, x)
                R.output(e)
            z = R.subtract(e, y)
        else:
            z = x
        w = R.add(z, y)
        return (w, z)
'''

# Conditions computed from sizes: `R.prim_value(n > 2)` and an `R.Prim(value="f")` parameter
# (which binds the size f); an `elif` chain; the if's result returned directly.
SIZES = HEADER + '''
    @R.function
    def main(x: R.Tensor(("n",), "float32"), flag: R.Prim(value="f")
             ) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        f = T.int64()
        big = R.prim_value(n > 2)
        one = R.prim_value(f == 1)
        if big:
            t = R.exp(x)
            y = R.add(t, x)
        elif one:
            y = R.negative(x)
        else:
            y = x
        return y
'''


def _select_reference(x: np.ndarray, c: bool, d: bool) -> tuple[np.ndarray, np.ndarray]:
    y = x + x if c else x * x
    z = np.exp(y * 3).astype(np.float32) + x - y if d else x
    return z + y, z


def _sizes_reference(x: np.ndarray, f: int) -> np.ndarray:
    if x.shape[0] > 2:
        return np.exp(x) + x
    return -x if f == 1 else x


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    out = tmp_path_factory.mktemp("graph_if")
    return {(name, opt): compile_with_cli(text, out / f"{name}{opt}.so", opt)
            for name, text in (("select", SELECT), ("sizes", SIZES))
            for opt in ("-O0", "-O3")}


def _as_tuple(v: Any) -> tuple[Any, ...]:
    return v if isinstance(v, tuple) else (v,)


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
@pytest.mark.parametrize("c", [True, False])
@pytest.mark.parametrize("d", [True, False])
def test_both_branches_compiled_and_interpreted(libraries: dict, opt: str, c: bool,
                                                d: bool) -> None:
    x = np.linspace(-1, 1, 4).astype(np.float32)
    want = _select_reference(x, c, d)
    got = _as_tuple(libraries["select", opt].main(x, c, d))
    interpreted = _as_tuple(Interpreter(parse(SELECT)).call("main", x.copy(), c, d))
    for w, g, i in zip(want, got, interpreted):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(i, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
@pytest.mark.parametrize("n", [2, 5])
@pytest.mark.parametrize("f", [0, 1])
def test_conditions_on_sizes(libraries: dict, opt: str, n: int, f: int) -> None:
    x = np.linspace(-1, 1, n).astype(np.float32)
    want = _sizes_reference(x, f)
    np.testing.assert_allclose(libraries["sizes", opt].main(x, f), want, rtol=1e-5)
    np.testing.assert_allclose(Interpreter(parse(SIZES)).call("main", x.copy(), f), want,
                               rtol=1e-5)


GRAPH_STAGES = ["inline-calls", "normalize", "legalize-ops", "annotate-op-pattern",
                "fold-constants", "fuse-ops", "fuse-tir", "dead-code-elim"]


@pytest.mark.parametrize("c", [True, False])
@pytest.mark.parametrize("d", [True, False])
def test_interpreter_agrees_after_each_graph_pass(c: bool, d: bool) -> None:
    x = np.linspace(-1, 1, 4).astype(np.float32)
    want = _select_reference(x, c, d)
    for k in range(1, len(GRAPH_STAGES) + 1):
        mod = run_pipeline(parse(SELECT), build_pipeline(GRAPH_STAGES[:k]))
        got = _as_tuple(Interpreter(mod).call("main", x.copy(), c, d))
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=GRAPH_STAGES[k - 1])
    assert any_node(mod["main"], lambda n: isinstance(n, If))
    fused = [name for name in mod.functions if name.startswith("fused_")]
    assert fused, "the dataflow block inside the branch is fused"


def test_lowered_host_function_branches() -> None:
    """lower-graph: one IfThenElse per `if` in the host function, the conditions scalar
    parameters in their place among the inputs (before the results)."""
    mod = run_pipeline(parse(SELECT), build_pipeline(GRAPH_STAGES + ["memory-plan",
                                                                     "lower-graph"]))
    host = mod["main"]
    assert [p.name for p in host.params][:3] == ["x", "c", "d"]
    assert str(host.params[1].dtype) == "bool"
    branches: list[IfThenElse] = []
    any_node(host.body, lambda n: branches.append(n) if isinstance(n, IfThenElse) else None)
    assert len(branches) == 2


def test_inlined_helper_with_if_twice() -> None:
    """inline-calls copies a callee's branches with fresh variables for each call."""
    text = HEADER + '''
    @R.function
    def helper(x: R.Tensor((4,), "float32"), c: R.Prim("bool")) -> R.Tensor((4,), "float32"):
        if c:
            t = R.exp(x)
            y = R.add(t, x)
        else:
            y = R.negative(x)
        return y

    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Prim("bool")) -> R.Tensor((4,), "float32"):
        a = Module.helper(x, c)
        b = Module.helper(a, c)
        return b
'''
    x = np.linspace(-1, 1, 4).astype(np.float32)
    mod = run_pipeline(parse(text), build_pipeline(GRAPH_STAGES + ["memory-plan",
                                                                   "lower-graph"]))
    branches: list[IfThenElse] = []
    any_node(mod["main"].body, lambda n: branches.append(n) if isinstance(n, IfThenElse)
             else None)
    assert len(branches) == 2
    for c in (True, False):
        step = (lambda v: np.exp(v) + v) if c else (lambda v: -v)
        got = Interpreter(run_pipeline(parse(text), build_pipeline(GRAPH_STAGES))).call(
            "main", x.copy(), c)
        np.testing.assert_allclose(got, step(step(x)), rtol=1e-5)


@pytest.mark.parametrize(("branch", "message"), [
    ("y = R.sum(x)", "the branches of 'if' give different results: R.Tensor((4,), \"float32\") "
                     "and R.Tensor((), \"float32\")"),
    ("y = R.astype(x, \"float16\")", "the branches of 'if' give different results"),
])
def test_branches_must_agree(branch: str, message: str) -> None:
    text = HEADER + f'''
    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Prim("bool")):
        if c:
            y = R.add(x, x)
        else:
            {branch}
        return y
'''
    with pytest.raises(CompileError) as info:
        run_pipeline(parse(text, "if.tir"), build_pipeline(["normalize"]))
    d = info.value.diagnostics[0]
    assert message in d.message
    assert (d.span.line, d.span.col) == (12, 9)


def test_condition_must_be_a_boolean_scalar() -> None:
    text = HEADER + '''
    @R.function
    def main(x: R.Tensor((4,), "float32"), n: R.Prim("int64")):
        if n:
            y = R.add(x, x)
        else:
            y = x
        return y
'''
    with pytest.raises(CompileError) as info:
        run_pipeline(parse(text, "if.tir"), build_pipeline(["normalize"]))
    d = info.value.diagnostics[0]
    assert d.message == ("the condition of 'if' must be a boolean scalar (R.Prim(\"bool\")), "
                         "not R.Prim(\"int64\")")
    assert (d.span.line, d.span.col) == (12, 9)


def test_tirc_run_takes_the_condition(tmp_path: Path) -> None:
    """`tirc run LIB main -i c=true -i d=0`: a bool scalar from the command line."""
    from click.testing import CliRunner
    from tirc.cli.run_cmd import run_command

    lib = tmp_path / "select.so"
    compile_with_cli(SELECT, lib, "-O0")
    x = np.linspace(-1, 1, 4).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    for c, d in (("true", "0"), ("0", "TRUE")):
        res = CliRunner().invoke(run_command, [str(lib), "main", "-i", f"x={tmp_path / 'x.npy'}",
                                               "-i", f"c={c}", "-i", f"d={d}", "-n", "1",
                                               "-o", str(tmp_path / c)])
        assert res.exit_code == 0, res.output
        want = _select_reference(x, c == "true", d == "TRUE")
        outputs = sorted((tmp_path / c).glob("*.npy"))
        assert len(outputs) == 2
        got = {p.stem: np.load(p) for p in outputs}
        for w in want:
            assert any(np.allclose(g, w, rtol=1e-5) for g in got.values())
    res = CliRunner().invoke(run_command, [str(lib), "main", "--random", "-i", "c=yes"])
    assert res.exit_code == 1
    assert "--input c: expected true, false, 1 or 0 for a bool scalar, got 'yes'" in res.output
