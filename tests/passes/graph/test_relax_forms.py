"""Graph programs in the forms TVM's Relax tests write them: each compiles at -O0 and -O3 and
agrees with the reference interpreter (or is refused with a message at its place)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_support import compile_sample, copy_arg, interpret
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter, InterpreterError

HEADER = ("from tvm.script import ir as I\nfrom tvm.script import relax as R\n"
          "from tvm.script import tir as T\n\n")


def check(tmp_path: Path, text: str, args: list[np.ndarray], levels: tuple[int, ...] = (0, 3),
          **kw: float) -> None:
    """`main` of the module `text`, interpreted and compiled at each of `levels`, alike."""
    stem = f"prog{len(list(tmp_path.glob('*.tir')))}"  # a library path is loaded once
    path = tmp_path / f"{stem}.tir"
    path.write_text(HEADER + text)
    want = interpret(parse_file(path), args)
    for level in levels:
        lib = compile_sample(path, tmp_path / f"{stem}_O{level}.so", level)
        got = lib.main(*[copy_arg(a) for a in args])  # type: ignore[attr-defined]
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=kw.get("rtol", 1e-6), atol=kw.get("atol", 0))


def test_an_int32_kernel_size_bound_to_an_int64_graph_size(tmp_path: Path) -> None:
    """The kernel's `n` is int32, the graph's int64: inlined, the kernel's loops run over the
    graph's `n` cast to int32 (it was left mixed, an internal error at -O1 and above)."""
    check(tmp_path, """\
@I.ir_module
class Module:
    @T.prim_func
    def copy(x: T.handle, z: T.handle):
        n = T.int32()
        A = T.match_buffer(x, (n,))
        C = T.match_buffer(z, (n,))
        for i in range(n):
            with T.block("c"):
                vi = T.axis.remap("S", [i])
                C[vi] = A[vi] * T.float32(2)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        gv0 = R.call_tir(Module.copy, (x,), R.Tensor((n,), dtype="float32"))
        return gv0
""", [np.arange(37, dtype="float32")], levels=(0, 1, 2, 3))


def test_a_shape_parameter_is_passed_in_its_place(tmp_path: Path) -> None:
    """`main(s: R.Shape(["m"]))` returns a tensor: its size follows the outputs in the
    library's parameters (docs/abi.md), yet `main(4)` passes it and allocates the output."""
    path = tmp_path / "shape.tir"
    path.write_text(HEADER + """\
@I.ir_module
class Module:
    @T.prim_func
    def iota(x_handle: T.handle):
        N = T.int64()
        x = T.match_buffer(x_handle, [N], "float32")
        for i in range(N):
            x[i] = T.Cast("float32", i)

    @R.function
    def main(s: R.Shape(["m"])) -> R.Tensor:
        m = T.int64()
        gv0 = R.call_tir(Module.iota, (), R.Tensor((m + 1,), dtype="float32"))
        return gv0
""")
    lib = compile_sample(path, tmp_path / "shape.so", 2)
    want = Interpreter(parse_file(path)).call("main", (4,))
    np.testing.assert_array_equal(want, np.arange(5, dtype="float32"))
    np.testing.assert_array_equal(lib.main(4), want)
    np.testing.assert_array_equal(lib.main(m=4), want)


def test_a_returned_call_and_a_returned_tuple_variable(tmp_path: Path) -> None:
    """`return R.add(x, x)` and `gv = R.split(...); return gv`, as TVM's tests write them:
    the call is bound to a variable of its own, the tuple returned field by field."""
    x = np.random.default_rng(0).standard_normal((2, 10, 4)).astype("float32")
    check(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 10, 4), "float32")):
    return R.add(x, R.multiply(x, x))
""", [x])
    check(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 10, 4), "float32")) -> R.Tuple(R.Tensor((2, 5, 4), "float32"),
                                                        R.Tensor((2, 5, 4), "float32")):
    gv = R.split(x, 2, axis=1)
    return gv
""", [x])
    check(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 10, 4), "float32")):
    return (R.exp(x), R.split(x, 2, axis=1)[1])
