"""MLP x(n, 256) -> 512 (bias, relu) -> 128 with tirc's default pipeline against numpy.

Compiled once (symbolic batch n), run at n = 1, 7, 64, 512; prints milliseconds per call and
the ratio tirc / numpy (below 1 is faster). Run: `.venv/bin/python benchmarks/mlp.py`.
"""

from __future__ import annotations

import argparse
import tempfile
import timeit
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


def compile_mlp(out: Path, opt_level: int) -> None:
    """The MLP through the graph steps and the default loop-level pipeline, to a .so."""
    from tirc.backends import build
    from tirc.frontend import parse
    from tirc.ir.target import parse_target
    from tirc.passes.graph.graph_pipeline import graph_steps
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pipeline import build_pipeline, default_pipeline

    target = parse_target("llvm")
    steps = default_pipeline(target, opt_level)
    if "lower-graph" not in steps:
        steps = [s for s in graph_steps(opt_level) if _exists(s)] + steps
    mod = run_pipeline(parse(SOURCE), build_pipeline(steps))
    build(mod, out, target, opt_level)


def _exists(name: str) -> bool:
    from tirc.passes.registry import all_passes

    return name in all_passes()


def best_ms(fn: object, repeat: int = 7) -> float:
    """The best of `repeat` timings of one call, in milliseconds (loops sized to ~20 ms)."""
    timer = timeit.Timer(fn)  # type: ignore[arg-type]
    number, _ = timer.autorange()
    number = max(1, number // 10)
    return min(timer.repeat(repeat, number)) / number * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-O", dest="opt", type=int, default=3)
    parser.add_argument("--sizes", default="1,7,64,512")
    args = parser.parse_args()
    from tirc.runtime import load

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((256, 512)).astype("float32") * 0.05
    b1 = rng.standard_normal(512).astype("float32")
    w2 = rng.standard_normal((512, 128)).astype("float32") * 0.05
    with tempfile.TemporaryDirectory() as tmp:
        lib_path = Path(tmp) / "mlp.so"
        compile_mlp(lib_path, args.opt)
        lib = load(lib_path)
        print(f"{'n':>5} {'numpy ms':>10} {'tirc ms':>10} {'ratio':>7}")
        for n in (int(s) for s in args.sizes.split(",")):
            x = rng.standard_normal((n, 256)).astype("float32")
            y = np.empty((n, 128), "float32")

            def reference(x: np.ndarray = x) -> np.ndarray:
                return np.maximum(x @ w1 + b1, 0) @ w2

            lib.main(x, w1, b1, w2, y)
            np.testing.assert_allclose(y, reference(), rtol=1e-4, atol=1e-4)
            call = lib.main.prepare((x, w1, b1, w2, y), {})
            t_np = best_ms(reference)
            t_tirc = best_ms(lambda call=call: lib.main.call_prepared(call))
            print(f"{n:>5} {t_np:>10.4f} {t_tirc:>10.4f} {t_tirc / t_np:>7.2f}")


if __name__ == "__main__":
    main()
