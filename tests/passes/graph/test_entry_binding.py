"""How a graph function takes its arguments and gives its result, as TVM 0.27 defines it: every
size some parameter defines directly binds first, whatever the parameter order, and then a
product dimension solves its one unknown factor; an empty tuple returned is `()`; and
`relax.const` is `R.const`. The interpreter and the library at -O0 and -O3 agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_support import compile_sample
from tirc.frontend import parse_file
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter, InterpreterError

HEADER = ("from tvm.script import ir as I\nfrom tvm.script import relax as R\n"
          "from tvm.script import tir as T\nfrom tvm import relax\n\n")


def _write(tmp_path: Path, text: str) -> Path:
    """`text` under the imports, in a file of its own (a library path is loaded once)."""
    path = tmp_path / f"prog{len(list(tmp_path.glob('*.tir')))}.tir"
    path.write_text(HEADER + text)
    return path


def _same(want: object, got: object) -> None:
    """Equal values of the same structure: tuples, arrays (dtype and shape), numbers."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for w, g in zip(want, got):
            _same(w, g)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want, (got, want)


def run_both(tmp_path: Path, text: str, args: list[object],
             lib_args: list[object] | None = None) -> object:
    """`main` interpreted, and compiled at -O0 and -O3 (given `lib_args` where a shape
    parameter's sizes are passed one by one): the same value; the interpreter's."""
    path = _write(tmp_path, text)
    want = Interpreter(parse_file(path)).call("main", *args)
    for level in (0, 3):
        lib = compile_sample(path, path.with_name(f"{path.stem}_O{level}.so"), level)
        _same(want, lib.main(*(args if lib_args is None else lib_args)))  # type: ignore[attr-defined]
    return want


LATER_PRIM = """\
@R.function
def main(A: R.Tensor(("M * N",), "float32"), x: R.Prim(value="M")):
    M = T.int64()
    N = T.int64()
    B = R.reshape(A, R.shape([M, N]))
    return (R.add(B, B), R.shape([N]))
"""


def test_sizes_defined_by_later_parameters(tmp_path: Path) -> None:
    """`M` given by a later `R.Prim(value="M")`, `R.Shape(["M"])` or tensor `(M,)`; `N` is the
    product's dimension divided by `M` (it was "M not bound" / "symbolic size 'M' is not
    known")."""
    a = np.arange(6, dtype="float32")
    got = run_both(tmp_path, LATER_PRIM, [a, 2])
    assert isinstance(got, tuple) and got[0].shape == (2, 3) and got[1] == (3,)
    np.testing.assert_array_equal(got[0], 2 * a.reshape(2, 3))
    run_both(tmp_path, """\
@R.function
def main(A: R.Tensor(("M * N",), "float32"), s: R.Shape(["M"])):
    M = T.int64()
    N = T.int64()
    return R.reshape(A, R.shape([M, N]))
""", [a, (3,)], lib_args=[a, 3])
    got = run_both(tmp_path, """\
@R.function
def main(A: R.Tensor(("M * N",), "float32"), b: R.Tensor(("M",), "float32")):
    M = T.int64()
    N = T.int64()
    B = R.reshape(A, R.shape([M, N]))
    return R.add(B, R.reshape(b, R.shape([M, 1])))
""", [a, np.ones(3, "float32")])
    assert isinstance(got, np.ndarray) and got.shape == (3, 2)


def test_a_product_the_argument_does_not_fill_is_an_error(tmp_path: Path) -> None:
    """7 elements for `M * N` with `M` = 2: N has no value, in both runs."""
    path = _write(tmp_path, LATER_PRIM)
    a = np.arange(7, dtype="float32")
    with pytest.raises(InterpreterError, match="dimension is 7, not a multiple of 2, so 'N' "
                                               "has no value"):
        Interpreter(parse_file(path)).call("main", a, 2)
    lib = compile_sample(path, tmp_path / "bad.so", 0)
    with pytest.raises(ValueError, match="argument A: dimension 7 is not a multiple of 2, so "
                                         "'N' of 'x \\* N' has no value"):
        lib.main(a, 2)  # type: ignore[attr-defined]


def test_a_size_only_a_sum_mentions_is_refused(tmp_path: Path) -> None:
    """`M + N` solves nothing: the interpreter says so, the compile is refused at the
    function."""
    path = _write(tmp_path, """\
@R.function
def main(A: R.Tensor(("M + N",), "float32"), x: R.Prim(value="M")):
    M = T.int64()
    N = T.int64()
    return R.add(A, A)
""")
    with pytest.raises(InterpreterError, match="the size 'N' appears only in a compound "
                                               "dimension"):
        Interpreter(parse_file(path)).call("main", np.zeros(5, "float32"), 2)
    with pytest.raises(CompileError, match="lower-graph: the sizes N cannot be bound from "
                                           "the arguments"):
        compile_sample(path, tmp_path / "sum.so", 0)