""", [x])


def _copies(args: list[object]) -> list[object]:
    return [copy_arg(a) if isinstance(a, np.ndarray) else a for a in args]


def check_returns(tmp_path: Path, text: str, args: list[object],
                  levels: tuple[int, ...] = (0, 1, 2, 3),
                  lib_args: list[object] | None = None) -> object:
    """`main` of `text` interpreted and compiled at each of `levels` (given `lib_args` when
    the library takes other arguments, as a shape parameter's sizes): the same returned
    value, structure and types included (shapes as tuples of ints, scalars as Python
    numbers); the library's function, from the last level."""
    stem = f"prog{len(list(tmp_path.glob('*.tir')))}"
    path = tmp_path / f"{stem}.tir"
    path.write_text(HEADER + text)
    want = Interpreter(parse_file(path)).call("main", *_copies(args))

    def same(w: object, g: object) -> None:
        if isinstance(w, tuple):
            assert isinstance(g, tuple) and len(g) == len(w), (g, w)
            for a, b in zip(w, g):
                same(a, b)
        elif isinstance(w, np.ndarray):
            assert isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
        else:  # an R.Prim value: a Python number of the same kind
            assert type(g) is type(np.asarray(w).item()) and g == w, (g, w)

    lib = None
    for level in levels:
        lib = compile_sample(path, tmp_path / f"{stem}_O{level}.so", level)
        same(want, lib.main(*_copies(args if lib_args is None else lib_args)))  # type: ignore[attr-defined]
    return lib.main  # type: ignore[attr-defined]


def test_a_returned_shape_is_a_tuple_of_ints(tmp_path: Path) -> None:
    """`return R.shape([n * 2, m * 3])` of sizes a match_cast binds (TVM's
    test_vm_compile_stage2): an int64 result of two entries, which the runtime returns as a
    tuple of ints (the metadata's "returns")."""
    main = check_returns(tmp_path, """\
@R.function
def main(x: R.Tensor(dtype="float32")) -> R.Shape:
    n, m = T.int64(), T.int64()
    _ = R.match_cast(x, R.Tensor((n, m), "float32"))
    return R.shape([n * 2, m * 3])
""", [np.zeros((3, 5), "float32")])
    assert main(np.zeros((4, 1), "float32")) == (8, 3)  # type: ignore[operator]
    meta = main.meta  # type: ignore[attr-defined]
    assert meta["returns"] == {"shape": "shape"}
    assert meta["params"][-1] == {"name": "shape", "kind": "buffer", "buffer": "shape",
                                  "dtype": "int64", "shape": [2], "input": False,
                                  "output": True}


def test_a_tensor_and_a_shape_returned_together(tmp_path: Path) -> None:
    """`return (x0, R.shape([m, n * 2]))` (TVM's parser tests): a tensor and a shape, each a
    result; a shape of a shape parameter's sizes and an empty one too."""
    main = check_returns(tmp_path, """\
@R.function
def main(x: R.Tensor("float32"), y: R.Tensor("float32")):
    m = T.int64()
    n = T.int64()
    x0 = R.match_cast(x, R.Tensor([m], "float32"))
    with R.dataflow():
        y0 = R.match_cast(y, R.Tensor([n], "float32"))
        gv = y0
        R.output(gv)
    return (x0, R.shape([m, n * 2]))
""", [np.arange(3, dtype="float32"), np.arange(4, dtype="float32")])
    assert main.meta["returns"] == ["x_out0", {"shape": "shape_out1"}]  # type: ignore[attr-defined]
    check_returns(tmp_path, """\
@R.function
def main(s: R.Shape(["m", "n"])):
    m = T.int64()
    n = T.int64()
    return (R.shape([2 * m, 3 * n]), R.shape([]))
""", [(4, 5)], levels=(0, 3), lib_args=[4, 5])


def test_a_returned_prim_value_is_a_python_number(tmp_path: Path) -> None:
    """`return R.prim_value(n * n)` of an `R.Prim(value="n")` parameter (TVM's
    test_vm_symbolic_prim_value), a float parameter returned as it is, and a bool: 0-d
    results the runtime returns as Python numbers."""
    main = check_returns(tmp_path, """\
@R.function
def main(shape: R.Prim(value="n")):
    n = T.int64()
    return R.prim_value(n * n)
""", [7])
    assert main.meta["returns"] == {"prim": "value"}  # type: ignore[attr-defined]
    check_returns(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 3), "float32"), a: R.Prim("float32"), c: R.Prim("bool")):
    b = R.prim_value(T.int32(5))
    y = R.add(x, x)
    return ((y, a), (c, b))
