"""The tensor-parallel MLP (samples/distributed/mlp_tp.tir) on one process and on two.

    python benchmarks/distributed.py [--sizes 1,64,1024] [--repeat 20]

For each batch size n it runs, through the installed MPI (`tirc[mpi]`):
- `1 rank x 2 threads`: the program compiled for one device (`--mesh 1`, no collective),
  OpenMP with 2 threads;
- `2 ranks x 1 thread`: the program compiled for two devices (`--mesh 2`), one thread each,
  each rank computing half the hidden layer, one all-reduce of the (n, 256) output;
and NumPy (its BLAS with the machine's threads) as the reference. Times are medians of the
calls; a two-rank call is timed on every rank after a barrier and counted as its slowest
rank. Bytes: what each rank handed to MPI in one call (the shim's counter), what
--report-collectives predicts a bandwidth-optimal algorithm sends per rank, and the analytic
minimum for these placements (x replicated, w1 split by columns, w2 by rows, y replicated:
the partial sums of y must be all-reduced, and an all-reduce of N bytes over p ranks sends
at least 2 (p - 1) / p * N bytes per rank). The goal is equal.

What a 2-core machine can show: that the split compiles and runs on real MPI processes, the
fixed cost of a collective over shared memory, and whether two processes of one thread keep
up with one process of two threads. What it cannot: scaling past two cores, a network
(everything is shared memory), NCCL on GPUs, and quiet timings while other work runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "distributed" / "mlp_tp.tir"
D_MODEL, D_HIDDEN = 256, 1024


def inputs(n: int) -> list[np.ndarray]:
    """Seeded global inputs for batch size `n`."""
    rng = np.random.default_rng(0)
    return [rng.standard_normal((n, D_MODEL)).astype("float32"),
            (rng.standard_normal((D_MODEL, D_HIDDEN)) * 0.0625).astype("float32"),
            (rng.standard_normal(D_HIDDEN) * 0.1).astype("float32"),
            (rng.standard_normal((D_HIDDEN, D_MODEL)) * 0.03125).astype("float32"),
            (rng.standard_normal(D_MODEL) * 0.1).astype("float32")]


def _erf(v: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (error below 1.5e-7): NumPy has no erf of its own."""
    s = np.sign(v)
    a = np.abs(v)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(v.dtype)


def numpy_mlp(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray,
              b2: np.ndarray) -> np.ndarray:
    """The MLP in NumPy (float32, erf by a rational approximation)."""
    h = x @ w1 + b1
    return (0.5 * h * (1.0 + _erf(h * np.float32(0.7071067811865476)))) @ w2 + b2