def test_an_empty_tuple_returned_is_an_empty_tuple(tmp_path: Path) -> None:
    """`return ()` gives `()` from the library too (it gave None), and empty tuples nested
    among results keep their places."""
    x = np.ones((2, 3), "float32")
    assert run_both(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    return ()
""", [x]) == ()
    got = run_both(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    return ((), x, ((),))
""", [x])
    assert isinstance(got, tuple) and got[0] == () and got[2] == ((),)


def test_relax_const_is_r_const(tmp_path: Path) -> None:
    """`relax.const(1.0, "float32")` inside an `R.function` (TVM's normalize tests) is
    `R.const` (it was "expected a function of this module")."""
    got = run_both(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
    y = R.add(x, relax.const(1.5, "float32"))
    return y
""", [np.ones((2, 3), "float32")])
    np.testing.assert_array_equal(got, np.full((2, 3), 2.5, "float32"))


def test_the_entry_point_solves_the_product_itself(tmp_path: Path) -> None:
    """A C caller gets the same rule: make-entry divides A's dimension by `x` (guarded
    against 0) after checking it is a multiple, instead of refusing `N` as unbindable."""
    from tirc.ir.printer import print_module
    from tirc.ir.target import parse_target
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pipeline import build_pipeline, default_pipeline

    path = _write(tmp_path, """\
@R.function
def main(A: R.Tensor(("M * N",), "float32"), x: R.Prim(value="M")):
    M = T.int64()
    N = T.int64()
    return R.add(A, A)
""")
    steps = build_pipeline(default_pipeline(parse_target("llvm"), 0))
    text = print_module(run_pipeline(parse_file(path), steps))
    assert "A_shape0 % T.max(x, T.int64(1)) == T.int64(0), \"main: argument A: dimension 0 " \
        "(%lld) is not a multiple of %lld, so size 'N' has no value\"" in text
    assert "N: T.int64 = A_shape0 // T.max(x, T.int64(1))" in text
    a = np.arange(8, dtype="float32")
    lib = compile_sample(path, tmp_path / "entry.so", 3)
    np.testing.assert_array_equal(lib.main(a, 4), a + a)  # type: ignore[attr-defined]


TENSOR_CONSTANTS = """\
@I.ir_module
class Module:
    @T.prim_func
    def addk(a: T.Buffer((2, 2), "float32"), b: T.Buffer((2, 2), "float32"),
             c: T.Buffer((2, 2), "float32")):
        for i, j in T.grid(2, 2):
            with T.block("c"):
                vi, vj = T.axis.remap("SS", [i, j])
                c[vi, vj] = a[vi, vj] + b[vi, vj]

    @R.function
    def main(x: R.Tensor((2, 2), "float32")):
        k = R.const([[1.0, 2.0], [3.0, 4.5]], "float32")
        y = R.call_tir(Module.addk, (x, k), out_sinfo=R.Tensor((2, 2), "float32"))
        z = R.matmul(y, R.const([[1.0, 0.0], [0.0, -1.0]], "float32"))
        w = R.add(z, y)
        i = R.const([[1, 2], [3, 4]], "int32")
        b = R.const([True, False])
        return (w, i, b, R.sum(R.const([1.0, 2.0, 3.0], "float32")))
"""


def test_tensor_constants(tmp_path: Path) -> None:
    """`R.const` of a list (nested for 2-d) is a tensor constant, as TVM's: an operand of
    R.call_tir, an operator and a reduction, and returned; it prints back as written."""
    from tirc.frontend import parse
    from tirc.ir.printer import print_module

    x = np.arange(4, dtype="float32").reshape(2, 2)
    got = run_both(tmp_path, TENSOR_CONSTANTS, [x])
    assert isinstance(got, tuple)
    y = x + np.array([[1.0, 2.0], [3.0, 4.5]], "float32")
    np.testing.assert_array_equal(got[0], y @ np.array([[1, 0], [0, -1]], "float32") + y)
    np.testing.assert_array_equal(got[1], np.array([[1, 2], [3, 4]], "int32"))
    np.testing.assert_array_equal(got[2], np.array([True, False]))
    assert got[3] == 6.0
    text = print_module(parse(HEADER + TENSOR_CONSTANTS))
    assert 'b = R.const([True, False], "bool")' in text
    assert 'k = R.const([[1.0, 2.0], [3.0, 4.5]], "float32")' in text
    assert print_module(parse(text)) == text


@pytest.mark.parametrize("value, message", [
    ("[[1.0, 2.0], [3.0]]", "R.const of a list needs a non-empty list whose items have one "
                            "shape"),
    ("[]", "R.const of a list needs a non-empty list"),
    ('["a"]', "unsupported: R.const of anything but a number or a list of numbers"),
    ("[1.5, 2]", "R.const of a float literal with dtype int32"),
])
def test_bad_tensor_constants(value: str, message: str) -> None:
    """A ragged or empty list, a string, a float for an integer dtype: errors at the value."""
    from tirc.frontend import parse

    with pytest.raises(CompileError, match=message.replace("[", "\\[")):
        parse(HEADER + f"""\
@R.function
def main(x: R.Tensor((3,), "float32")):
    y = R.const({value}, "int32")
    return y
""")