""", [np.ones((2, 3), "float32"), 1.5, True])


def test_tuples_of_the_function_own_are_indexed_and_returned(tmp_path: Path) -> None:
    """`t = (x, y); z = t[0]` and a nested tuple returned through variables (TVM's
    test_tuple_binding): normalize resolves `t[k]` to the field and a returned tuple variable
    to its fields, so the results are the tensors and shapes themselves."""
    main = check_returns(tmp_path, """\
@R.function
def main(x: R.Tensor("float32", ndim=2)):
    n, m = T.int64(), T.int64()
    x0 = R.match_cast(x, R.Tensor((n, m), "float32"))
    t0 = (x, x0)
    t1 = (x, R.shape([n, m]), t0)
    return t1
""", [np.arange(6, dtype="float32").reshape(2, 3)])
    assert main.meta["returns"] == ["x_out0", {"shape": "shape_out1"},  # type: ignore[attr-defined]
                                    ["x_out2", "x_out3"]]
    check_returns(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
    with R.dataflow():
        t = (x, y)
        z = R.add(t[0], t[1])
        u = (t, z)
        w = u[0][1]
        v = R.multiply(w, z)
        R.output(v, u)
    return (u, v)
""", [np.ones((2, 3), "float32"), np.full((2, 3), 2, "float32")])


def test_a_returned_string_is_refused_at_its_binding(tmp_path: Path) -> None:
    """A result that is no tensor, shape or scalar: the message says what a result may be."""
    path = tmp_path / "str.tir"
    path.write_text(HEADER + """\
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    s = R.str("hi")
    return (x, s)
""")
    with pytest.raises(CompileError) as err:
        compile_sample(path, tmp_path / "str.so")
    assert err.value.diagnostics[0].header() == (
        f"{path}:7:5: error: lower-graph: a returned value must be a tensor, an R.Shape or an "
        "R.Prim value (or a tuple of them), not R.Object")


def test_sizes_declared_together(tmp_path: Path) -> None:
    """`m, n = T.int64(), T.int64()`: how TVM prints several sizes, in a loop function and in
    a graph function."""
    x = np.random.default_rng(1).standard_normal((3, 5)).astype("float32")
    check(tmp_path, """\
@I.ir_module
class Module:
    @T.prim_func
    def add_one(x: T.handle, y: T.handle):
        m, n = T.int64(), T.int64()
        A = T.match_buffer(x, (m, n))
        B = T.match_buffer(y, (m, n))
        for i, j in T.grid(m, n):
            with T.block("b"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    @R.function
    def main(x: R.Tensor(("m", "n"), "float32")) -> R.Tensor(("m", "n"), "float32"):
        m, n = T.int64(), T.int64()
        gv = R.call_tir(Module.add_one, (x,), R.Tensor((m, n), dtype="float32"))
        return gv
""", [x])


