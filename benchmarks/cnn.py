"""Convolution and pooling through tirc's default pipeline against numpy, in one run.

Workloads: a 3x3 convolution (64 -> 64 channels, 56x56, padding 1, as ResNet's first stage),
a depthwise 3x3 convolution (groups = channels), 3x3/2 max pooling, global average pooling, and
the `samples/resnet_block.tir` block at batch 1 and 8. numpy computes each the fastest plain
way it can: a convolution as im2col and one matrix product (BLAS), pooling as a maximum or mean
over strided views. Prints the median milliseconds per call of each and tirc's ratio to numpy
(below 1 is faster), with tirc's GFLOP/s for the convolutions.
Run: `.venv/bin/python benchmarks/cnn.py [-O 3]`.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HOST_TARGET = "llvm -mcpu=native"  # as benchmarks/mlp.py: tuned for this machine

OPS = '''
@I.ir_module
class Module:
    @R.function
    def conv(x: R.Tensor((1, 64, 56, 56), "float32"), w: R.Tensor((64, 64, 3, 3), "float32")):
        return R.nn.conv2d(x, w, padding=(1, 1))

    @R.function
    def depthwise(x: R.Tensor((1, 64, 56, 56), "float32"),
                  w: R.Tensor((64, 1, 3, 3), "float32")):
        return R.nn.conv2d(x, w, padding=(1, 1), groups=64)

    @R.function
    def max_pool(x: R.Tensor((1, 64, 112, 112), "float32")):
        return R.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))

    @R.function
    def global_pool(x: R.Tensor((1, 512, 7, 7), "float32")):
        return R.nn.adaptive_avg_pool2d(x, output_size=(1, 1))
'''


def median_ms(fn: Callable[[], object], budget_s: float = 0.4) -> float:
    """The median of calls timed one by one for about `budget_s` (at least 21)."""
    timer = timeit.Timer(fn)
    number, total = timer.autorange()
    repeat = max(21, min(2001, int(budget_s / (total / number))))
    return statistics.median(timer.repeat(repeat, 1)) * 1e3


def im2col_conv(x: np.ndarray, w: np.ndarray, groups: int = 1) -> np.ndarray:
    """Stride 1, padding 1, 3x3: the nine shifted views stacked, then one product per group."""
    n, c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([padded[:, :, i:i + h, j:j + wd] for i in range(3) for j in range(3)],
                    axis=2)  # n, c, 9, h, w
    if groups == 1:
        return np.einsum("ok,nkp->nop", w.reshape(w.shape[0], -1),
                         cols.reshape(n, c * 9, h * wd), optimize=True).reshape(n, -1, h, wd)
    return np.einsum("ck,nckp->ncp", w.reshape(c, 9), cols.reshape(n, c, 9, h * wd),
                     optimize=True).reshape(n, c, h, wd)


def max_pool(x: np.ndarray) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    out = padded[:, :, 0:112:2, 0:112:2].copy()
    for i in range(3):
        for j in range(3):
            np.maximum(out, padded[:, :, i:i + 112:2, j:j + 112:2], out=out)
    return out


def load_references() -> ModuleType:
    """samples/references.py, loaded by path as samples/demo.py loads it (not a package)."""
    name = "tirc_sample_references"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "samples/references.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-O", dest="opt", type=int, default=3)
    args = parser.parse_args()
    from tirc.driver import build
    from tirc.frontend import parse, parse_file
    from tirc.runtime import load

    rng = np.random.default_rng(0)
    refs = load_references()
    rows: list[tuple[str, float, float, float | None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        ops_so, block_so = Path(tmp) / "ops.so", Path(tmp) / "block.so"
        build(parse(OPS), ops_so, HOST_TARGET, args.opt)
        build(parse_file(ROOT / "samples/resnet_block.tir"), block_so, HOST_TARGET, args.opt)
        ops, block = load(ops_so), load(block_so)
        x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
        w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
        dw = rng.standard_normal((64, 1, 3, 3)).astype(np.float32)
        big = rng.standard_normal((1, 64, 112, 112)).astype(np.float32)
        late = rng.standard_normal((1, 512, 7, 7)).astype(np.float32)
        cases: list[tuple[str, Callable[[], object], Callable[[], object], float | None]] = [
            ("conv2d 3x3 64->64 56x56", lambda: ops.conv(x, w), lambda: im2col_conv(x, w),
             2 * 64 * 64 * 9 * 56 * 56),
            ("depthwise 3x3 64 56x56", lambda: ops.depthwise(x, dw),
             lambda: im2col_conv(x, dw, groups=64), 2 * 64 * 9 * 56 * 56),
            ("max_pool2d 3x3/2 112x112", lambda: ops.max_pool(big), lambda: max_pool(big), None),
            ("global avg pool 512x7x7", lambda: ops.global_pool(late),
             lambda: late.mean(axis=(2, 3), keepdims=True), None),
        ]
        sample = refs.BY_NAME["resnet_block"]
        for n in (1, 8):
            inputs = sample.inputs({"n": n})
            cases.append((f"resnet_block n={n}", lambda i=inputs: block.main(*i),
                          lambda i=inputs: sample.reference(*i), None))
        for name, ours, theirs, flops in cases:
            want = theirs()
            want = want[0] if isinstance(want, list) else want  # a sample's reference: a list
            np.testing.assert_allclose(np.asarray(ours()), np.asarray(want), rtol=2e-3,
                                       atol=2e-3)
            rows.append((name, median_ms(theirs), median_ms(ours), flops))
    print(f"{'workload':28} {'numpy ms':>9} {'tirc ms':>9} {'tirc/numpy':>11} {'GFLOP/s':>8}")
    for name, base, ours_ms, flops in rows:
        rate = f"{flops / ours_ms / 1e6:8.1f}" if flops else f"{'':8}"
        print(f"{name:28} {base:9.3f} {ours_ms:9.3f} {ours_ms / base:11.2f} {rate}")


if __name__ == "__main__":
    main()
