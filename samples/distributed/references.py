"""NumPy references for the multi-device samples: inputs, expected outputs, meshes to run on.

One `DistSample` per `.tir` file in this folder: the function, seeded random global inputs for
given symbolic sizes, the NumPy result, the sizes to test, and the mesh sizes to compile for
(`tirc FILE --mesh N`; each must be one the program can run on). Loaded by path (not a
package); imports only NumPy, the standard library and the single-device references.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DIST_SAMPLES_DIR = Path(__file__).resolve().parent
Sizes = dict[str, int]


def _single_device_references():  # noqa: ANN202 (a module loaded by path)
    name = "tirc_sample_references"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DIST_SAMPLES_DIR.parent /
                                                      "references.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


SINGLE = _single_device_references()


@dataclass(frozen=True)
class DistSample:
    """One multi-device sample and how to check it."""

    file: str
    func: str
    make_inputs: Callable[[Sizes, np.random.Generator], list[np.ndarray]]
    reference: Callable[..., list[np.ndarray]]
    sizes: Sizes
    meshes: tuple[int, ...]

    @property
    def path(self) -> Path:
        return DIST_SAMPLES_DIR / self.file

    @property
    def name(self) -> str:
        return self.file.removesuffix(".tir")


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def _f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


_ERF = np.vectorize(math.erf)


def _mlp_tp_inputs(s: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    return [_randn(rng, s["n"], 256), _randn(rng, 256, 1024, scale=0.0625),
            _randn(rng, 1024, scale=0.1), _randn(rng, 1024, 256, scale=0.03125),
            _randn(rng, 256, scale=0.1)]


def _mlp_tp(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray,
            b2: np.ndarray) -> list[np.ndarray]:
    h = _f64(x) @ _f64(w1) + _f64(b1)
    a = 0.5 * h * (1.0 + _ERF(h / math.sqrt(2.0)))
    return [_f32(a @ _f64(w2) + _f64(b2))]


def _sequence_inputs(s: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    return [_randn(rng, 10, 64), _randn(rng, 64) + np.float32(1), _randn(rng, 64)]


def _sequence_softmax(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> list[np.ndarray]:
    v = _f64(x)
    mean = v.mean(axis=1, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=1, keepdims=True)
    xn = (v - mean) / np.sqrt(var + 1e-5) * _f64(gamma) + _f64(beta)
    e = np.exp(xn - xn.max(axis=0, keepdims=True))
    return [_f32(e / e.sum(axis=0, keepdims=True)), _f32(v.mean(axis=0))]


DIST_SAMPLES: tuple[DistSample, ...] = (
    DistSample("mlp_tp.tir", "main", _mlp_tp_inputs, _mlp_tp, {"n": 5}, (1, 2, 4)),
    DistSample("sequence_softmax.tir", "main", _sequence_inputs, _sequence_softmax, {},
               (1, 2, 3, 4)),
    DistSample("transformer_block_tp.tir", "main", SINGLE._transformer_inputs,
               SINGLE._transformer_block, {"b": 2, "s": 5}, (1, 2, 4)),
)
BY_NAME: dict[str, DistSample] = {s.name: s for s in DIST_SAMPLES}
