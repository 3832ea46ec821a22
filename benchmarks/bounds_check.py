"""What -fbounds-check costs: each kernel of benchmarks/bounds_check.tir, and the MLP sample (a
graph function), built with and without it at -O3; medians of several runs, and the ratio
(checked / unchecked time; 1.00 means free). Also the number of checks the pass adds.

    .venv/bin/python benchmarks/bounds_check.py [--runs 15] [--n 4194304]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def tirc(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "tirc.cli.main", *args], check=True)


def paired_medians(a: Callable[[], object], b: Callable[[], object], runs: int
                   ) -> tuple[float, float]:
    """Median times of `a` and `b`, run alternately (a loaded machine drifts alike for both)."""
    a(), b()
    ta, tb = [], []
    for _ in range(runs):
        for fn, times in ((a, ta), (b, tb)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(ta), statistics.median(tb)


def count_checks(source: Path) -> dict[str, int]:
    """Checks -fbounds-check adds, per function of the lowered module."""
    out = subprocess.run([sys.executable, "-m", "tirc.cli.main", str(source), "-O3",
                          "-fbounds-check", "--emit", "tir", "-o", "-"], check=True,
                         capture_output=True, text=True).stdout
    counts: dict[str, int] = {}
    name = ""
    for line in out.splitlines():
        if line.strip().startswith("def "):
            name = line.strip()[4:].split("(")[0]
        counts[name] = counts.get(name, 0) + line.count("tirc.bounds_check")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per measurement")
    parser.add_argument("--n", type=int, default=4 * 1024 * 1024, help="elements per kernel")
    opts = parser.parse_args()

    import tirc.runtime as rt

    n = opts.n
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n + 64, dtype=np.float32)
    idx = rng.integers(0, n, n).astype(np.int32)
    b = np.empty(n, np.float32)
    x = rng.standard_normal((512, 64), dtype=np.float32)
    kernels = {
        "scale": lambda lib: lib.scale(a[:n], b),
        "window": lambda lib: lib.window(a, b, 64),
        "gather": lambda lib: lib.gather(a[:n], idx, b),
    }
    print(f"{'kernel':10} {'checks':>6} {'plain ms':>9} {'checked ms':>11} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        sources = {"kernels": ROOT / "benchmarks" / "bounds_check.tir",
                   "mlp": ROOT / "samples" / "mlp.tir"}
        libs = {}
        for name, src in sources.items():
            for flags in ([], ["-fbounds-check"]):
                out = Path(tmp) / f"{name}{len(flags)}.so"
                tirc(str(src), "-O3", *flags, "-o", str(out))
                libs[name, bool(flags)] = rt.load(out)
        checks = {**count_checks(sources["kernels"]),
                  "mlp n=512": sum(count_checks(sources["mlp"]).values())}
        weights = [rng.standard_normal(tuple(p["shape"]), dtype=np.float32) * 0.05
                   for p in libs["mlp", False]["main"].params[1:-1]]
        rows = [(k, fn, "kernels") for k, fn in kernels.items()]
        rows.append(("mlp n=512", lambda lib: lib.main(x, *weights), "mlp"))
        for name, fn, lib_name in rows:
            plain_lib, checked_lib = libs[lib_name, False], libs[lib_name, True]
            plain, checked = paired_medians(lambda f=fn, lib=plain_lib: f(lib),
                                            lambda f=fn, lib=checked_lib: f(lib), opts.runs)
            print(f"{name:10} {checks.get(name, 0):>6} {plain * 1e3:>9.3f} {checked * 1e3:>11.3f} "
                  f"{checked / plain:>6.2f}")
        print(f"(checks: calls in the lowered function; times: medians of {opts.runs} runs)")


if __name__ == "__main__":
    main()
