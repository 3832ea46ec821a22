"""Local functions inside an `@R.function` (TVM's LambdaLift): each is lifted to a module
function `outer_inner` whose extra parameters (first, as TVM's closures) are the outer
variables it captures; calls pass them. Run by the interpreter and compiled at -O0 and -O3
(inline-calls inlines and drops the lifted functions), printed and parsed back; misuse is a
diagnostic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_support import round_trip
from graph_support import run_everywhere
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError
from tirc.ir.attrs import LIFTED
from tirc.ir.graph import Function
from tirc.ir.printer import print_module
from tirc.passes.graph.inline_calls import InlineCalls

CLOSURES = """\
@I.ir_module
class Module:
    @T.prim_func
    def double(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            with T.block("d"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), y: R.Tensor((2, 3), "float32"),
             c: R.Tensor((), "bool")):
        n = T.int64()
        cls = Module
        s = R.multiply(y, y)

        @R.function
        def scale(a: R.Tensor(("n", 3), "float32")) -> R.Tensor(("n", 3), "float32"):
            r = R.multiply(a, R.sum(s, axis=0))
            return r

        @R.function
        def twice(a: R.Tensor((2, 3), "float32")):
            d = R.call_tir(cls.double, (a,), out_sinfo=R.Tensor((2, 3), "float32"))
            e = scale(d)
            return e

        with R.dataflow():
            u = scale(x)
            v = twice(y)
            R.output(u, v)
        if c:
            w = twice(s)
        else:
            w = scale(y)
        gv = (u, v, w)
        return gv
"""


@pytest.mark.parametrize("cond", [True, False])
def test_closures_against_numpy(tmp_path: Path, cond: bool) -> None:
    """`scale` captures `s` (a computed value), `twice` calls `scale` (so it passes `s` on)
    and a loop function through the outer `cls`; calls in a dataflow block and in both
    branches of an `if`; `n` binds per call (4 rows, then 2)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype("float32")
    y = rng.standard_normal((2, 3)).astype("float32")
    s = y * y
    col = s.sum(0)
    runs = run_everywhere(tmp_path, CLOSURES, [x, y, np.array(cond)])
    assert len(runs) == 3
    for got in runs:
        np.testing.assert_allclose(got[0], x * col, rtol=1e-5)
        np.testing.assert_allclose(got[1], 2 * y * col, rtol=1e-5)
        np.testing.assert_allclose(got[2], 2 * s * col if cond else y * col, rtol=1e-5)


def test_lifted_functions_print_and_parse_back() -> None:
    """The lifted form prints as module functions marked `tirc.lifted`, the captures first."""
    printed = print_module(round_trip(CLOSURES))
    assert "u = Module.main_scale(s, x)" in printed
    assert "w = Module.main_twice(s, s)" in printed
    assert "def main_scale(s, a: R.Tensor((\"n\", 3), dtype=\"float32\")) -> " in printed
    assert "e = Module.main_scale(s, d)" in printed
    assert 'R.func_attr({"tirc.lifted": True})' in printed


NESTED = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "float32"), y: R.Tensor((3,), "float32")):
        @R.function
        def outer(a: R.Tensor((3,), "float32")):
            @R.function
            def deep(b: R.Tensor((3,), "float32")):
                c = R.add(b, a)
                d = R.multiply(c, y)
                return d

            e = deep(a)
            f = deep(e)
            return f

        gv = outer(x)
        return gv
"""


def test_nested_local_functions_capture_through_their_parent(tmp_path: Path) -> None:
    """`deep` captures `outer`'s parameter and `main`'s `y`, which `outer` then captures."""
    x = np.array([1, 2, 3], "float32")
    y = np.array([2, 3, 4], "float32")
    e = (x + x) * y
    for got in run_everywhere(tmp_path, NESTED, [x, y]):
        np.testing.assert_allclose(got[0], (e + x) * y)
    mod = round_trip(NESTED)
    deep = mod.functions["main_outer_deep"]
    assert isinstance(deep, Function) and [p.name for p in deep.params] == ["a", "y", "b"]


def test_inline_calls_drops_the_lifted_functions() -> None:
    mod = InlineCalls()(parse(NESTED))
    assert sorted(mod.functions) == ["main"]
    assert not any(f.attrs.get(LIFTED) for f in mod.functions.values())


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
BODY
        return gv
"""


@pytest.mark.parametrize(("body", "where", "message"), [
    ("        def inner(a: R.Tensor((2,), \"float32\")):\n            return a\n\n"
     "        gv = inner(x)", (5, 13),
     "unsupported: a local function other than one `@R.function def ...`"),
    ("        @R.function\n        def inner(a: R.Tensor((2,), \"float32\")):\n"
     "            return a\n\n        gv = inner", (9, 14),
     "unsupported: the local function 'inner' as a value (only calls of it)"),
    ("        with R.dataflow():\n            @R.function\n"
     "            def inner(a: R.Tensor((2,), \"float32\")):\n                return a\n\n"
     "            gv = inner(x)\n            R.output(gv)", (7, 17),
     "a local function inside R.dataflow() (define it before the block)"),
    ("        @R.function\n        def inner(a: R.Tensor((2,), \"float32\")):\n"
     "            b = R.add(a, zz)\n            return b\n\n        gv = inner(x)", (7, 26),
     "unknown name 'zz'"),
])
def test_misuse_is_a_diagnostic(tmp_path: Path, body: str, where: tuple[int, int],
                                message: str) -> None:
    path = tmp_path / "bad.tir"
    path.write_text(BAD.replace("BODY", body))
    with pytest.raises(CompileError) as err:
        parse_file(path)
    diags = err.value.diagnostics
    assert len(diags) == 1, diags
    assert diags[0].message == message
    assert diags[0].span is not None and (diags[0].span.line, diags[0].span.col) == where
