"""Sparse kernels against SciPy/NumPy: SpMM (CSR), SDDMM and BSR SpMM on power-law graphs.

Graphs are seeded synthetic power-law (Chung-Lu) graphs of Cora's size (2708 nodes, ~10.8k
nonzeros) and ogbn-arxiv's (169k nodes, ~2.37M nonzeros), symmetric, float32. tirc
compiles samples/sparse/{spmm,spmm_hyb,spmm_hyb_c4,sddmm,sddmm_hyb,bsr_spmm}.tir at -O3; each
kernel is checked against SciPy, then timed through a prepared call (arguments checked once,
as a training loop would call it).
Each thread count runs in its own process (OMP_NUM_THREADS); SciPy runs on one thread.
Prints medians (machine shared: the fastest run too) and GFLOP/s, and the ratio tirc/SciPy.

    .venv/bin/python benchmarks/sparse.py [--runs 15] [--threads 1,2] [--small]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = {"cora": (2708, 10_800), "arxiv": (169_343, 2_370_000)}
KERNELS = ("spmm", "spmm_hyb", "spmm_hyb_c4", "sddmm", "sddmm_hyb", "bsr_spmm")


def tirc_command() -> list[str]:
    beside = Path(sys.executable).parent / "tirc"
    return [str(beside)] if beside.exists() else [shutil.which("tirc") or "tirc"]


def power_law_graph(n: int, nnz: int, seed: int = 0):
    """A symmetric Chung-Lu graph with degree weights ~ rank^-0.6 and about `nnz` nonzeros."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    w = (np.arange(1, n + 1, dtype=np.float64)) ** -0.6
    p = w / w.sum()
    edges = int(nnz * 0.55)
    rows, cols = rng.choice(n, edges, p=p), rng.choice(n, edges, p=p)
    keep = rows != cols
    a = sp.coo_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    a = ((a + a.T) > 0).astype(np.float32).tocsr()
    a.sort_indices()
    a.data = rng.uniform(0.1, 1.0, a.nnz).astype(np.float32)
    a.indices = a.indices.astype(np.int32)
    a.indptr = a.indptr.astype(np.int32)
    return a


