"""NumPy references for the GPU samples: inputs, expected outputs, sizes, and work done.

One `GPUSample` per `.tir` file in this folder: the function to call, seeded random inputs for
given symbolic sizes, the expected outputs, which parameters are outputs, small sizes for the
GPU interpreter (Python, slow) and large ones for a real GPU (benchmarks/gpu_check.py), and the
floating-point operations and bytes moved, for TFLOP/s and GB/s. Loaded by path (not a
package); imports only NumPy and the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GPU_SAMPLES_DIR = Path(__file__).resolve().parent

Sizes = dict[str, int]


@dataclass(frozen=True)
class GPUSample:
    """One GPU sample program and how to check and measure it."""

    file: str
    func: str
    make_inputs: Callable[[Sizes, np.random.Generator], list[np.ndarray]]
    reference: Callable[..., list[np.ndarray]]
    outputs: tuple[int, ...]
    interp_sizes: Sizes
    device_sizes: Sizes
    flops: Callable[[Sizes], float]
    bytes_moved: Callable[[Sizes], float]
    tolerance: tuple[float, float] = (1e-4, 1e-4)

    @property
    def name(self) -> str:
        return Path(self.file).stem

    @property
    def path(self) -> Path:
        return GPU_SAMPLES_DIR / self.file

    def inputs(self, sizes: Sizes, seed: int = 0) -> list[np.ndarray]:
        return self.make_inputs(sizes, np.random.default_rng(seed))

    def arguments(self, inputs: list[np.ndarray], expected: list[np.ndarray]) -> list[np.ndarray]:
        """Inputs with NaN-filled outputs inserted at their positions."""
        args = list(inputs)
        for pos, want in zip(self.outputs, expected):
            args.insert(pos, np.full(want.shape, np.nan, dtype=want.dtype))
        return args

    def max_error(self, args: list[np.ndarray], expected: list[np.ndarray]) -> float:
        """The largest absolute difference of any output (inf when one has NaN)."""
        worst = 0.0
        for pos, want in zip(self.outputs, expected):
            got = np.asarray(args[pos], dtype=np.float64)
            diff = np.abs(got - want.astype(np.float64))
            worst = max(worst, float(np.max(diff)) if diff.size else 0.0)
            if np.isnan(diff).any():
                return float("inf")
        return worst

    def matches(self, args: list[np.ndarray], expected: list[np.ndarray]) -> bool:
        rtol, atol = self.tolerance
        return all(np.allclose(args[pos], want, rtol=rtol, atol=atol)
                   for pos, want in zip(self.outputs, expected))


def _randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _silu_bias(x: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    x64 = x.astype(np.float64)
    return [(x64 / (1.0 + np.exp(-x64)) + b).astype(np.float32)]


def _row_sum(a: np.ndarray) -> list[np.ndarray]:
    return [a.astype(np.float64).sum(axis=1).astype(np.float32)]


def _matmul(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)]


def _add(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [a + b]


GPU_SAMPLES: list[GPUSample] = [
    GPUSample(
        "add_scheduled.tir", "add_scheduled",
        lambda s, rng: [_randn(rng, s["n"]), _randn(rng, s["n"])],
        _add, (2,), {"n": 300}, {"n": 1 << 24},
        flops=lambda s: float(s["n"]), bytes_moved=lambda s: 12.0 * s["n"]),
    GPUSample(
        "silu_bias_2d.tir", "silu_bias_2d",
        lambda s, rng: [_randn(rng, s["m"], 1000), _randn(rng, 1000)],
        _silu_bias, (2,), {"m": 9}, {"m": 16384},
        flops=lambda s: 5.0 * s["m"] * 1000, bytes_moved=lambda s: 8.0 * s["m"] * 1000),
    GPUSample(
        "row_sum_shared.tir", "row_sum_shared",
        lambda s, rng: [_randn(rng, s["m"], s["n"])],
        _row_sum, (1,), {"m": 3, "n": 300}, {"m": 8192, "n": 4096},
        flops=lambda s: float(s["m"] * s["n"]), bytes_moved=lambda s: 4.0 * s["m"] * s["n"],
        tolerance=(1e-4, 1e-3)),
    GPUSample(
        "matmul_tiled.tir", "matmul_tiled",
        lambda s, rng: [_randn(rng, s["m"], s["k"]), _randn(rng, s["k"], s["n"])],
        _matmul, (2,), {"m": 20, "k": 33, "n": 18}, {"m": 2048, "k": 2048, "n": 2048},
        flops=lambda s: 2.0 * s["m"] * s["k"] * s["n"],
        bytes_moved=lambda s: 4.0 * (s["m"] * s["k"] + s["k"] * s["n"] + s["m"] * s["n"]),
        tolerance=(1e-3, 1e-3)),
]


def gpu_sample(name: str) -> GPUSample:
    """The sample whose file stem is `name`."""
    for s in GPU_SAMPLES:
        if s.name == name:
            return s
    raise KeyError(f"no GPU sample named '{name}'")
