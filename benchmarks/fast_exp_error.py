"""Error of `T.fast_exp` against exp in float64, over float32 inputs in [LO, HI].

Compiles a parallel, vectorized `Y[i] = T.fast_exp(X[i])` kernel with `tirc -O3` (and with
`-fp-contract=off`, no FMA), then reports the largest relative error and the largest error in
ulps of the correctly rounded float32 result. The default sample is 2^24 evenly spread float32
bit patterns plus the range's edges; `--exhaustive` sweeps every float32 in [LO, HI]
(about 2.2e9 of them; a few minutes on two cores).

    .venv/bin/python benchmarks/fast_exp_error.py [--exhaustive]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

# Benchmarks compile for this machine's CPU (-mcpu=native, every feature it has), as a user
# tuning for one machine would; tirc's default target is the portable x86-64-v3.
HOST_TARGET = "llvm -mcpu=native"

KERNEL = '''
from tvm.script import tir as T


@T.prim_func
def fast_exp(x: T.handle, y: T.handle):
    T.func_attr({"global_symbol": "fast_exp", "tir.noalias": True})
    n = T.int64()
    X = T.match_buffer(x, (n,), "float32")
    Y = T.match_buffer(y, (n,), "float32")
    for io in T.parallel((n + 63) // 64):
        for ii in T.vectorized(64):
            with T.block("y"):
                vi = T.axis.spatial(n, io * 64 + ii)
                T.where(io * 64 + ii < n)
                Y[vi] = T.fast_exp(X[vi])
'''

LO = np.float32(-87.33654022216797)
HI = np.float32(88.72283172607422)
CHUNK = 1 << 24


def tirc_command() -> list[str]:
    beside = Path(sys.executable).parent / "tirc"
    return [str(beside)] if beside.exists() else [shutil.which("tirc") or "tirc"]


def bit_range(lo: np.float32, hi: np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The float32 values in [lo, hi] as two increasing bit ranges: negatives, non-negatives."""
    neg = np.array([np.float32(-0.0).view(np.uint32), lo.view(np.uint32)], np.uint32)
    pos = np.array([0, hi.view(np.uint32)], np.uint32)
    return neg, pos


def every_float(lo: np.float32, hi: np.float32) -> Iterator[np.ndarray]:
    """Every float32 in [lo, hi], in chunks of CHUNK values."""
    for first, last in bit_range(lo, hi):
        for start in range(int(first), int(last) + 1, CHUNK):
            stop = min(start + CHUNK, int(last) + 1)
            yield np.arange(start, stop, dtype=np.uint32).view(np.float32)


def sample_floats(lo: np.float32, hi: np.float32, count: int) -> np.ndarray:
    """`count` float32 values spread evenly over the bit patterns of [lo, hi], plus edges."""
    total = sum(int(last) - int(first) + 1 for first, last in bit_range(lo, hi))
    step = max(1, total // count)
    parts = [np.arange(int(first), int(last) + 1, step, dtype=np.uint32).view(np.float32)
             for first, last in bit_range(lo, hi)]
    edges = np.array([lo, hi, np.nextafter(lo, np.float32(0)), np.nextafter(hi, np.float32(0)),
                      -0.0, 0.0, 1e-30, -1e-30, 0.5, -0.5, 0.34657359, -0.34657359], np.float32)
    return np.concatenate([*parts, edges])


def errors(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> tuple[float, float]:
    """The largest relative error and the largest ulp error of fn(x) against exp in float64."""
    ref = np.exp(x.astype(np.float64))
    got = fn(x).astype(np.float64)
    rel = np.abs(got - ref) / ref
    ulp = np.spacing(ref.astype(np.float32)).astype(np.float64)
    return float(rel.max()), float((np.abs(got - ref) / ulp).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exhaustive", action="store_true", help="every float32 in [LO, HI]")
    parser.add_argument("--points", type=int, default=1 << 24, help="sample size otherwise")
    opts = parser.parse_args()

    import tirc.runtime as rt

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "fast_exp.tir"
        src.write_text(KERNEL)
        for label, target in (("FMA contraction (default)", HOST_TARGET),
                              ("-fp-contract=off", f"{HOST_TARGET} -fp-contract=off")):
            lib_path = Path(tmp) / f"fast_exp_{len(target)}.so"
            subprocess.run([*tirc_command(), str(src), "-O3", "--target", target,
                            "-o", str(lib_path)], check=True)
            lib = rt.load(lib_path)
            chunks = (every_float(LO, HI) if opts.exhaustive
                      else iter([sample_floats(LO, HI, opts.points)]))
            worst_rel, worst_ulp, count = 0.0, 0.0, 0
            for x in chunks:
                rel, ulp = errors(lib.fast_exp, x)
                worst_rel, worst_ulp = max(worst_rel, rel), max(worst_ulp, ulp)
                count += x.size
            print(f"{label}: {count} float32 inputs in [{LO}, {HI}]: "
                  f"max relative error {worst_rel:.3g}, max {worst_ulp:.3f} ulp")


if __name__ == "__main__":
    main()
