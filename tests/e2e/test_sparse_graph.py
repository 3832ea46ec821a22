"""Graph level: `R.SparseTensor` parameters and `R.sparse.matmul`. The graph interpreter, the
interpreter after legalize-ops (sparse form) and after lower-sparse-iterations, the compiled
library at -O0 and -O3 (called with a SciPy matrix) and a dense NumPy reference agree; bad
programs and bad calls get clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.interpreter.values import InterpreterError
from tirc.passes.manager import run_pipeline
from tirc.passes.pipeline import build_pipeline
from tirc.runtime import TircError

from tests.sparse_support import SPARSE_SAMPLES, SPMM, compile_library, matrices, power_law

MATRICES = matrices()
STAGES = ("", "normalize,legalize-ops", "normalize,legalize-ops,lower-sparse-iterations")

SPMV_BSR = '''
@R.function
def main(a: R.SparseTensor(("m", "n"), "float32", nnz="nnzb", format="bsr", block=(4, 2)),
         b: R.Tensor(("n", "k"), "float32"), v: R.Tensor(("n",), "float32")
         ) -> R.Tuple(R.Tensor(("m", "k"), "float32"), R.Tensor(("m",), "float32")):
    m = T.int64()
    k = T.int64()
    with R.dataflow():
        c = R.sparse.matmul(a, b)
        y = R.sparse.matmul(a, v)
        R.output(c, y)
    return (c, y)
'''

# The user's SparseTIR kernel called with a sparse tensor: its indptr/indices come with it.
CALL_TIR = SPMM + '''
@R.function
def main(a: R.SparseTensor(("m", "n"), "float32", nnz="nnz"),
         b: R.Tensor(("n", 8), "float32")) -> R.Tensor(("m", 8), "float32"):
    m = T.int64()
    n = T.int64()
    nnz = T.int64()
    with R.dataflow():
        c = R.call_tir(spmm, (a, b), out_sinfo=R.Tensor((m, 8), "float32"),
                       tir_vars=R.shape([m, n, 8, nnz]))
        R.output(c)
    return c
'''


def _interpreted(mod, stage: str, *args):
    if stage:
        mod = run_pipeline(mod, build_pipeline(stage.split(",")))
    return Interpreter(mod).call(next(iter(mod.graph_funcs())), *args)


def _gcn_args(a: sp.csr_matrix) -> tuple:
    rng = np.random.default_rng(5)
    n = a.shape[0]
    x = rng.uniform(-1, 1, (n, 32)).astype(np.float32)
    w = rng.uniform(-1, 1, (32, 16)).astype(np.float32)
    b = rng.uniform(-1, 1, 16).astype(np.float32)
    return a, x, w, b


def _gcn_reference(a: sp.csr_matrix, x, w, b) -> np.ndarray:
    return np.maximum((a.toarray().astype(np.float64) @ x) @ w + b, 0)


@pytest.fixture(scope="module")
def gcn_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("gcn")
    return {opt: compile_library(SPARSE_SAMPLES / "gcn_layer.tir", out / f"gcn{opt}.so", opt)
            for opt in ("-O0", "-O3")}


@pytest.mark.parametrize("name", ["karate", "les_miserables", "poisson_fem", "power_law"])
def test_gcn_layer_interpreters_library_and_numpy_agree(gcn_libs: dict, name: str) -> None:
    args = _gcn_args(MATRICES[name])
    want = _gcn_reference(*args)
    mod = parse_file(SPARSE_SAMPLES / "gcn_layer.tir")
    for stage in STAGES:
        np.testing.assert_allclose(_interpreted(mod, stage, *args), want, rtol=1e-4,
                                   atol=1e-4, err_msg=stage or "graph interpreter")
    for opt, lib in gcn_libs.items():
        np.testing.assert_allclose(lib.gcn_layer(*args), want, rtol=1e-4, atol=1e-4,
                                   err_msg=opt)


def test_gcn_layer_on_a_larger_power_law_graph(gcn_libs: dict) -> None:
    args = _gcn_args(power_law(2000, 3, seed=11))
    np.testing.assert_allclose(gcn_libs["-O3"].gcn_layer(*args), _gcn_reference(*args),
                               rtol=1e-4, atol=1e-4)


def test_bsr_matrix_and_vector_products(tmp_path: Path) -> None:
    a = sp.random(24, 18, density=0.3, format="csr", dtype=np.float32, random_state=2)
    a = a.tobsr((4, 2))
    a.sort_indices()
    a = sp.bsr_matrix((a.data, a.indices.astype(np.int32), a.indptr.astype(np.int32)),
                      shape=a.shape)
    rng = np.random.default_rng(3)
    b = rng.uniform(-1, 1, (18, 5)).astype(np.float32)
    v = rng.uniform(-1, 1, 18).astype(np.float32)
    dense = a.toarray().astype(np.float64)
    mod = parse(SPMV_BSR)
    for stage in STAGES:
        c, y = _interpreted(mod, stage, a, b, v)
        np.testing.assert_allclose(c, dense @ b, rtol=1e-5, atol=1e-5, err_msg=stage)
        np.testing.assert_allclose(y, dense @ v, rtol=1e-5, atol=1e-5, err_msg=stage)
    src = tmp_path / "bsr.tir"
    src.write_text(SPMV_BSR)
    c, y = compile_library(src, tmp_path / "bsr.so").main(a, b, v)
    np.testing.assert_allclose(c, dense @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, dense @ v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["empty_rows", "no_nonzeros"])
def test_call_tir_passes_a_sparse_tensor_to_a_sparse_kernel(tmp_path: Path, name: str) -> None:
    a = MATRICES[name]
    b = np.random.default_rng(4).uniform(-1, 1, (a.shape[1], 8)).astype(np.float32)
    want = a.toarray().astype(np.float64) @ b
    mod = parse(CALL_TIR)
    for stage in ("", "lower-sparse-iterations"):
        np.testing.assert_allclose(_interpreted(mod, stage, a, b), want, atol=1e-5)
    src = tmp_path / "call.tir"
    src.write_text(CALL_TIR)
    lib = compile_library(src, tmp_path / "call.so", "-O0")
    np.testing.assert_allclose(lib.main(a, b), want, atol=1e-5)


def test_printed_module_parses_back_at_every_stage() -> None:
    mod = parse(SPMV_BSR)
    for stage in ("", "normalize,legalize-ops", "lower-sparse-iterations", "dead-code-elim",
                  "memory-plan", "lower-graph"):
        if stage:
            mod = run_pipeline(mod, build_pipeline(stage.split(",")))
        text = mod.script()
        again = parse(text)
        assert structural_equal(mod, again), stage
        assert again.script() == text, stage
    assert 'nnz="nnzb", format="bsr", block=(4, 2))' in parse(SPMV_BSR).script()


def test_the_runtime_checks_the_matrix(gcn_libs: dict) -> None:
    a, x, w, b = _gcn_args(MATRICES["karate"])
    lib = gcn_libs["-O3"]
    wide = {"data": a.data, "indices": a.indices.astype(np.int64), "indptr": a.indptr,
            "shape": a.shape}
    with pytest.raises(ValueError, match="indices has dtype int64, the format wants int32"):
        lib.gcn_layer(wide, x, w, b)
    unsorted = a.copy()
    unsorted.indices[[0, 1]] = unsorted.indices[[1, 0]]
    with pytest.raises(ValueError, match="not strictly increasing"):
        lib.gcn_layer(unsorted, x, w, b)
    with pytest.raises((ValueError, TircError), match="n"):
        lib.gcn_layer(a, x[:-1], w, b)
    with pytest.raises(InterpreterError, match="not strictly increasing"):
        Interpreter(parse_file(SPARSE_SAMPLES / "gcn_layer.tir")).call("gcn_layer", unsorted,
                                                                       x, w, b)


BAD = {
    "dense operand": ("R.sparse.matmul(b, b)", "argument 'a' must be a sparse tensor"),
    "sizes": ("R.sparse.matmul(a, c)", "reduction dimensions differ: (m, n) @ (m, 4)"),
    "dense use": ("R.add(a, a)", "must be a tensor, got R.SparseTensor"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_graph_programs_are_diagnosed(case: str) -> None:
    expr, message = BAD[case]
    text = f'''
@R.function
def main(a: R.SparseTensor(("m", "n"), "float32", nnz="nnz"), b: R.Tensor(("n", 4), "float32"),
         c: R.Tensor(("m", 4), "float32")):
    m = T.int64()
    x = {expr}
    return x
'''
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_pipeline(parse(text), build_pipeline(["normalize"]))


@pytest.mark.parametrize(("annotation", "message"), [
    ('R.SparseTensor(("m", "n"), "float32")', "needs nnz="),
    ('R.SparseTensor(("m",), "float32", nnz="z")', "its shape has 2 dimensions"),
    ('R.SparseTensor(("m", "n"), "float32", nnz="z", format="coo")', "unknown format 'coo'"),
    ('R.SparseTensor(("m", "n"), "float32", nnz="z", format="bsr")', "needs block="),
    ('R.SparseTensor(("m", "n"), "float32", nnz="z", block=(2, 2))', "belongs to format"),
])
def test_bad_sparse_types_are_diagnosed(annotation: str, message: str) -> None:
    text = f"@R.function\ndef main(a: {annotation}):\n    return a\n"
    with pytest.raises(CompileError, match=message):
        parse(text)


def test_call_tir_with_a_sparse_tensor_checks_the_format() -> None:
    text = CALL_TIR.replace('nnz="nnz")', 'nnz="nnz", format="bsr", block=(2, 2))')
    with pytest.raises(CompileError, match="expected a CSR matrix"):
        run_pipeline(parse(text), build_pipeline(["normalize"]))
    wrong = CALL_TIR.replace("tir_vars=R.shape([m, n, 8, nnz])", "tir_vars=R.shape([m, n, 8, m])")
    with pytest.raises(CompileError, match="nnz m of the function, nnz of the argument"):
        run_pipeline(parse(wrong), build_pipeline(["normalize"]))
