"""sgemm 1024x1024x1024 float32: tirc with a schedule and by the default rules vs numpy, GFLOP/s.

Compiles samples/schedules/sgemm.tir (the kernel and its schedule: B packed into 32-column
panels with cache_read + transform_layout, an 8x32 tile of C accumulated in a local buffer that
compact-buffers shrinks to the tile and LLVM keeps in registers, k unrolled by 4, the tile's
columns vectorized, the tiles run in parallel) with `tirc -O3`, and the same kernel without its
schedule (what the default schedule rules make of it), checks both against numpy, then
prints the medians of several runs of: the two tirc functions, and numpy's `a @ b` in a subprocess
under the environment as it is and with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (which
lets OpenBLAS pick its own kernel, AVX-512 SkylakeX on such CPUs), with the ratios. The three
are timed in alternating rounds, so that a load that comes and goes on a shared machine falls
on all of them; the load average is printed beside the figures.

    .venv/bin/python benchmarks/matmul.py [--runs 11] [--rounds 3]
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
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N = 1024
FLOPS = 2 * N ** 3
SCHEDULED = ROOT / "samples" / "schedules" / "sgemm.tir"

NUMPY_TIMER = """
import sys, time
import numpy as np
n, runs = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)
b = rng.standard_normal((n, n), dtype=np.float32)
c = np.empty((n, n), np.float32)
np.matmul(a, b, out=c)
times = []
for _ in range(runs):
    t = time.perf_counter()
    np.matmul(a, b, out=c)
    times.append(time.perf_counter() - t)
print(" ".join(map(str, times)))
"""

# Benchmarks compile for this machine's CPU (-mcpu=native, every feature it has), as a user
# tuning for one machine would; tirc's default target is the portable x86-64-v3.
HOST_TARGET = "llvm -mcpu=native"


def tirc_command() -> list[str]:
    beside = Path(sys.executable).parent / "tirc"
    return [str(beside)] if beside.exists() else [shutil.which("tirc") or "tirc"]


def pipeline_args() -> list[str]:
    """Nothing when the default pipeline applies schedules; else an explicit one that does."""
    from tirc.ir.target import parse_target
    from tirc.passes.pipeline import default_pipeline

    steps = default_pipeline(parse_target("llvm"), 3)
    if "apply-schedules" in steps:
        return []
    return ["--passes", ",".join(["apply-schedules", *steps])]


def numpy_times(env: dict[str, str], runs: int) -> list[float]:
    """Seconds of each of `runs` timed `a @ b` in a fresh numpy process under `env`."""
    out = subprocess.run([sys.executable, "-c", NUMPY_TIMER, str(N), str(runs)], env=env,
                         capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="timed runs per measurement")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds of tirc and numpy measurements")
    opts = parser.parse_args()
    default_env = dict(os.environ)
    unset_env = {k: v for k, v in os.environ.items()
                 if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}

    import tirc.runtime as rt

    with tempfile.TemporaryDirectory() as tmp:
        kernel_only = Path(tmp) / "sgemm_rules.tir"
        kernel_only.write_text(SCHEDULED.read_text().split("\n@S.schedule")[0])
        libs = []
        for source, extra in ((SCHEDULED, pipeline_args()), (kernel_only, [])):
            lib_path = Path(tmp) / (source.stem + ".so")
            subprocess.run([*tirc_command(), str(source), "-O3", *extra,
                            "--target", HOST_TARGET, "-o", str(lib_path)], check=True)
            libs.append(rt.load(lib_path))
        rng = np.random.default_rng(0)
        a = rng.standard_normal((N, N), dtype=np.float32)
        b = rng.standard_normal((N, N), dtype=np.float32)
        c = np.empty((N, N), np.float32)
        for lib in libs:
            lib.sgemm(a, b, c)
            np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-2)
        lib_times: list[list[float]] = [[] for _ in libs]
        np_default_times: list[float] = []
        np_unset_times: list[float] = []
        for _ in range(max(opts.rounds, 1)):
            for lib, times in zip(libs, lib_times):
                for _ in range(opts.runs):
                    start = time.perf_counter()
                    lib.sgemm(a, b, c)
                    times.append(time.perf_counter() - start)
            np_default_times.extend(numpy_times(default_env, opts.runs))
            np_unset_times.extend(numpy_times(unset_env, opts.runs))
        tirc_s, rules_s = (statistics.median(t) for t in lib_times)
    np_default = statistics.median(np_default_times)
    np_unset = statistics.median(np_unset_times)

    def gflops(seconds: float) -> float:
        return FLOPS / seconds / 1e9

    coretype = os.environ.get("OPENBLAS_CORETYPE", "(unset)")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"sgemm {N}x{N}x{N} float32, medians of {opts.runs} runs x {opts.rounds} rounds "
          f"({os.cpu_count()} CPUs, load average {load})")
    print(f"  tirc (samples/schedules/sgemm.tir)           {gflops(tirc_s):8.1f} GFLOP/s")
    print(f"  tirc (no schedule: the default rules)        {gflops(rules_s):8.1f} GFLOP/s   "
          f"rules/numpy = {np_default / rules_s:.2f}")
    print(f"  numpy, OPENBLAS_CORETYPE={coretype:<18} {gflops(np_default):8.1f} GFLOP/s   "
          f"tirc/numpy = {np_default / tirc_s:.2f}")
    print(f"  numpy, OPENBLAS_CORETYPE/L2_SIZE unset       {gflops(np_unset):8.1f} GFLOP/s   "
          f"tirc/numpy = {np_unset / tirc_s:.2f}")


if __name__ == "__main__":
    main()
