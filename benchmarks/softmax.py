"""Row softmax over a (4096, 1024) float32 matrix: tirc with T.exp, with T.fast_exp, and numpy.

Compiles benchmarks/softmax.tir (rows in parallel, vectorized max / exp-and-sum / scale passes)
with `tirc -O3`, checks both functions against numpy, then prints the medians of several runs
(and the fastest run, as the machine is shared) with GB/s of minimal traffic (read A and write B
once: 32 MiB per call) and the ratios of the medians. numpy runs max, subtract, exp, sum and
divide as ufuncs with `out=` buffers (no allocation), on one thread.
The issue's figures on this machine: Apache TVM about 10 GB/s with T.exp and 57 with a fast
exp approximation; numpy 6.4. With TVM's environment (see benchmarks/tune.py --help), the same
run also times TVM's hand schedule of the same softmax (benchmarks/peers_tvm.py: rows in
parallel, stages at the row, rfactor'ed 16-lane reductions) with `te.exp` and `topi.fast_exp`,
and prints tirc's speed-up over it; without that environment those rows say why they are absent.

    .venv/bin/python benchmarks/softmax.py [--runs 15]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/softmax.py   # one thread, as numpy runs
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from peers import tvm_peer

ROOT = Path(__file__).resolve().parent.parent
ROWS, COLS = 4096, 1024
BYTES = 2 * ROWS * COLS * 4

# Benchmarks compile for this machine's CPU (-mcpu=native, every feature it has), as a user
# tuning for one machine would; tirc's default target is the portable x86-64-v3.
HOST_TARGET = "llvm -mcpu=native"


def tirc_command() -> list[str]:
    beside = Path(sys.executable).parent / "tirc"
    return [str(beside)] if beside.exists() else [shutil.which("tirc") or "tirc"]


def timings(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """The median and the fastest of `runs` timed calls, after one warm-up call."""
    fn()  # warm-up: page faults, thread pool start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per measurement")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds, each timing every kernel (TVM's in its own process): the "
                             "medians of the rounds' medians are printed, so that a change in "
                             "the machine's memory bandwidth hits every kernel alike")
    opts = parser.parse_args()

    import tirc.runtime as rt

    with tempfile.TemporaryDirectory() as tmp:
        lib_path = Path(tmp) / "softmax.so"
        subprocess.run([*tirc_command(), str(ROOT / "benchmarks" / "softmax.tir"), "-O3",
                        "--target", HOST_TARGET,
                        "-o", str(lib_path)], check=True)
        lib = rt.load(lib_path)

        x = rt.empty_aligned((ROWS, COLS), np.float32, zero=False)
        x[:] = np.random.default_rng(0).standard_normal((ROWS, COLS), dtype=np.float32) * 4
        y_exp, y_fast, t = (rt.empty_aligned((ROWS, COLS), np.float32) for _ in range(3))
        mx, total = np.empty((ROWS, 1), np.float32), np.empty((ROWS, 1), np.float32)

        def numpy_softmax() -> None:
            np.max(x, axis=1, keepdims=True, out=mx)
            np.subtract(x, mx, out=t)
            np.exp(t, out=t)
            np.sum(t, axis=1, keepdims=True, out=total)
            np.divide(t, total, out=t)

        numpy_softmax()
        lib.softmax_exp(x, y_exp)
        lib.softmax_fast_exp(x, y_fast)
        np.testing.assert_allclose(y_exp, t, rtol=1e-5, atol=1e-12)
        np.testing.assert_allclose(y_fast, t, rtol=1e-5, atol=1e-12)

        kernels: list[tuple[str, Callable[[], object]]] = [
            ("tirc, T.exp", lambda: lib.softmax_exp(x, y_exp)),
            ("tirc, T.fast_exp", lambda: lib.softmax_fast_exp(x, y_fast)),
            ("numpy (ufuncs, out=)", numpy_softmax)]
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in kernels}
        tvm_samples: dict[str, list[float]] = {}
        why_not = ""
        for _ in range(opts.rounds):
            for name, fn in kernels:
                samples[name].append(timings(fn, opts.runs))
            tvm_round, why_not = tvm_peer([str(opts.runs), "softmax", str(ROWS), str(COLS)])
            for kernel, seconds in tvm_round.items():
                tvm_samples.setdefault(kernel, []).append(seconds)
    rows = [(name, (statistics.median(m for m, _ in got), min(b for _, b in got)))
            for name, got in samples.items()]
    tvm = {kernel: statistics.median(got) for kernel, got in tvm_samples.items()
           if len(got) == opts.rounds}

    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    print(f"row softmax {ROWS}x{COLS} float32, median of {opts.rounds} rounds of {opts.runs} runs, "
          f"tirc on {threads} threads (GB/s of {BYTES / 2**20:.0f} MiB: read A, write B)")
    print(f"  {'':22s} {'median':>8s}     {'GB/s':>7s}  {'fastest':>8s}     {'GB/s':>7s}")
    for name, (median, best) in rows:
        print(f"  {name:22s} {median * 1e3:8.2f} ms  {BYTES / median / 1e9:7.1f}  "
              f"{best * 1e3:8.2f} ms  {BYTES / best / 1e9:7.1f}")
    for kernel, label in (("exp", "TVM, te.exp"), ("fast_exp", "TVM, topi.fast_exp")):
        if kernel in tvm:
            seconds = tvm[kernel]
            print(f"  {label:22s} {seconds * 1e3:8.2f} ms  {BYTES / seconds / 1e9:7.1f}")
    if why_not:
        print(f"  TVM: absent: {why_not}")
    exact, fast, numpy = (median for _, (median, _) in rows)
    print("  ratios of medians:")
    if tvm:
        print(f"  T.fast_exp / TVM fast_exp speed-up: {tvm['fast_exp'] / fast:.2f}x")
        print(f"  T.exp / TVM exp speed-up:           {tvm['exp'] / exact:.2f}x")
    print(f"  T.fast_exp / T.exp speed-up:  {exact / fast:.2f}x")
    print(f"  T.fast_exp / numpy speed-up:  {numpy / fast:.2f}x")
    print(f"  T.exp / numpy speed-up:       {numpy / exact:.2f}x")


if __name__ == "__main__":
    main()