def median_time(fn: object, repeat: int) -> float:
    """The median seconds of `repeat` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def worker(lib_path: str, sizes: list[int], repeat: int) -> None:
    """One rank: time every size; rank 0 prints one JSON line per size."""
    import tirc.runtime.distributed as dist

    lib = dist.load(lib_path)
    fn = lib["main"]
    shim = lib.shim
    world = np.zeros(1, np.int64)
    for n in sizes:
        args = inputs(n)
        local = [fn.scatter(a, dist.placement_items(pl))
                 for a, pl in zip(args, fn.view["params"])]
        call = fn.prepare(tuple(local), {})
        for _ in range(3):
            fn.call_prepared(call)
        times = []
        for _ in range(repeat):
            fn.ccl("tirc_ccl_all_reduce", world, np.empty_like(world), (shim.size,), 0, 0)
            start = time.perf_counter()
            fn.call_prepared(call)
            elapsed = np.array([time.perf_counter() - start])
            slowest = fn.ccl("tirc_ccl_all_reduce", elapsed, np.empty_like(elapsed),
                             (shim.size,), 0, 2)
            times.append(float(slowest[0]))
        shim.reset_counters()
        fn.call_prepared(call)
        sent, calls = shim.bytes_sent(), shim.calls()
        out = call.arrays[-1]
        want = numpy_mlp(*args)
        error = float(np.abs(out - want).max() / max(1e-30, float(np.abs(want).max())))
        if shim.rank == 0:
            print(json.dumps({"n": n, "seconds": statistics.median(times), "bytes": sent,
                              "collectives": calls, "error": error}), flush=True)


def compile_lib(mesh: int, out: Path) -> None:
    """Compile the sample for a mesh of `mesh` devices."""
    subprocess.run([sys.executable, "-m", "tirc.cli.main", str(SAMPLE), "--mesh", str(mesh),
                    "-O2", "-o", str(out)], check=True)


def report_traffic(mesh: int) -> str:
    """The --report-collectives line of the sample on `mesh` devices."""
    proc = subprocess.run([sys.executable, "-m", "tirc.cli.main", str(SAMPLE), "--mesh",
                           str(mesh), "--report-collectives", "--emit", "tir", "-o", os.devnull],
                          capture_output=True, text=True, check=True)
    lines = [ln.strip() for ln in proc.stderr.splitlines() if "bytes sent" in ln]
    return lines[0] if lines else "no collectives"


def run_ranks(lib: Path, ranks: int, threads: int, sizes: list[int], repeat: int,
              timeout: int) -> dict[int, dict[str, float]]:
    """Time every size with `ranks` processes of `threads` threads each."""
    from tirc.runtime.launch import mpiexec_command

    cmd = ["timeout", "-k", "10", str(timeout), *mpiexec_command(ranks, [
        sys.executable, __file__, "--worker", str(lib), "--sizes", ",".join(map(str, sizes)),
        "--repeat", str(repeat)])]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout + 30)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return {r["n"]: r for r in rows}


def main() -> None:
    """Compile, run both configurations, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,64,1024")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--worker", metavar="LIB")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        worker(args.worker, sizes, args.repeat)
        return
    from tirc.runtime.ccl_shim import build_mpi_shim

    build_mpi_shim()
    with tempfile.TemporaryDirectory(prefix="tirc-bench-dist-") as tmp:
        one, two = Path(tmp) / "mlp_tp_1.so", Path(tmp) / "mlp_tp_2.so"
        compile_lib(1, one)
        compile_lib(2, two)
        single = run_ranks(one, 1, 2, sizes, args.repeat, args.timeout)
        split = run_ranks(two, 2, 1, sizes, args.repeat, args.timeout)
    print(f"tensor-parallel MLP ({D_MODEL} -> {D_HIDDEN} -> {D_MODEL}, float32), medians of "
          f"{args.repeat} calls; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'n':>6} {'numpy':>10} {'1 rank x 2 thr':>15} {'2 ranks x 1 thr':>16} "
          f"{'2r/1r':>7} {'vs numpy':>9} {'bytes/rank':>11} {'minimum':>9} {'max rel err':>12}")
    for n in sizes:
        data = inputs(n)
        t_np = median_time(lambda: numpy_mlp(*data), args.repeat)  # noqa: B023
        a, b = single[n], split[n]
        minimum = 2 * (2 - 1) * (n * D_MODEL * 4) // 2
        print(f"{n:>6} {t_np * 1e3:>8.3f}ms {a['seconds'] * 1e3:>13.3f}ms "
              f"{b['seconds'] * 1e3:>14.3f}ms {b['seconds'] / a['seconds']:>7.2f} "
              f"{b['seconds'] / t_np:>9.2f} {b['bytes']:>11} {minimum:>9} "
              f"{max(a['error'], b['error']):>12.2e}")
    print(f"--report-collectives (2 devices): {report_traffic(2)}")
    print("bytes/rank: what each rank handed to MPI per call (one all-reduce of the partial "
          "output); minimum: 2 (p - 1) / p * N for an all-reduce of N = n * 256 * 4 bytes "
          "over p = 2 ranks")


if __name__ == "__main__":
    main()
