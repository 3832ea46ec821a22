"""The sparse samples lower for CUDA (their `target="cuda"` schedules bind rows to blocks and
features or nonzeros to threads; the graph-level sample's kernel is bound by
gpu-default-schedule): the GPU interpreter runs the lowered module and agrees with SciPy, and
the PTX passes ptxas for sm_80 and sm_90."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from gpu_support import lower, require_ptxas
from tirc.driver import compile_ptx
from tirc.frontend import parse_file
from tirc.ir.interpreter.gpu import GPUInterpreter

from tests.sparse_support import SPARSE_SAMPLES, matrices

GPU_SAMPLES = ("spmm", "sddmm", "gcn_layer")


@pytest.mark.parametrize("name", ["karate", "empty_rows", "no_nonzeros"])
def test_gpu_lowered_spmm_and_sddmm_agree_with_scipy(name: str) -> None:
    a = matrices()[name]
    m, n = a.shape
    feat = 40  # more than one thread block's worth of features (32 threads)
    rng = np.random.default_rng(0)
    b = rng.random((n, feat), np.float32)
    run = GPUInterpreter(lower(parse_file(SPARSE_SAMPLES / "spmm.tir")))
    c = np.full((m, feat), np.nan, np.float32)
    run.call("spmm", a.data, b, c, a.indptr, a.indices, m, n, feat, a.nnz)
    np.testing.assert_allclose(c, a.toarray() @ b, rtol=1e-5, atol=1e-5)
    x = rng.random((m, feat), np.float32)
    out = np.full(a.nnz, np.nan, np.float32)
    GPUInterpreter(lower(parse_file(SPARSE_SAMPLES / "sddmm.tir"))).call(
        "sddmm", x, b, out, a.indptr, a.indices, m, n, feat, a.nnz)
    rows = np.repeat(np.arange(m), np.diff(a.indptr))
    np.testing.assert_allclose(out, np.einsum("ij,ij->i", x[rows], b[a.indices]), rtol=1e-5,
                               atol=1e-5)


def test_gpu_graph_level_sparse_matmul_agrees_with_numpy() -> None:
    """R.sparse.matmul's kernel, bound by gpu-default-schedule, inside a launch plan."""
    a = matrices()["les_miserables"]
    rng = np.random.default_rng(5)
    n = a.shape[0]
    x, w, b = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((n, 32), (32, 16), (16,)))
    out = np.full((n, 16), np.nan, np.float32)
    mod = lower(parse_file(SPARSE_SAMPLES / "gcn_layer.tir"))
    GPUInterpreter(mod).call("gcn_layer", a.data, a.indptr, a.indices, x, w, b, out, n)
    want = np.maximum((a.toarray().astype(np.float64) @ x) @ w + b, 0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", GPU_SAMPLES)
def test_sparse_ptx_passes_ptxas(name: str, arch: str, tmp_path: Path) -> None:
    exe = require_ptxas()
    result = compile_ptx(parse_file(SPARSE_SAMPLES / f"{name}.tir"), f"cuda -arch={arch}")
    ptx = tmp_path / f"{name}.ptx"
    ptx.write_text(result.ptx)
    done = subprocess.run([exe, f"-arch={arch}", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_searches_nested_iterations_and_attach_lower_for_cuda(tmp_path: Path) -> None:
    """The access kernels of tests/e2e/test_sparse_access.py, bound by the default GPU
    schedule: position searches (lower_bound, upper_bound: inside kernels, their arrays kernel
    parameters), nested iterations and T.attach. The GPU interpreter agrees with the sparse
    form, and the PTX passes ptxas."""
    import scipy.sparse as sp
    from tirc.frontend import parse

    from tests.e2e.test_sparse_access import KERNELS
    from tests.sparse_support import interpret

    mod = parse(KERNELS)
    gpu = GPUInterpreter(lower(mod))
    a = sp.csr_matrix(matrices()["karate"])
    n = a.shape[0]
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    feats = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    ptr, idx = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    cases = {
        "dense_iter": ([a.data, x, np.zeros(n, np.float32), ptr, idx, n, n, a.nnz], 2),
        "scale_fused": ([a.data, np.zeros(a.nnz, np.float32), ptr, idx, n, n, a.nnz], 1),
        "row_softmax": ([a.data, np.zeros(a.nnz, np.float32), ptr, idx, n, n, a.nnz], 1),
        "two_hop": ([feats, np.zeros((n, 3), np.float32), ptr, idx, ptr, idx, n, a.nnz, 3], 1),
    }
    for name, (args, out) in cases.items():
        want = interpret(mod, name, args)[out]
        got = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        gpu.call(name, *got)
        np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-5, err_msg=name)
    exe = require_ptxas()
    ptx = tmp_path / "access.ptx"
    ptx.write_text(compile_ptx(mod, "cuda -arch=sm_90").ptx)
    done = subprocess.run([exe, "-arch=sm_90", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
