"""Shared by the sparse tests: real matrices and graphs without downloads, and the three ways
of running a sparse kernel (sparse-form interpreter, lowered interpreter, compiled library).

Matrices: finite-element matrices from `pyamg`'s gallery, the graphs `networkx` ships (Zachary's
karate club, Les Misérables), seeded synthetic power-law graphs, and edge cases (empty rows,
no nonzeros). Each is CSR with sorted int32 indices and float32 values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pyamg
import scipy.sparse as sp
from tirc.frontend import parse_file
from tirc.ir import IRModule
from tirc.ir.interpreter import run_prim_func
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline

SPARSE_SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "sparse"

# SparseTIR's SDDMM and SpMM, without schedules, for the schedule tests.
SDDMM = '''
@T.prim_func
def sddmm(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle, indices: T.handle,
          m: T.int32, n: T.int32, feat: T.int32, nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.dense_fixed(n)
    K = T.dense_fixed(feat)
    A = T.match_sparse_buffer(a, (I, K), "float32")
    B = T.match_sparse_buffer(b, (J_detach, K), "float32")
    C = T.match_sparse_buffer(c, (I, J), "float32")
    with T.sp_iter([I, J, K], "SSR", "sddmm") as [i, j, k]:
        with T.init():
            C[i, j] = T.float32(0)
        C[i, j] = C[i, j] + A[i, k] * B[j, k]
'''

# A sparse output that accumulates into its own values (no init): C[i, j] += A[i, :] . B[j, :].
SDDMM_ACCUMULATE = SDDMM.replace('''        with T.init():
            C[i, j] = T.float32(0)
''', "")

SPMM = '''
@T.prim_func
def spmm(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle, indices: T.handle,
         m: T.int32, n: T.int32, feat: T.int32, nnz: T.int32):
    I = T.dense_fixed(m)
    J = T.sparse_variable(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.dense_fixed(n)
    K = T.dense_fixed(feat)
    A = T.match_sparse_buffer(a, (I, J), "float32")
    B = T.match_sparse_buffer(b, (J_detach, K), "float32")
    C = T.match_sparse_buffer(c, (I, K), "float32")
    with T.sp_iter([I, J, K], "SRS", "spmm") as [i, j, k]:
        with T.init():
            C[i, k] = T.float32(0)
        C[i, k] = C[i, k] + A[i, j] * B[j, k]
'''



def csr32(a: Any, dtype: str = "float32", seed: int = 0) -> sp.csr_matrix:
    """`a` as CSR with sorted int32 indices and random values of `dtype` at its nonzeros."""
    m = sp.csr_matrix(a, dtype=np.float64)
    m.sum_duplicates()
    m.sort_indices()
    rng = np.random.default_rng(seed)
    data = rng.uniform(-1, 1, m.nnz).astype(dtype)
    return sp.csr_matrix((data, m.indices.astype(np.int32), m.indptr.astype(np.int32)),
                         shape=m.shape)


def power_law(n: int, edges_per_node: int, seed: int) -> sp.csr_matrix:
    """A seeded Barabási–Albert graph: a few hubs, many low-degree nodes."""
    g = nx.barabasi_albert_graph(n, edges_per_node, seed=seed)
    return csr32(nx.to_scipy_sparse_array(g, format="csr"), seed=seed)


def with_empty_rows(n: int, seed: int) -> sp.csr_matrix:
    """A random rectangular matrix where every third row is empty."""
    rng = np.random.default_rng(seed)
    dense = (rng.random((n, n + 3)) < 0.2).astype(np.float64)
    dense[::3] = 0
    return csr32(dense, seed=seed)


def matrices() -> dict[str, sp.csr_matrix]:
    """Small real and synthetic matrices, small enough for the interpreter."""
    return {
        "karate": csr32(nx.to_scipy_sparse_array(nx.karate_club_graph(), format="csr")),
        "les_miserables": csr32(nx.to_scipy_sparse_array(nx.les_miserables_graph(),
                                                         format="csr")),
        "poisson_fem": csr32(pyamg.gallery.poisson((7, 7), format="csr")),
        "elasticity_fem": csr32(pyamg.gallery.linear_elasticity((4, 4))[0]),
        "power_law": power_law(60, 2, seed=3),
        "empty_rows": with_empty_rows(20, seed=4),
        "no_nonzeros": csr32(sp.csr_matrix((9, 7))),
    }


def load_sample(name: str) -> IRModule:
    return parse_file(SPARSE_SAMPLES / f"{name}.tir")


def lowered(mod: IRModule, passes: str = "apply-schedules,lower-sparse-iterations"
            ) -> IRModule:
    """The module after the given passes for the CPU (the interpreter runs any stage)."""
    ctx = PassContext(target=parse_target("llvm"))
    return run_pipeline(mod, build_pipeline(passes.split(",")), ctx)


def scheduled(mod: IRModule, opt_level: int = 3, upto: str = "lower-blocks") -> IRModule:
    """The module through the default CPU pipeline up to pass `upto` (its parallel loops
    already chosen, so the interpreter checks them for data races)."""
    target = parse_target("llvm")
    steps = default_pipeline(target, opt_level)
    names = [step.split("{")[0] for step in steps]
    ctx = PassContext(target=target, opt_level=opt_level)
    return run_pipeline(mod, build_pipeline(steps[:names.index(upto) + 1]), ctx)


def interpret(mod: IRModule, name: str, args: list[Any]) -> list[Any]:
    """Run loop function `name` on copies of `args`; the arrays after the run."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_prim_func(mod.functions[name], copies)
    return copies


def compile_library(path: Path, out: Path, opt: str = "-O3") -> Any:
    """Compile a `.tir` file with the tirc command and load it."""
    import tirc.runtime
    from click.testing import CliRunner
    from tirc.cli.main import cli

    result = CliRunner().invoke(cli, [str(path), "-o", str(out), opt])
    assert result.exit_code == 0, result.output
    return tirc.runtime.load(out)
