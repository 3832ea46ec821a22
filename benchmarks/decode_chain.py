"""Decode chain: four 512-wide layers of matmul + bias + SiLU + RMS norm at batch 1, 2, 4, 8.

The graph function takes a symbolic batch `n` and is compiled once with tirc's default
pipeline (no schedule written: the default rules, their batch-1 matrix-vector variant chosen at
run time); numpy runs the same float32 chain (`x @ w + b`, `h / (1 + exp(-h))`, the RMS norm).
Prints the median milliseconds per call of both and the ratio tirc / numpy (the goal of issue
15 is at most 1.0 at every batch). `--disable PASS` adds a column built without that pass.

    .venv/bin/python benchmarks/decode_chain.py [--batches 1,2,4,8] [--disable unswitch-guards]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from mlp import HOST_TARGET, median_ms

WIDTH = 512
LAYERS = 4
EPS = 1e-5


def source() -> str:
    """The chain as a graph function over `x` and each layer's weight, bias and norm scale."""
    params = ['x: R.Tensor(("n", 512), "float32")']
    body = []
    cur = "x"
    for k in range(LAYERS):
        params += [f'w{k}: R.Tensor((512, 512), "float32")', f'b{k}: R.Tensor((512,), "float32")',
                   f'g{k}: R.Tensor((512,), "float32")']
        body += [f"        h{k} = R.matmul({cur}, w{k})",
                 f"        hb{k} = R.add(h{k}, b{k})",
                 f"        s{k} = R.nn.silu(hb{k})",
                 f"        y{k} = R.nn.rms_norm(s{k}, g{k}, axes=[-1], epsilon={EPS})"]
        cur = f"y{k}"
    return ("@R.function\ndef main(" + ", ".join(params) +
            ') -> R.Tensor(("n", 512), "float32"):\n    with R.dataflow():\n' +
            "\n".join(body) + f"\n        R.output({cur})\n    return {cur}\n")


def reference(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    """The chain in numpy float32."""
    for k in range(LAYERS):
        w, b, g = weights[3 * k:3 * k + 3]
        h = x @ w + b
        h = h / (np.float32(1) + np.exp(-h))
        x = h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + np.float32(EPS)) * g
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-O", dest="opt", type=int, default=3)
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--disable", action="append", default=[], metavar="PASS",
                        help="also time a build without PASS (repeatable)")
    args = parser.parse_args()
    from tirc.driver import build
    from tirc.frontend import parse
    from tirc.runtime import load

    rng = np.random.default_rng(0)
    weights: list[np.ndarray] = []
    for _ in range(LAYERS):
        weights += [(rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype("float32"),
                    rng.standard_normal(WIDTH).astype("float32") * np.float32(0.1),
                    (1 + rng.standard_normal(WIDTH) * 0.1).astype("float32")]
    variants = [("tirc", ())]
    if args.disable:
        variants.append(("no " + ",".join(args.disable), tuple(args.disable)))
    with tempfile.TemporaryDirectory() as tmp:
        libs = {}
        for name, disabled in variants:
            path = Path(tmp) / f"chain{len(libs)}.so"
            build(parse(source()), path, HOST_TARGET, args.opt, disabled=disabled)
            libs[name] = load(path)
        print(f"{'batch':>5} {'numpy ms':>10}" + "".join(f" {k + ' ms':>24} {'ratio':>6}"
                                                         for k in libs))
        for n in (int(s) for s in args.batches.split(",")):
            x = rng.standard_normal((n, WIDTH)).astype("float32")
            t_np = median_ms(lambda x=x: reference(x, weights))
            row = f"{n:>5} {t_np:>10.4f}"
            for lib in libs.values():
                y = np.empty((n, WIDTH), "float32")
                lib.main(x, *weights, y)
                np.testing.assert_allclose(y, reference(x, weights), rtol=2e-3, atol=2e-3)
                call = lib.main.prepare((x, *weights, y), {})
                t = median_ms(lambda call=call, lib=lib: lib.main.call_prepared(call))
                row += f" {t:>24.4f} {t / t_np:>6.2f}"
            print(row)


if __name__ == "__main__":
    main()