def test_constants_shapes_and_names_bound_again(tmp_path: Path) -> None:
    """`y = R.const(1)` returned (a constant gets storage of its own), `lv = R.shape(...)`
    passed to a reshape, and a name bound a second time (`y = R.add(x, y)`, which Relax's
    parser allows: a new variable, printed `y_1`)."""
    check(tmp_path, """\
@R.function
def main() -> R.Tensor((), "int32"):
    with R.dataflow():
        y = R.const(1)
        n = y
        R.output(n)
    return n
""", [])
    x = np.random.default_rng(2).standard_normal((1, 2, 3, 4)).astype("float32")
    check(tmp_path, """\
@R.function
def main(x: R.Tensor((1, 2, 3, 4), "float32")) -> R.Tensor((8, 3), "float32"):
    lv: R.Shape((8, 3)) = R.shape((8, 3))
    gv: R.Tensor((8, 3), "float32") = R.reshape(x, lv)
    return gv
""", [x])
    text = """\
@R.function
def main(x: R.Tensor((4, 4), "float32")):
    y = R.add(x, x)
    z = R.multiply(x, y)
    y = R.add(x, y)
    y = R.multiply(y, z)
    x = R.subtract(y, x)
    return x
"""
    a = np.random.default_rng(3).standard_normal((4, 4)).astype("float32")
    check(tmp_path, text, [a], rtol=1e-5)
    want = (a + (a + a)) * (a * (a + a)) - a
    np.testing.assert_allclose(interpret(parse(HEADER + text), [a])[0], want, rtol=1e-5)
    assert "y_1 = R.add(x, y)" in parse(HEADER + text).script()


def test_tuples_written_as_calls(tmp_path: Path) -> None:
    """`R.tuple(x, y)` and `R.call_tir(f, R.tuple(), ...)`, as TVM's tests spell tuples."""
    x = np.random.default_rng(4).standard_normal((2, 3)).astype("float32")
    check(tmp_path, """\
@I.ir_module
class Module:
    @T.prim_func
    def ones(T_full: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            with T.block("T_full"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_full[vi, vj] = T.float32(1)

    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        gv = R.call_tir(Module.ones, R.tuple(), R.Tensor((2, 3), dtype="float32"))
        return R.tuple(R.add(x, gv), gv)
""", [x])


def test_tuple_get_item_written_as_a_call(tmp_path: Path) -> None:
    """`R.TupleGetItem(t, 1)`, TVM's parser test spelling of `t[1]`."""
    x = np.random.default_rng(5).standard_normal((2, 4)).astype("float32")
    check(tmp_path, """\
@R.function
def main(x: R.Tensor((2, 4), "float32")):
    t = R.split(x, 2, axis=1)
    b = R.TupleGetItem(t, 1)
    return R.add(t[0], b)
""", [x])
    with pytest.raises(CompileError) as err:
        parse(HEADER + "@R.function\ndef f(x: R.Tensor((2,), \"float32\")):\n"
              "    return R.TupleGetItem((x, x), -1)\n")
    assert "a tuple index is a non-negative integer literal" in str(err.value)


def test_shape_written_as_a_constructor(tmp_path: Path) -> None:
    """`R.ShapeExpr([...])`, TVM's constructor spelling of `R.shape([...])` (its
    LiftTransformParams test passes `tir_vars=R.ShapeExpr([slice_index])`)."""
    a = np.arange(32, dtype="int32").reshape(4, 8)
    check(tmp_path, """\
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def row(x: T.Buffer((4, 8), "int32"), y: T.Buffer((8,), "int32"), k: T.int64):
        for j in range(8):
            with T.block("row"):
                vj = T.axis.remap("S", [j])
                y[vj] = x[k, vj]

    @R.function
    def main(x: R.Tensor((4, 8), "int32")):
        r = R.call_tir(Module.row, [x], tir_vars=R.ShapeExpr([2]),
                       out_sinfo=R.Tensor((8,), "int32"))
        return R.reshape(r, R.ShapeExpr([2, 4]))
""", [a])


def test_match_cast_to_a_tensor_without_dtype_keeps_the_values(tmp_path: Path) -> None:
    """`C = R.match_cast(B, R.Tensor([M, N]))` (TVM's bind_symbolic_vars test) of a float32 `B`:
    `C` is a float32 tensor, so `R.add(A, C)` compiles (its kernel was an internal error: an
    operand of unknown dtype)."""
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((3, 8)).astype("float32") for _ in range(2))
    check(tmp_path, """\
@R.function
def main(A: R.Tensor(["M", "N"], "float32"), B: R.Tensor("float32", ndim=2)):
    M = T.int64()
    N = T.int64()
    C = R.match_cast(B, R.Tensor([M, N]))
    return R.add(A, C)
""", [a, b])


