"""MLP x(n, 256) -> 512 (bias, relu) -> 128 with tirc's default pipeline against numpy.

Compiled once (symbolic batch n), run at n = 1, 7, 64, 512; prints the median milliseconds per
call of numpy, tirc (default pipeline: tiled matmuls with the bias and relu fused in) and, when
a CBLAS is installed (`pip install 'tirc[blas]'`), tirc -fblas (matmuls by the CBLAS, bias and
relu by one fused kernel), with the ratio to numpy (below 1 is faster). `--disable PASS` adds
a column built with that pass left out, for a before/after of one pass in the same run.
Run: `.venv/bin/python benchmarks/mlp.py [--disable unswitch-guards]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

SOURCE = '''
@R.function
def main(x: R.Tensor(("n", 256), "float32"), w1: R.Tensor((256, 512), "float32"),
         b1: R.Tensor((512,), "float32"), w2: R.Tensor((512, 128), "float32")
         ) -> R.Tensor(("n", 128), "float32"):
    with R.dataflow():
        h = R.matmul(x, w1)
        hb = R.add(h, b1)
        a = R.nn.relu(hb)
        y = R.matmul(a, w2)
        R.output(y)
    return y
'''

# Benchmarks compile for this machine's CPU (-mcpu=native, every feature it has), as a user
# tuning for one machine would; tirc's default target is the portable x86-64-v3.
HOST_TARGET = "llvm -mcpu=native"


def compile_mlp(out: Path, opt_level: int, blas: bool = False,
                disabled: tuple[str, ...] = ()) -> bool:
    """The MLP through the default pipeline to a .so, as `tirc -O{opt_level} [-fblas]` does;
    False when -fblas was asked for and no CBLAS is installed."""
    from tirc.driver import build
    from tirc.frontend import parse
    from tirc.passes.graph.blas_library import blas_library

    libs: tuple[str, ...] = ()
    lib_dirs: tuple[str, ...] = ()
    config: dict[str, str] = {}
    if blas:
        found = blas_library()
        if found is None:
            return False
        libs, lib_dirs, config = (found.name,), (found.lib_dir,), {"blas": "1"}
    build(parse(SOURCE), out, HOST_TARGET, opt_level, libs=libs, lib_dirs=lib_dirs,
          config=config, disabled=disabled)
    return True


def median_ms(fn: Callable[[], object], budget_s: float = 0.4) -> float:
    """The median time of one call, in milliseconds, over calls timed one by one for about
    `budget_s` (at least 51): a call that waits for a core another process holds moves the
    median little, where it would spoil a loop of calls timed together."""
    timer = timeit.Timer(fn)
    number, total = timer.autorange()
    repeat = max(51, min(5001, int(budget_s / (total / number))))
    return statistics.median(timer.repeat(repeat, 1)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-O", dest="opt", type=int, default=3)
    parser.add_argument("--sizes", default="1,7,64,512")
    parser.add_argument("--disable", action="append", default=[], metavar="PASS",
                        help="also time a build without PASS (repeatable)")
    args = parser.parse_args()
    from tirc.runtime import load

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((256, 512)).astype("float32") * 0.05
    b1 = rng.standard_normal(512).astype("float32")
    w2 = rng.standard_normal((512, 128)).astype("float32") * 0.05
    with tempfile.TemporaryDirectory() as tmp:
        libs = {}
        variants = [("tirc", False, ()), ("tirc -fblas", True, ())]
        if args.disable:
            variants.insert(1, ("no " + ",".join(args.disable), False, tuple(args.disable)))
        for name, blas, disabled in variants:
            path = Path(tmp) / f"mlp{len(libs)}.so"
            if compile_mlp(path, args.opt, blas, disabled):
                libs[name] = load(path)
        head = f"{'n':>5} {'numpy ms':>10}" + "".join(f" {k + ' ms':>16} {'ratio':>6}"
                                                      for k in libs)
        print(head)
        for n in (int(s) for s in args.sizes.split(",")):
            x = rng.standard_normal((n, 256)).astype("float32")

            def reference(x: np.ndarray = x) -> np.ndarray:
                return np.maximum(x @ w1 + b1, 0) @ w2

            t_np = median_ms(reference)
            row = f"{n:>5} {t_np:>10.4f}"
            for lib in libs.values():
                y = np.empty((n, 128), "float32")
                lib.main(x, w1, b1, w2, y)
                np.testing.assert_allclose(y, reference(), rtol=1e-4, atol=1e-4)
                call = lib.main.prepare((x, w1, b1, w2, y), {})
                t = median_ms(lambda call=call, lib=lib: lib.main.call_prepared(call))
                row += f" {t:>16.4f} {t / t_np:>6.2f}"
            print(row)


if __name__ == "__main__":
    main()
