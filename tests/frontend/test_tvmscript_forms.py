"""TVMScript as TVM writes it (issue 14): programs in TVM's style (tests/frontend/tvmscript/)
in both spellings parse, print back stably in either spelling to the same IR, run in the
interpreter and compile for the CPU, each against numpy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tirc.cli.compile_cmd import CompileOptions, compile_file
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter, run_prim_func
from tirc.ir.printer import print_module
from tirc.runtime import load

HERE = Path(__file__).resolve().parent / "tvmscript"
PROGRAMS = sorted(HERE.glob("*.tir"))
RNG = np.random.default_rng(14)


def _relu_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(a @ b, 0)


def _lowered(a: np.ndarray, n: int) -> np.ndarray:
    x = a.ravel() * np.float32(2)
    return np.where(np.arange(64) < n, np.abs(x - 1), x).astype("float32")


def _bits(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(1, 9, dtype="int32")
    b = ((a << 2) | k) ^ ((a >> 1) & ~k)
    product = (a.astype(np.int64) << 1) * (1 << 30) + (1 << 30)
    clz = np.array([32 - int(v).bit_length() for v in k], dtype="int32")
    return b, ((product >> 31).astype("int32") + clz)


# name -> (function, arguments maker, expected outputs by argument position)
CASES: dict[str, tuple[str, Callable[[], list], Callable[[list], dict[int, np.ndarray]]]] = {
    "matmul_relu_tirx": (
        "matmul_relu",
        lambda: [RNG.uniform(-1, 1, (16, 32)).astype("float32"),
                 RNG.uniform(-1, 1, (32, 8)).astype("float32"), np.zeros((16, 8), "float32")],
        lambda a: {2: _relu_matmul(a[0], a[1])}),
    "lowered_tirx": (
        "lowered",
        lambda: [RNG.uniform(-1, 1, (4, 16)).astype("float32"), np.zeros(64, "float32"), 40],
        lambda a: {1: _lowered(a[0], a[2])}),
    "bits_classic": (
        "bits",
        lambda: [RNG.integers(-1000, 1000, 8).astype("int32"), np.zeros(8, "int32"),
                 np.zeros(8, "int32")],
        lambda a: dict(zip((1, 2), _bits(a[0])))),
    "static_forms": (
        "forms",
        lambda: [RNG.uniform(-1, 1, (5, 8)).astype("float32"), np.zeros((5, 8), "float32"), 5],
        lambda a: {1: np.exp(a[0]) * np.float32(0.5) + 1}),
}


def _text(path: Path) -> str:
    return path.read_text()


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_prints_back_stably_in_both_spellings(path: Path) -> None:
    mod = parse_file(path)
    for syntax in ("classic", "tirx"):
        text = print_module(mod, syntax=syntax)
        again = parse(text, f"{path.stem}.{syntax}.tir")
        assert again.syntax == syntax
        assert structural_equal(again, mod)
        assert print_module(again) == text


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_module_remembers_its_spelling(path: Path) -> None:
    mod = parse_file(path)
    written = "tirx" if "import tirx as T" in path.read_text() else "classic"
    assert mod.syntax == written
    text = print_module(mod)
    assert ("T.sblock(" in text or "T.block(" not in text) if written == "tirx" else \
        "T.sblock" not in text


def test_tirx_spelling_marks_block_functions_and_keeps_the_flag() -> None:
    mod = parse_file(HERE / "matmul_relu_tirx.tir")
    tirx = print_module(mod, syntax="tirx")
    assert "# from tvm.script import tirx as T" in tirx
    assert "@T.prim_func(s_tir=True)" in tirx and "T.sblock_alloc_buffer((16, 8)" in tirx
    assert 'T.sblock_attr({"schedule_rule": "None"})' in tirx
    classic = print_module(mod, syntax="classic")
    assert "# from tvm.script import tir as T" in classic and "s_tir" not in classic
    assert 'with T.block("Y"):' in classic and "T.alloc_buffer((16, 8)" in classic
    private = parse_file(HERE / "lowered_tirx.tir")
    assert "@T.prim_func(private=True)" in print_module(private)
    assert private["lowered"].private


def test_tirx_spelling_names_call_results_out_ty() -> None:
    """TVM 0.27's parser takes `out_ty=` and refuses `out_sinfo=`; the classic spelling keeps
    `out_sinfo=`, and both read back to the same module."""
    mod = parse('''
@I.ir_module
class Module:
    @T.prim_func
    def neg(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            b[i] = -a[i]

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.call_tir(Module.neg, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
''', "m.tir")
    tirx = print_module(mod, syntax="tirx")
    assert 'out_ty=R.Tensor((4,), dtype="float32")' in tirx and "out_sinfo" not in tirx
    classic = print_module(mod, syntax="classic")
    assert 'out_sinfo=R.Tensor((4,), dtype="float32")' in classic and "out_ty" not in classic
    assert structural_equal(parse(tirx, "a.tir"), parse(classic, "b.tir"))


def test_lowered_forms_print_as_tvm_writes_them() -> None:
    text = print_module(parse_file(HERE / "lowered_tirx.tir"))
    assert "T.device_entry()" in text
    assert "T.fabs(x - T.float32(1.0))" in text
    bits = print_module(parse_file(HERE / "bits_classic.tir"))
    assert "(A[i] << 2 | K_1[i]) ^ A[i] >> 1 & ~K_1[i]" in bits
    assert "T.q_multiply_shift(A[i], 1 << 30, 31, 1) + T.clz(K_1[i])" in bits


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreter_matches_numpy(name: str) -> None:
    func_name, make, expected = CASES[name]
    func = parse_file(HERE / f"{name}.tir")[func_name]
    args = make()
    run_prim_func(func, args)
    for i, want in expected(args).items():
        np.testing.assert_allclose(args[i], want, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("tvmscript")
    libs = {}
    for path in PROGRAMS:
        so = out / f"{path.stem}.so"
        compile_file(CompileOptions(file=str(path), output=str(so)))
        libs[path.stem] = load(so)
    return libs


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_matches_numpy(name: str, libraries: dict[str, object]) -> None:
    func_name, make, expected = CASES[name]
    args = make()
    getattr(libraries[name], func_name)(*args)
    for i, want in expected(args).items():
        np.testing.assert_allclose(args[i], want, rtol=1e-5, atol=1e-5)


def test_graph_calls_interpreted_and_compiled(libraries: dict[str, object]) -> None:
    mod = parse_file(HERE / "graph_calls.tir")
    x = RNG.uniform(-1, 1, 8).astype("float32")
    z = np.zeros(4, "float32")
    s = x[:4] + x[4:]
    want = (s + x[4:]) ** 2
    np.testing.assert_allclose(Interpreter(mod).call("main", x, z), want, rtol=1e-5)
    np.testing.assert_allclose(libraries["graph_calls"].main(x, z), want, rtol=1e-5)


SIZES_CALL = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def sum_1d(X_handle: T.handle, Y: T.Buffer((T.int64(1),), "float32"), n: T.int64):
        X = T.match_buffer(X_handle, (n,), "float32")
        for i in range(n):
            with T.block("sum"):
                vi = T.axis.remap("R", [i])
                with T.init():
                    Y[0] = T.float32(0)
                Y[0] = Y[0] + X[vi]

    @R.function
    def main(x: R.Tensor((64,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        cls = Module
        gv = R.call_tir(cls.sum_1d, (x,), out_sinfo=R.Tensor((1,), dtype="float32"),
                        tir_vars=R.shape([64]))
        return gv
"""