def timings(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def sddmm_numpy(x: np.ndarray, y: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """SDDMM the NumPy way: gather both operands' rows per nonzero, multiply and sum."""
    return np.einsum("ij,ij->i", x[rows], y[cols])


def measure(lib_dir: Path, runs: int, graphs: list[str]) -> list[dict]:
    """Time tirc and SciPy on every case in this process (its OMP_NUM_THREADS)."""
    import scipy.sparse as sp
    import tirc.runtime as rt

    libs = {k: rt.load(lib_dir / f"{k}.so") for k in KERNELS}
    rows = []
    for gname in graphs:
        n, nnz = GRAPHS[gname]
        a = power_law_graph(n, nnz)
        rng = np.random.default_rng(1)
        for feat in (32, 128):
            b = rng.uniform(-1, 1, (n, feat)).astype(np.float32)
            c = np.zeros((n, feat), np.float32)
            f = libs["spmm"].spmm
            call = f.prepare((a, b, c), {})
            f.call_prepared(call)
            np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
            flops = 2.0 * a.nnz * feat
            rows.append(("spmm", gname, feat, a.nnz, flops,
                         timings(partial(f.call_prepared, call), runs),
                         timings(partial(a.__matmul__, b), runs)))
            # The same SpMM decomposed into ELL buckets (hyb; hyb_c4: 4 column partitions of
            # 10 widths): the plan (conversion) runs in prepare(), once per matrix; its time
            # is printed apart.
            for kernel in ("spmm_hyb", "spmm_hyb_c4"):
                fh = libs[kernel].spmm
                c[:] = 0
                plan_time = timings(partial(fh.prepare, (a, b, c), {}), 3)
                call = fh.prepare((a, b, c), {})
                fh.call_prepared(call)
                np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
                rows.append((kernel, gname, feat, a.nnz, flops,
                             timings(partial(fh.call_prepared, call), runs),
                             timings(partial(a.__matmul__, b), runs)))
                rows.append((f"{kernel}_plan", gname, feat, a.nnz, 0.0, plan_time, plan_time))
            # SDDMM: out[e] = <x[row(e)], y[col(e)]> at the nonzeros.
            x = rng.uniform(-1, 1, (n, feat)).astype(np.float32)
            out = a.copy()
            g = libs["sddmm"].sddmm
            call = g.prepare((x, b, out), {})
            g.call_prepared(call)
            r = np.repeat(np.arange(n), np.diff(a.indptr))
            want = np.einsum("ij,ij->i", x[r], b[a.indices])
            np.testing.assert_allclose(out.data, want, rtol=1e-4, atol=1e-4)
            rows.append(("sddmm", gname, feat, a.nnz, flops,
                         timings(partial(g.call_prepared, call), runs),
                         timings(partial(sddmm_numpy, x, b, r, a.indices), runs)))
            # The same SDDMM over ELL buckets (its plan, in prepare(), printed apart).
            gh = libs["sddmm_hyb"].sddmm
            plan_time = timings(partial(gh.prepare, (x, b, out), {}), 3)
            out.data[:] = np.nan
            call = gh.prepare((x, b, out), {})
            gh.call_prepared(call)
            np.testing.assert_allclose(out.data, want, rtol=1e-4, atol=1e-4)
            rows.append(("sddmm_hyb", gname, feat, a.nnz, flops,
                         timings(partial(gh.call_prepared, call), runs),
                         timings(partial(sddmm_numpy, x, b, r, a.indices), runs)))
            rows.append(("sddmm_hyb_plan", gname, feat, a.nnz, 0.0, plan_time, plan_time))
        if gname == "cora":
            blk = 4
            m = (n + blk - 1) // blk * blk
            padded = sp.csr_matrix(a)
            padded.resize((m, m))
            bsr = sp.bsr_matrix(padded, blocksize=(blk, blk))
            bsr.sort_indices()
            bsr.indices = bsr.indices.astype(np.int32)
            bsr.indptr = bsr.indptr.astype(np.int32)
            feat = 64
            b3 = rng.uniform(-1, 1, (m // blk, blk, feat)).astype(np.float32)
            c3 = np.zeros((m // blk, blk, feat), np.float32)
            h = libs["bsr_spmm"].bsr_spmm
            call = h.prepare((bsr, b3, c3), {})
            h.call_prepared(call)
            b2 = b3.reshape(m, feat)
            np.testing.assert_allclose(c3.reshape(m, feat), bsr @ b2, rtol=1e-4, atol=1e-4)
            flops = 2.0 * bsr.data.size * feat
            rows.append(("bsr_spmm", gname, feat, bsr.data.size, flops,
                         timings(partial(h.call_prepared, call), runs),
                         timings(partial(bsr.__matmul__, b2), runs)))
    return [{"kernel": k, "graph": gname, "feat": ft, "nnz": z, "flops": fl, "tirc": t,
             "ref": s} for k, gname, ft, z, fl, t, s in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--small", action="store_true", help="Cora size only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    graphs = ["cora"] if opts.small else list(GRAPHS)
    if opts.child:
        print(json.dumps(measure(Path(opts.child), opts.runs, graphs)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name in KERNELS:
            subprocess.run([*tirc_command(), str(ROOT / "samples" / "sparse" / f"{name}.tir"),
                            "-O3", "-o", str(Path(tmp) / f"{name}.so")], check=True)
        print(f"{'kernel':14} {'graph':6} {'feat':>4} {'thr':>3} {'nnz':>9} "
              f"{'tirc ms':>9} {'GFLOP/s':>8} {'ref ms':>9} {'GFLOP/s':>8} {'ratio':>6}")
        for threads in opts.threads.split(","):
            env = dict(os.environ, OMP_NUM_THREADS=threads)
            out = subprocess.run([sys.executable, __file__, "--child", tmp, "--runs",
                                  str(opts.runs), *(["--small"] if opts.small else [])],
                                 env=env, check=True, capture_output=True, text=True).stdout
            for r in json.loads(out):
                (tm, _), (sm, _) = r["tirc"], r["ref"]
                if r["kernel"].endswith("_plan"):
                    print(f"{r['kernel']:14} {r['graph']:6} {r['feat']:4} {threads:>3} "
                          f"{r['nnz']:9} {tm * 1e3:9.3f}  (conversion + argument checks, "
                          "once per matrix)")
                    continue
                print(f"{r['kernel']:14} {r['graph']:6} {r['feat']:4} {threads:>3} "
                      f"{r['nnz']:9} {tm * 1e3:9.3f} {r['flops'] / tm / 1e9:8.2f} "
                      f"{sm * 1e3:9.3f} {r['flops'] / sm / 1e9:8.2f} {sm / tm:6.2f}x")
    print("ref: scipy.sparse (SpMM, BSR SpMM) and numpy gather + einsum (SDDMM), one thread")


if __name__ == "__main__":
    main()
