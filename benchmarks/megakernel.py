"""Megakernel vs kernel-by-kernel vs numpy on a decode-like chain and the transformer block.

Chain: 8 layers of (x @ W (DIM x DIM) + b, GELU, RMS norm), batch n symbolic, run at n = 1, 4,
16; and samples/transformer_block.tir at batch 1 (b = 1, s = 1). Each graph is compiled three
ways: as a megakernel with the static and with the dynamic schedule (one OpenMP region for the
whole graph, tasks synchronised by event counters), and kernel by kernel (each kernel its own
parallel region). Prints median microseconds per call, the ratios per-kernel / megakernel (above
1: the megakernel is faster) and tirc / numpy (the chain's numpy version is float32 with a tanh
GELU; the block's is the float64 reference of samples/references.py). `--dim 64` shrinks the
matrices until the compute is negligible: what is left is what synchronisation costs (fork/join
per kernel vs events in one region). The libraries are timed through a prepared call (arguments
checked once), numpy as called from Python.
Run: `.venv/bin/python benchmarks/megakernel.py [--layers 8] [--dim 1024] [--repeat 200]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODES = (("static", "static"), ("dynamic", "dynamic"), ("per-kernel", None))

# Benchmarks compile for this machine's CPU (-mcpu=native, every feature it has), as a user
# tuning for one machine would; tirc's default target is the portable x86-64-v3.
HOST_TARGET = "llvm -mcpu=native"


def source(layers: int, dim: int) -> str:
    """The graph function: parameters x, then W_i, b_i, g_i per layer."""
    params = [f'x: R.Tensor(("n", {dim}), "float32")']
    body = []
    cur = "x"
    for i in range(layers):
        params += [f'w{i}: R.Tensor(({dim}, {dim}), "float32")',
                   f'b{i}: R.Tensor(({dim},), "float32")', f'g{i}: R.Tensor(({dim},), "float32")']
        body += [f"            m{i} = R.matmul({cur}, w{i})",
                 f"            a{i} = R.add(m{i}, b{i})",
                 f"            e{i} = R.nn.gelu(a{i})",
                 f"            y{i} = R.nn.rms_norm(e{i}, g{i}, axes=[-1], epsilon=1e-5)"]
        cur = f"y{i}"
    return ("@R.function\ndef main(" + ", ".join(params) +
            f') -> R.Tensor(("n", {dim}), "float32"):\n        with R.dataflow():\n' +
            "\n".join(body) + f"\n            R.output({cur})\n        return {cur}\n")


def build(text: str, out: Path, mode: str | None) -> object:
    """The graph compiled by the default CPU pipeline at -O3 (as a megakernel if `mode`)."""
    from tirc.driver import build as build_so
    from tirc.frontend import parse
    from tirc.runtime import load

    build_so(parse(text), out, HOST_TARGET, 3, megakernel=mode)
    return load(out)


def numpy_chain(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    """The chain in numpy (tanh GELU: numpy has no erf; timed, not compared)."""
    for k in range(0, len(weights), 3):
        w, b, g = weights[k:k + 3]
        a = x @ w + b
        e = 0.5 * a * (1 + np.tanh(0.7978845608 * (a + 0.044715 * a ** 3)))
        x = e / np.sqrt(np.mean(e * e, axis=-1, keepdims=True) + 1e-5) * g
    return x


def median_us(fn: Callable[[], object], repeat: int) -> float:
    """Median microseconds per call over `repeat` timed batches of calls (a batch lasts about
    a millisecond, so one descheduling of the process spoils one sample, not the median)."""
    fn()
    t = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t, 1e-7)
    batch = max(1, min(100, int(1e-3 / once)))
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t) / batch)
    return statistics.median(times) * 1e6


def row(label: str, libs: dict[str, object], args: list[np.ndarray],
        ref: Callable[[], object], repeat: int) -> None:
    """Check the megakernels against the per-kernel build, then time and print one row."""
    want = libs["per-kernel"].main(*args)  # type: ignore[attr-defined]
    for name in ("static", "dynamic"):
        got = libs[name].main(*args)  # type: ignore[attr-defined]
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)
    # The libraries are timed without the Python-side argument checks (prepared once, as a
    # caller calling again and again would): 25 arrays take tens of microseconds to check,
    # as much as a whole 64-wide chain.
    t = {}
    for name, lib in libs.items():
        fn = lib.main  # type: ignore[attr-defined]
        call = fn.prepare(tuple(args), {})
        t[name] = median_us(lambda fn=fn, call=call: fn.call_prepared(call), repeat)
    t["numpy"] = median_us(ref, repeat)
    print(f"{label:>12} {t['static']:>9.1f} {t['dynamic']:>9.1f} {t['per-kernel']:>11.1f} "
          f"{t['numpy']:>9.1f} {t['per-kernel'] / t['static']:>10.2f} "
          f"{t['per-kernel'] / t['dynamic']:>11.2f} {t['static'] / t['numpy']:>10.2f} "
          f"{t['dynamic'] / t['numpy']:>11.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--no-block", action="store_true", help="leave out the transformer block")
    ap.add_argument("--no-chain", action="store_true", help="leave out the chain")
    opts = ap.parse_args()
    dim = opts.dim
    rng = np.random.default_rng(0)
    weights = []
    for _ in range(opts.layers):
        weights += [(rng.standard_normal((dim, dim)) / np.sqrt(dim)).astype("float32"),
                    (rng.standard_normal(dim) * 0.1).astype("float32"),
                    np.ones(dim, "float32")]
    print(f"{opts.layers} layers of (x @ W({dim}x{dim}) + b, GELU, RMS norm); "
          "median us per call")
    print(f"{'batch':>12} {'static':>9} {'dynamic':>9} {'per-kernel':>11} {'numpy':>9} "
          f"{'pk/static':>10} {'pk/dynamic':>11} {'static/np':>10} {'dynamic/np':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        text = source(opts.layers, dim)
        libs = {} if opts.no_chain else \
            {name: build(text, Path(tmp) / f"chain_{name}.so", mode) for name, mode in MODES}
        for n in () if opts.no_chain else (1, 4, 16):
            x = rng.standard_normal((n, dim)).astype("float32")
            row(f"chain n={n}", libs, [x, *weights],
                lambda x=x: numpy_chain(x, weights), opts.repeat)
        if opts.no_block:
            return
        sys.path.insert(0, str(ROOT / "samples"))
        import references

        sample = references.BY_NAME["transformer_block"]
        text = sample.path.read_text()
        libs = {name: build(text, Path(tmp) / f"block_{name}.so", mode) for name, mode in MODES}
        args = sample.inputs({"b": 1, "s": 1})
        row("block b=1", libs, args, lambda: sample.expected(args), opts.repeat)


if __name__ == "__main__":
    main()