def test_item_of_a_written_tuple_as_a_condition(tmp_path: Path) -> None:
    """`c = R.TupleGetItem(R.tuple(cond), 0)` then `if c:` (TVM's normalize test): the item is
    `cond` (lowering refused it: no tensor computed before the call)."""
    x = np.array([1.5], dtype="float32")
    for cond in (True, False):
        check(tmp_path, """\
@R.function
def main(cond: R.Tensor((), "bool"), x: R.Tensor((1,), "float32")):
    c = R.TupleGetItem(R.tuple(cond), 0)
    if c:
        gv = R.add(x, x)
        y = gv
    else:
        gv = R.multiply(x, x)
        y = gv
    return y
""", [np.array(cond), x])


def test_returned_call_of_a_graph_function_is_inlined(tmp_path: Path) -> None:
    """`return Module.func(A)` (TVM's LambdaLift and RemoveUnusedParameters tests): inline-calls
    binds the returned call, then inlines it (it was left a call lowering refused)."""
    a = np.random.default_rng(7).standard_normal((2, 3)).astype("float32")
    check(tmp_path, """\
@I.ir_module
class Module:
    @R.function
    def main(A: R.Tensor([2, 3], "float32")):
        return (Module.func(A), R.add(A, A))

    @R.function(private=True)
    def func(A: R.Tensor([2, 3], "float32")) -> R.Tensor([2, 3], "float32"):
        return R.multiply(A, A)
""", [a])


def test_callee_sizes_given_by_prim_and_shape_arguments(tmp_path: Path) -> None:
    """A callee whose sizes its `R.Prim(value="n")` or `R.Shape(["m", "n"])` parameters define:
    the call's result is in the caller's sizes (an annotation `R.Tensor([m, n])` of it was
    "does not match the value's R.Tensor((m, n))", the callee's own `m` and `n`), and the
    inlined body computes in them."""
    a = np.random.default_rng(8).standard_normal((3, 4)).astype("float32")
    check(tmp_path, """\
@I.ir_module
class Module:
    @R.function
    def main(A: R.Tensor(["m", "n"], "float32")) -> R.Tensor(["m", "n"], "float32"):
        m = T.int64()
        n = T.int64()
        z: R.Tensor([m, n], "float32") = Module.fill(R.prim_value(n), R.prim_value(m))
        out: R.Tensor([m, n], "float32") = Module.plus(A, R.shape([m, n]), z)
        return out

    @R.function(private=True)
    def fill(pn: R.Prim(value="n"), pm: R.Prim(value="m")) -> R.Tensor(["m", "n"], "float32"):
        m = T.int64()
        n = T.int64()
        return R.full(R.shape([m, n]), R.const(1.5, "float32"))

    @R.function(private=True)
    def plus(A: R.Tensor(["a", "b"], "float32"), s: R.Shape(["a", "b"]),
            z: R.Tensor(["a", "b"], "float32")) -> R.Tensor(["a", "b"], "float32"):
        a = T.int64()
        b = T.int64()
        return R.add(R.add(A, z), R.zeros(R.shape([a, b]), "float32"))
""", [a])


