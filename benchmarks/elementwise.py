"""Fused elementwise chain vs numpy: y = relu(x * w + b) * 0.5 + x over 16M float32.

Compiles benchmarks/elementwise.tir (one prim_func, parallel + vectorized) with `tirc -O3`,
then times, as medians of several runs: the tirc function, the same chain as numpy ufuncs with
`out=` (five passes over memory), and a plain copy (`np.copyto`) for the machine's bandwidth.
Prints GB/s of minimal traffic (chain: read x, w, b and write y = 16 bytes per element; copy:
8 bytes per element) and the ratios. Also reports the whole-process compile time of
`tirc samples/matmul.tir -o matmul.so`. With TVM's environment (see benchmarks/tune.py --help)
the same run times TVM's hand schedule of the chain (benchmarks/peers_tvm.py: one parallel,
vectorized loop) and prints tirc's speed-up over it.

    .venv/bin/python benchmarks/elementwise.py [--runs 15]
"""

from __future__ import annotations

import argparse
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
N = 16 * 1024 * 1024

# Benchmarks compile for this machine's CPU (-mcpu=native, every feature it has), as a user
# tuning for one machine would; tirc's default target is the portable x86-64-v3.
HOST_TARGET = "llvm -mcpu=native"


def tirc_command() -> list[str]:
    beside = Path(sys.executable).parent / "tirc"
    return [str(beside)] if beside.exists() else [shutil.which("tirc") or "tirc"]


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up: page faults, thread pool start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compile_seconds(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True)
    return time.perf_counter() - start


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
        lib_path = Path(tmp) / "elementwise.so"
        subprocess.run([*tirc_command(), str(ROOT / "benchmarks" / "elementwise.tir"), "-O3",
                        "--target", HOST_TARGET, "-o", str(lib_path)], check=True)
        matmul = [compile_seconds([*tirc_command(), str(ROOT / "samples" / "matmul.tir"), "-o",
                                   str(Path(tmp) / "matmul.so")], ROOT) for _ in range(3)]
        lib = rt.load(lib_path)

        rng = np.random.default_rng(0)
        x, w, b = (rt.empty_aligned((N,), np.float32, zero=False) for _ in range(3))
        x[:], w[:], b[:] = (rng.standard_normal(N, dtype=np.float32) for _ in range(3))
        y, t, dst = (rt.empty_aligned((N,), np.float32) for _ in range(3))

        def numpy_chain() -> None:
            np.multiply(x, w, out=t)
            np.add(t, b, out=t)
            np.maximum(t, 0, out=t)
            np.multiply(t, np.float32(0.5), out=t)
            np.add(t, x, out=t)

        kernels: dict[str, Callable[[], object]] = {
            "fused": lambda: lib.fused_chain(x, w, b, y), "numpy": numpy_chain,
            "copy": lambda: np.copyto(dst, x)}
        samples: dict[str, list[float]] = {name: [] for name in kernels}
        tvm_samples: list[float] = []
        why_not = ""
        for _ in range(opts.rounds):
            for name, fn in kernels.items():
                samples[name].append(median_seconds(fn, opts.runs))
            tvm_round, why_not = tvm_peer([str(opts.runs), "elementwise", str(N)])
            tvm_samples += tvm_round.values()
        np.testing.assert_allclose(y, t, rtol=1e-6, atol=1e-6)
    fused, numpy, copy = (statistics.median(samples[name]) for name in ("fused", "numpy", "copy"))
    tvm = {"fused_chain": statistics.median(tvm_samples)} if len(tvm_samples) == opts.rounds \
        else {}

    gb = 1e9
    chain_bytes, copy_bytes = 16 * N, 8 * N
    rows = [("tirc fused chain", fused, chain_bytes), ("numpy ufuncs (out=)", numpy, chain_bytes),
            ("np.copyto", copy, copy_bytes)]
    if tvm:
        rows.insert(1, ("TVM hand schedule", tvm["fused_chain"], chain_bytes))
    print(f"relu(x * w + b) * 0.5 + x over {N} float32, median of {opts.rounds} rounds' medians "
          f"of {opts.runs} runs")
    for name, secs, nbytes in rows:
        print(f"  {name:22s} {secs * 1e3:8.2f} ms  {nbytes / secs / gb:7.1f} GB/s")
    if why_not:
        print(f"  TVM: absent: {why_not}")
    fused_bw, copy_bw = chain_bytes / fused, copy_bytes / copy
    print(f"  fused / copy bandwidth:  {fused_bw / copy_bw:.2f}x  (goal >= 0.9x)")
    if tvm:
        print(f"  fused / TVM speed-up:    {tvm['fused_chain'] / fused:.2f}x")
    print(f"  fused / numpy speed-up:  {numpy / fused:.2f}x")
    print(f"whole-process compile time of `tirc samples/matmul.tir -o matmul.so`: "
          f"median {statistics.median(matmul):.2f} s (goal <= 0.5 s)")


if __name__ == "__main__":
    main()
