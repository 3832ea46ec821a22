"""R.call_tir_inplace as TVM 0.27 defines it: output k is argument `inplace_indices[k]`
written in place by the loop function (-1: a fresh output, passed after the arguments); run by
the interpreter and compiled at -O0 and -O3 against NumPy, printed and parsed back, and its
misuse a diagnostic at the call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_support import round_trip
from graph_support import normalize_diagnostic, run_everywhere
from tirc.frontend import parse_file
from tirc.ir import CompileError
from tirc.ir.printer import print_module

KERNELS = """\
    @T.prim_func
    def add_inplace(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            with T.block("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = A[vi, vj] + B[vi, vj]

    @T.prim_func
    def scale_and_sum(a: T.handle, s: T.float32, b: T.handle, c: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        C = T.match_buffer(c, (n,), "float32")
        for i in range(n):
            with T.block("scale"):
                vi = T.axis.spatial(n, i)
                C[vi] = A[vi] + B[vi]
                A[vi] = A[vi] * s
"""

PROGRAM = f"""\
@I.ir_module
class Module:
{KERNELS}
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"),
             u: R.Tensor(("n",), "float32"), v: R.Tensor(("n",), "float32")):
        n = T.int64()
        cls = Module
        with R.dataflow():
            z = R.multiply(x, y)
            a = R.call_tir_inplace(cls.add_inplace, (z, y), inplace_indices=[0],
                                   out_sinfo=R.Tensor((2, 3), "float32"))
            b = R.add(a, x)
            w = R.call_tir_inplace(cls.scale_and_sum, (u, R.prim_value(T.float32(3)), v),
                                   [0, -1], [R.Tensor((n,), "float32"),
                                             R.Tensor((n,), "float32")])
            p = R.call_tir_inplace(cls.add_inplace, (y, x), 0, out_ty=R.Tensor((2, 3),
                                                                              "float32"))
            gv = (b, w[0], w[1], p, y)
            R.output(gv)
        return gv
"""


def test_inplace_results_against_numpy(tmp_path: Path) -> None:
    """The in-place output holds what the kernel wrote over its argument; a fresh output (-1)
    follows the arguments in the kernel's parameters; the R.Prim argument fills the scalar;
    the argument written in place keeps its value afterwards (value semantics, both in the
    interpreter and compiled)."""
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((2, 3)).astype("float32") for _ in range(2))
    u, v = (rng.standard_normal(5).astype("float32") for _ in range(2))
    runs = run_everywhere(tmp_path, PROGRAM, [x, y, u, v])
    assert len(runs) == 3
    for got in runs:
        np.testing.assert_allclose(got[0], x * y + y + x, rtol=1e-6)
        np.testing.assert_allclose(got[1], u * 3, rtol=1e-6)
        np.testing.assert_allclose(got[2], u + v, rtol=1e-6)
        np.testing.assert_allclose(got[3], y + x, rtol=1e-6)
        np.testing.assert_array_equal(got[4], y)


def test_prints_as_tvm_and_parses_back() -> None:
    """out_sinfo, then inplace_indices as a list (an index written alone, positionally or
    with out_ty, prints the same way)."""
    printed = print_module(round_trip(PROGRAM))
    assert "out_sinfo=R.Tensor((2, 3), dtype=\"float32\"), inplace_indices=[0])" in printed
    assert "inplace_indices=[0, -1])" in printed
    assert "R.prim_value(T.float32(3.0))" in printed


TIR_VARS = """\
@I.ir_module
class Module:
    @T.prim_func
    def fill_first(a: T.handle, m: T.int64):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        for i in range(m):
            with T.block("f"):
                vi = T.axis.spatial(m, i)
                A[vi] = T.float32(7)

    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        n = T.int64()
        y = R.add(x, x)
        z = R.call_tir_inplace(Module.fill_first, (y,), [0], R.Tensor((n,), "float32"),
                               R.shape([2]))
        return z
"""


def test_tir_vars_fill_the_scalar_parameters(tmp_path: Path) -> None:
    """A kernel that writes only part of its argument: the rest keeps the argument's values;
    the fifth positional argument is tir_vars, printed by name."""
    x = np.arange(5, dtype="float32")
    for got in run_everywhere(tmp_path, TIR_VARS, [x]):
        np.testing.assert_array_equal(got[0], [7, 7, 4, 6, 8])
    assert "(y,), tir_vars=R.shape([2]), out_sinfo=" in print_module(round_trip(TIR_VARS))


BAD = f"""\
@I.ir_module
class Module:
{KERNELS}
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"),
             i: R.Tensor((2, 3), "int32"), t: R.Tensor((3, 2), "float32")):
        gv = CALL
        return gv
"""
OUT = 'out_sinfo=R.Tensor((2, 3), "float32")'


@pytest.mark.parametrize(("call", "message"), [
    (f"R.call_tir_inplace(Module.add_inplace, (x, y), [2], {OUT})",
     "R.call_tir_inplace: in-place index 2 of output 0 is out of range: the call has 2 "
     "arguments (an index is -1 or 0 to 1)"),
    (f"R.call_tir_inplace(Module.add_inplace, (x, y), [-2], {OUT})",
     "R.call_tir_inplace: in-place index -2 of output 0 is out of range: the call has 2 "
     "arguments (an index is -1 or 0 to 1)"),
    ("R.call_tir_inplace(Module.add_inplace, (x, y), [0, 0], [R.Tensor((2, 3), \"float32\"), "
     "R.Tensor((2, 3), \"float32\")])",
     "R.call_tir_inplace: in-place index 0 is used more than once (each argument is written "
     "by one output)"),
    (f"R.call_tir_inplace(Module.add_inplace, (x, y), [0, 1], {OUT})",
     "R.call_tir_inplace: 2 in-place indices for 1 outputs (one per output, -1 for an output "
     "that is no argument)"),
    (f"R.call_tir_inplace(Module.add_inplace, (x, y), [-1], {OUT})",
     "R.call_tir_inplace: needs an in-place index other than -1 (with none, use "
     "R.call_tir)"),
    (f"R.call_tir_inplace(Module.add_inplace, (t, y), [0], {OUT})",
     "R.call_tir_inplace: in-place index 0: argument 0 (R.Tensor((3, 2), \"float32\")) does "
     "not match output 0 (R.Tensor((2, 3), \"float32\")) in shape and dtype"),
    (f"R.call_tir_inplace(Module.add_inplace, (i, y), [0], {OUT})",
     "R.call_tir_inplace: in-place index 0: argument 0 (R.Tensor((2, 3), \"int32\")) does "
     "not match output 0 (R.Tensor((2, 3), \"float32\")) in shape and dtype"),
    ("R.call_tir_inplace(Module.add_inplace, (x, y), [0, -1], [R.Tensor((2, 3), \"float32\"), "
     "R.Tensor((2, 3), \"float32\")])",
     "R.call_tir_inplace: add_inplace takes 2 tensors, got 2 inputs and 1 outputs"),
])
def test_misuse_is_a_diagnostic_at_the_call(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and diag.span.line == 25


@pytest.mark.parametrize(("call", "message"), [
    (f"R.call_tir_inplace(Module.add_inplace, (x, y), {OUT})",
     "R.call_tir_inplace needs inplace_indices=..."),
    (f"R.call_tir_inplace(Module.add_inplace, (x, y), inplace_indices=[x], {OUT})",
     "R.call_tir_inplace: an in-place index is an integer literal (-1: no argument)"),
])
def test_malformed_call_is_a_parse_error(tmp_path: Path, call: str, message: str) -> None:
    path = tmp_path / "bad.tir"
    path.write_text(BAD.replace("CALL", call))
    with pytest.raises(CompileError) as err:
        parse_file(path)
    assert err.value.diagnostics[0].message == message


IN_PLACE = f"""\
@I.ir_module
class Module:
{KERNELS}
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        cls = Module
        z = R.multiply(x, y)
        a = R.call_tir_inplace(cls.add_inplace, (z, y), [0], {OUT})
        w = R.add(x, y)
        b = R.call_tir_inplace(cls.add_inplace, (w, x), [0], {OUT})
        c = R.call_tir_inplace(cls.add_inplace, (x, y), [0], {OUT})
        gv = (a, b, w, c, x)
        return gv
"""


def test_an_argument_nothing_sees_after_is_written_in_place(tmp_path: Path) -> None:
    """`z`, used by the call alone, is written in place (marked `in_place=True`, no copying
    wrapper, no copy in the host function); `w` (returned too) and the parameter `x` are
    copied first and keep their values; every run agrees with NumPy."""
    from tirc.passes.graph.legalize_ops import LegalizeOps
    from tirc.passes.graph.lower_graph import LowerGraph

    mod = LegalizeOps()(round_trip(IN_PLACE))
    text = print_module(mod)
    assert text.count("in_place=True") == 1
    assert "(z, y), in_place=True," in text
    assert text.count("Module.add_inplace_inplace") == 2
    assert "(z, y)" in print_module(round_trip(text))  # the mark parses back
    host = print_module(LowerGraph()(mod))
    assert host.count("_inplace_copy") == 2  # w's and x's copies, not z's
    x = np.arange(6, dtype="float32").reshape(2, 3)
    y = x * 0.5 + 1
    for got in run_everywhere(tmp_path, IN_PLACE, [x, y]):
        np.testing.assert_allclose(got[0], x * y + y, rtol=1e-6)
        np.testing.assert_allclose(got[1], 2 * x + y, rtol=1e-6)
        np.testing.assert_allclose(got[2], x + y, rtol=1e-6)
        np.testing.assert_allclose(got[3], x + y, rtol=1e-6)
        np.testing.assert_array_equal(got[4], x)