MATCH_CAST_PARAMS = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32"), y: R.Tensor("float32", ndim=1)):
        n, m = T.int64(), T.int64()
        q = x
        x0 = R.match_cast(q, R.Tensor((n, m), "float32"))
        with R.dataflow():
            y0 = R.match_cast(y, R.Tensor((m,), "float32"))
            z = R.add(x0, y0)
            R.output(z)
        return z

    @R.function
    def obj(x: R.Object):
        n = T.int64()
        _ = R.match_cast(x, R.Tensor((n,), "int32"))
        return x

    @R.function
    def shaped(x: R.Tensor(("n", 4)), y: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        x0 = R.match_cast(x, R.Tensor((n, 4), "float32"))
        return R.multiply(x0, y)
"""


def test_parameters_refined_by_match_cast_are_taken_with_the_refined_type(
        tmp_path: Path) -> None:
    """A parameter of unknown shape or dtype that an `R.match_cast` refines before any other
    use: the entry takes it with the cast's type and checks it as the match_cast does."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 5)).astype("float32")
    y = rng.standard_normal(5).astype("float32")
    check(tmp_path, MATCH_CAST_PARAMS, [x, y])
    np.testing.assert_array_equal(interpret(parse(HEADER + MATCH_CAST_PARAMS), [x, y])[0],
                                  x + y)
    path = tmp_path / "prog0.tir"
    lib = compile_sample(path, tmp_path / "again.so", 0)
    assert str(lib.main) == "<tirc function main(x: float32[n, m], y: float32[m], " \
        "z: float32[n, m] (output))>"
    assert str(lib.obj) == "<tirc function obj(x: int32[n], x_out: int32[n] (output))>"
    a = np.arange(7, dtype="int32")
    np.testing.assert_array_equal(lib.obj(a), a)
    w = rng.standard_normal((2, 4)).astype("float32")
    np.testing.assert_allclose(lib.shaped(w, w), w * w)
    with pytest.raises(TypeError, match="main: argument x: expected dtype float32, got float64"):
        lib.main(x.astype("float64"), y)
    with pytest.raises(ValueError, match=r"main: argument y: expected shape \(5,\), got \(4,\)"):
        lib.main(x, y[:4])
    with pytest.raises(ValueError, match="main: argument x: expected 2 dimensions, got 1"):
        lib.main(y, y)
    with pytest.raises(TypeError, match="shaped: argument x: expected dtype float32, got int32"):
        lib.shaped(w.astype("int32"), w)
    with pytest.raises(InterpreterError, match="match_cast of y0, dimension 0: dimension is 4"):
        Interpreter(parse_file(path)).call("main", x, y[:4])


@pytest.mark.parametrize("params,body,why,example", [
    ("x: R.Tensor", "    return R.add(x, x)", "R.Tensor() (its shape and dtype unknown)",
     "(n, 4)"),
    ('x: R.Tensor("float32", ndim=1)',
     "    y = R.add(x, x)\n    n = T.int64()\n"
     '    x0 = R.match_cast(x, R.Tensor((n,), "float32"))\n    return x0',
     'R.Tensor(ndim=1, "float32") (its shape unknown)', "(n, 4)"),
    ('x: R.Tensor(("m", "n"))', "    return R.add(x, x)", "R.Tensor((m, n)) (its dtype unknown)",
     "(m, n)"),
    ('x: R.Tensor("float32"), y: R.Tensor((4,), "float32")',  # `n` only the body binds
     '    n = T.int64()\n    t = R.match_cast(R.add(y, y), R.Tensor((n,), "float32"))\n'
     '    x0 = R.match_cast(x, R.Tensor((n * 2,), "float32"))\n    return x0',
     'R.Tensor("float32") (its shape unknown)', "(n, 4)"),
])
def test_a_parameter_of_unknown_type_used_before_any_match_cast_is_refused(
        tmp_path: Path, params: str, body: str, why: str, example: str) -> None:
    path = tmp_path / "unknown.tir"
    path.write_text(HEADER + f"@R.function\ndef main({params}):\n{body}\n")
    with pytest.raises(CompileError) as err:
        compile_sample(path, tmp_path / "unknown.so")
    assert err.value.diagnostics[0].header() == (
        f"{path}:6:10: error: lower-graph: parameter 'x' must be a tensor of known shape and "
        f"dtype, not {why}: annotate it as a tensor with both, such as R.Tensor({example}, "
        '"float32"), or R.match_cast it to one before its first use')


TUPLE_PARAMS = """\
@I.ir_module
class Module:
    @R.function
    def main(
        t: R.Tuple(R.Tensor(("a", "b0"), "float32"), R.Tensor(("a", "b1"), "float32")),
        c: R.Prim("float32"),
        u: R.Tuple([R.Tensor((3,), "int32")]),
    ):
        a, b0, b1 = T.int64(), T.int64(), T.int64()
        with R.dataflow():
            y = R.concat(t, axis=1)
            z = R.multiply(y, R.const(2, "float32"))
            w = t[1]
            R.output(z, w)
        return (z, w, u[0])
"""


def test_a_tuple_parameter_takes_one_tuple_of_arrays(tmp_path: Path) -> None:
    """An `R.Tuple` parameter of tensors is one library parameter per field (`t_0`, `t_1`);
    the runtime takes one tuple or list for it, the interpreter the same tuple."""
    rng = np.random.default_rng(7)
    t = (rng.standard_normal((2, 3)).astype("float32"),
         rng.standard_normal((2, 4)).astype("float32"))
    u = (np.arange(3, dtype="int32"),)
    path = tmp_path / "tuples.tir"
    path.write_text(HEADER + TUPLE_PARAMS)
    want = Interpreter(parse_file(path)).call("main", t, 1.5, u)
    np.testing.assert_array_equal(want[0], np.concatenate(t, axis=1) * 2)
    for level in (0, 3):
        lib = compile_sample(path, tmp_path / f"tuples{level}.so", level)
        assert str(lib.main) == (
            "<tirc function main(t: (float32[a, b0], float32[a, b1]), c: float32, "
            "u: (int32[3],), z_out0: float32[a, b0 + b1] (output), "
            "t_out1: float32[a, b1] (output), u_out2: int32[3] (output))>")
        assert [p["name"] for p in lib.main.params] == [  # type: ignore[attr-defined]
            "t_0", "t_1", "c", "u_0", "z_out0", "t_out1", "u_out2"]
        assert lib.main.meta["tuples"] == [  # type: ignore[attr-defined]
            {"name": "t", "params": ["t_0", "t_1"]}, {"name": "u", "params": ["u_0"]}]
        for got in (lib.main(t, 1.5, u), lib.main(list(t), c=1.5, u=list(u))):
            for w, g in zip(want, got):
                np.testing.assert_array_equal(g, w)
        with pytest.raises(TypeError, match="main: argument t: expected a tuple of 2 arrays, "
                                            "got a tuple of 1"):
            lib.main(t[:1], 1.5, u)
        with pytest.raises(TypeError, match="main: argument u: expected a tuple of 1 arrays, "
                                            "got ndarray"):
            lib.main(t, 1.5, u[0])
        with pytest.raises(ValueError,
                           match=r"main: argument t_1: expected shape \(2, 4\), got \(1, 4\)"):
            lib.main((t[0], t[1][:1]), 1.5, u)


def test_vm_set_input_tuple(tmp_path: Path) -> None:
    """TVM's test_vm_set_input_tuple: a tuple parameter, one field returned."""
    x = (np.arange(32, dtype="float32"), np.ones(32, "float32"))
    check(tmp_path, """\
@I.ir_module
class MyMod:
    @R.function
    def main(
        x: R.Tuple([R.Tensor((32,), "float32"), R.Tensor((32,), "float32")]),
    ) -> R.Tensor:
        y = x[0]
        return y
""", [x])  # type: ignore[list-item]


PRIM_ARGUMENTS = """\
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(lhs: T.Buffer((4, 8), "float32"), rhs: T.float32, out: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = lhs[vi, vj] + rhs

    @T.prim_func(private=True)
    def scale(x: T.handle, s: T.float32, k: T.int64, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (n, 8))
        Y = T.match_buffer(y, (n, 8))
        for i, j in T.grid(n, 8):
            with T.block("scale"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = X[vi, vj] * s + T.Cast("float32", k)

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Prim("float32")):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.add, (x, y), R.Tensor((4, 8), dtype="float32"))
            h = R.prim_value(T.float32(0.5))
            b = R.call_tir(cls.scale, (a, h, R.prim_value(T.int64(3))),
                           R.Tensor((4, 8), dtype="float32"))
            c = R.call_tir(cls.add, (b, R.prim_value(T.float32(-1.25))),
                           R.Tensor((4, 8), dtype="float32"))
            R.output(c)
        return c
"""


def test_prim_arguments_of_call_tir_fill_the_scalar_parameters(tmp_path: Path) -> None:
    """TVM's `R.call_tir(cls.add, (x, y), ...)` with `y: R.Prim("float32")` (and literal
    `R.prim_value`s): each scalar fills the next scalar parameter, wherever it stands."""
    x = np.arange(32, dtype="float32").reshape(4, 8)
    args = [x, np.float32(0.75)]
    np.testing.assert_array_equal(interpret(parse(HEADER + PRIM_ARGUMENTS), args)[0],
                                  (x + 0.75) * 0.5 + 3 - 1.25)
    check(tmp_path, PRIM_ARGUMENTS, args, levels=(0, 1, 2, 3))  # type: ignore[arg-type]


@pytest.mark.parametrize(("old", "new", "message"), [
    ("T.float32(0.5)", "T.int32(1)",
     '30:43: error: R.call_tir: argument 1 of scale (s): expected R.Prim("float32"), got '
     'R.Prim("int32")'),
    ("(a, h, R.prim_value(T.int64(3)))", "(a, h, x)",
     "30:17: error: R.call_tir: scale takes 2 tensors and 2 scalars, got 2 inputs, 1 R.Prim "
     "arguments and 1 outputs"),
])
def test_a_prim_argument_that_does_not_fit_is_refused(tmp_path: Path, old: str, new: str,
                                                      message: str) -> None:
    path = tmp_path / "bad.tir"
    path.write_text(HEADER + PRIM_ARGUMENTS.replace(old, new))
    with pytest.raises(CompileError) as err:
        compile_sample(path, tmp_path / "bad.so")
    assert err.value.diagnostics[0].header() == f"{path}:{message}"


PRIM_OPERANDS = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Prim("float32"), z: R.Tensor((), "float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.divide(a, R.prim_value(T.float32(2)))
            c = R.subtract(y, b)
            d = R.multiply(c, c)
            e = R.add(z, y)
            f = R.less(y, d)
            R.output(d, e, f)
        return (d, e, f)
"""


def test_prim_operands_of_binary_operators_broadcast(tmp_path: Path) -> None:
    """TVM's `R.add(x, y)` with `y: R.Prim("float32")`: the scalar broadcasts as a tensor of
    shape (1,), so a 0-d tensor plus a scalar has shape (1,), as TVM infers."""
    x = np.arange(32, dtype="float32").reshape(4, 8)
    y, z = np.float32(0.75), np.asarray(1.5, "float32")
    d = (y - (x + y) / np.float32(2)) ** 2
    want = interpret(parse(HEADER + PRIM_OPERANDS), [x, y, z])  # type: ignore[list-item]
    np.testing.assert_array_equal(want[0], d)
    np.testing.assert_array_equal(want[1], np.array([2.25], "float32"))
    np.testing.assert_array_equal(want[2], y < d)
    check(tmp_path, PRIM_OPERANDS, [x, y, z], levels=(0, 1, 2, 3))  # type: ignore[list-item]


@pytest.mark.parametrize(("call", "message"), [
    ("R.add(x, R.prim_value(T.int32(1)))", "R.add: dtype mismatch: float32 and int32"),
    ("R.add(y, y)", "R.add: both operands are R.Prim scalars, whose result is an R.Prim "
                    "(TVM's), not a tensor: not supported yet; make one operand a tensor"),
])
def test_prim_operands_that_do_not_fit_are_refused(tmp_path: Path, call: str,
                                                   message: str) -> None:
    path = tmp_path / "prim.tir"
    path.write_text(HEADER + '@R.function\ndef main(x: R.Tensor((4,), "float32"), '
                    f'y: R.Prim("float32")):\n    a = {call}\n    return a\n')
    with pytest.raises(CompileError) as err:
        compile_sample(path, tmp_path / "prim.so")
    assert err.value.diagnostics[0].header() == f"{path}:7:9: error: {message}"