def test_tirx_prints_tir_vars_as_leading_prim_values_as_tvm_0_27_reads_them() -> None:
    """TVM 0.27's R.call_tir has no tir_vars: its args fill the leading parameters, outputs
    after. The tirx spelling moves the sizes into the argument tuple and the size parameters
    before the outputs; it reads back with the same result (the classic spelling is kept)."""
    mod = parse(SIZES_CALL)
    text = print_module(mod, syntax="tirx")
    assert "def sum_1d(X_handle: T.handle, n: T.int64, Y: T.Buffer(" in text
    assert "R.call_tir(Module.sum_1d, (x, R.prim_value(64)), out_ty=" in text
    assert "tir_vars" not in text
    assert "tir_vars=R.shape([64])" in print_module(mod, syntax="classic")
    again = parse(text)
    assert print_module(again, syntax="tirx") == text
    x = np.arange(64, dtype=np.float32)
    for m in (mod, again):
        np.testing.assert_allclose(Interpreter(m).call("main", x), [x.sum()])
    # a public function keeps its signature (its entry's ABI): TVM cannot read that call
    public = parse(SIZES_CALL.replace("@T.prim_func(private=True)", "@T.prim_func"))
    assert "tir_vars=R.shape([64])" in print_module(public, syntax="tirx")


@pytest.mark.parametrize("deco,attr", [("@T.prim_func(private=True)", "T.func_attr"),
                                       ("@R.function(private=True)", "R.func_attr")])
def test_private_function_with_a_global_symbol_is_an_error(deco: str, attr: str) -> None:
    """As TVM's parser: a private function may not name a global symbol."""
    body = "A[0] = T.float32(1)" if deco.startswith("@T") else "return A"
    param = 'A: T.Buffer((4,), "float32")' if deco.startswith("@T") else \
        'A: R.Tensor((4,), "float32")'
    src = f'{deco}\ndef f({param}):\n    {attr}({{"global_symbol": "g"}})\n    {body}\n'
    with pytest.raises(CompileError) as err:
        parse(src, "p.tir")
    d = err.value.diagnostics[0]
    assert "private function 'f' has the global symbol 'g'" in d.message
    assert (d.span.line, d.span.col) == (3, 5)


def test_bare_integer_argument_of_a_call_in_a_fused_function(tmp_path: Path) -> None:
    """TVM 0.27 prints an int64 primitive argument bare, `R.call_tir(cls.f, (x, 64), ...)`
    (what the tirx spelling of `tir_vars` reads back as): it is `R.prim_value(T.int64(64))`,
    and inside a fused ("Primitive") function fuse-tir binds it to the callee's scalar
    parameter (it failed with a KeyError)."""
    src = SIZES_CALL.replace("class Module:", """class Module:
    @R.function(private=True)
    def fused(x: R.Tensor((64,), dtype="float32")) -> R.Tensor((1,), dtype="float32"):
        R.func_attr({"Primitive": 1})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.sum_1d, (x, 64), out_ty=R.Tensor((1,), dtype="float32"))
            R.output(gv)
        return gv
""").replace("gv = R.call_tir(cls.sum_1d, (x,), out_sinfo=R.Tensor((1,), dtype=\"float32\"),\n"
             "                        tir_vars=R.shape([64]))", "gv = cls.fused(x)")
    assert "gv = cls.fused(x)" in src
    path = tmp_path / "fused.tir"
    path.write_text(print_module(parse(src)))
    x = np.arange(64, dtype=np.float32) / 8
    np.testing.assert_allclose(Interpreter(parse(src)).call("main", x), [x.sum()], rtol=1e-6)
    for level in (0, 3):
        so = tmp_path / f"fused{level}.so"
        compile_file(CompileOptions(file=str(path), output=str(so), opt_level=level))
        np.testing.assert_allclose(load(so).main(x), [x.sum()], rtol=1e-6)
