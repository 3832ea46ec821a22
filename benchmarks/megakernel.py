"""Megakernel vs kernel-by-kernel vs numpy on a decode-like chain.

8 layers of (x @ W (1024x1024) + b, GELU, RMS norm), batch n symbolic, run at n = 1, 4, 16.
The same graph is compiled three ways: as a megakernel with the static and with the dynamic
schedule (one OpenMP region for the whole chain, tasks synchronised by event counters), and
kernel by kernel (each kernel its own parallel region). Prints median milliseconds per call
and the ratios per-kernel / megakernel (above 1: the megakernel is faster) and tirc / numpy.
Run: `.venv/bin/python benchmarks/megakernel.py [--layers 8] [--repeat 50]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

DIM = 1024


def source(layers: int) -> str:
    """The graph function: parameters x, then W_i, b_i, g_i per layer."""
    params = ['x: R.Tensor(("n", 1024), "float32")']
    body = []
    cur = "x"
    for i in range(layers):
        params += [f'w{i}: R.Tensor((1024, 1024), "float32")',
                   f'b{i}: R.Tensor((1024,), "float32")', f'g{i}: R.Tensor((1024,), "float32")']
        body += [f"            m{i} = R.matmul({cur}, w{i})",
                 f"            a{i} = R.add(m{i}, b{i})",
                 f"            e{i} = R.nn.gelu(a{i})",
                 f"            y{i} = R.nn.rms_norm(e{i}, g{i}, axes=[-1], epsilon=1e-5)"]
        cur = f"y{i}"
    return ("@R.function\ndef main(" + ", ".join(params) +
            ') -> R.Tensor(("n", 1024), "float32"):\n        with R.dataflow():\n' +
            "\n".join(body) + f"\n            R.output({cur})\n        return {cur}\n")


def build(text: str, out: Path, mode: str | None) -> object:
    """The chain compiled by the default CPU pipeline (megakernel passes if `mode`)."""
    from tirc.backends import build as build_so
    from tirc.frontend import parse
    from tirc.ir.target import parse_target
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pass_base import PassContext
    from tirc.passes.pipeline import build_pipeline, default_pipeline
    from tirc.runtime import load

    target = parse_target("llvm")
    steps = default_pipeline(target, 3)
    if mode:
        i = steps.index("lower-graph")
        steps = steps[:i] + ["megakernel", "megakernel-runtime"] + steps[i + 1:]
    ctx = PassContext(opt_level=3, config={"megakernel": mode} if mode else {})
    mod = run_pipeline(parse(text), build_pipeline(steps), ctx)
    build_so(mod, out, target, 3)
    return load(out)


def numpy_chain(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    """The reference: the same chain in numpy (tanh-free exact GELU via erf is not in numpy,
    so this uses the tanh approximation; it is timed, not compared)."""
    for k in range(0, len(weights), 3):
        w, b, g = weights[k:k + 3]
        a = x @ w + b
        e = 0.5 * a * (1 + np.tanh(0.7978845608 * (a + 0.044715 * a ** 3)))
        x = e / np.sqrt(np.mean(e * e, axis=-1, keepdims=True) + 1e-5) * g
    return x


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=50)
    opts = ap.parse_args()
    text = source(opts.layers)
    rng = np.random.default_rng(0)
    weights = []
    for _ in range(opts.layers):
        weights += [(rng.standard_normal((DIM, DIM)) / 32).astype("float32"),
                    (rng.standard_normal(DIM) * 0.1).astype("float32"),
                    np.ones(DIM, "float32")]
    with tempfile.TemporaryDirectory() as tmp:
        libs = {name: build(text, Path(tmp) / f"{name}.so", mode)
                for name, mode in (("static", "static"), ("dynamic", "dynamic"),
                                   ("per-kernel", None))}
        print(f"{opts.layers} layers of (x @ W(1024x1024) + b, GELU, RMS norm); median ms")
        print(f"{'batch':>5} {'static':>9} {'dynamic':>9} {'per-kernel':>11} {'numpy':>9} "
              f"{'pk/static':>10} {'pk/dynamic':>11} {'static/np':>10}")
        for n in (1, 4, 16):
            x = rng.standard_normal((n, DIM)).astype("float32")
            ref = libs["per-kernel"].main(x, *weights)  # type: ignore[attr-defined]
            for name in ("static", "dynamic"):
                got = libs[name].main(x, *weights)  # type: ignore[attr-defined]
                np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-3)
            t = {name: median_ms(lambda lib=lib, x=x: lib.main(x, *weights),  # type: ignore[attr-defined]
                                 opts.repeat) for name, lib in libs.items()}
            t["numpy"] = median_ms(lambda x=x: numpy_chain(x, weights), opts.repeat)
            print(f"{n:>5} {t['static']:>9.3f} {t['dynamic']:>9.3f} {t['per-kernel']:>11.3f} "
                  f"{t['numpy']:>9.3f} {t['per-kernel'] / t['static']:>10.2f} "
                  f"{t['per-kernel'] / t['dynamic']:>11.2f} {t['static'] / t['numpy']:>10.2f}")


if __name__ == "__main__":
    main()
