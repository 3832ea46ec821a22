"""NumPy references for the samples: inputs, expected outputs, tolerances and sizes to test.

One `Sample` record per `.tir` file says which function to call, how to make seeded random
inputs for given symbolic sizes, how NumPy computes the expected outputs, which parameters are
outputs, and which sizes to run (small ones for the slow reference interpreter, several for
compiled code). This file is not part of a package: tests and `samples/demo.py` load it by path
(`importlib`), so it imports nothing but NumPy and the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SAMPLES_DIR = Path(__file__).resolve().parent

Sizes = dict[str, int]

# (rtol, atol) by dtype: float32 references are computed in float64, so the tolerance covers
# only the kernel's own float32 rounding (sums of up to a few hundred terms).
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-10, 1e-12),
}


def tolerance(dt: str | np.dtype) -> tuple[float, float]:
    """The (rtol, atol) used to compare results of dtype `dt`; exact for integers and bool."""
    return TOLERANCES.get(str(np.dtype(dt)) if not isinstance(dt, str) else dt, (0.0, 0.0))


@dataclass(frozen=True)
class Sample:
    """One sample program and everything needed to check it against NumPy.

    `make_inputs(sizes, rng)` returns the input arrays in parameter order (outputs left out);
    `reference(*inputs)` returns the expected outputs; `outputs` are the parameter positions
    of the outputs (destination-passing loop functions) and is empty for graph functions,
    which return their result. `interp_sizes` is small enough for the Python interpreter;
    `compiled_sizes` are run from one compiled library (one entry when every shape is static).
    `externs` gives the interpreter a Python version of each `R.call_dps_packed` symbol
    (destination-passing: inputs, then the output to fill).
    """

    file: str
    func: str
    level: str
    make_inputs: Callable[[Sizes, np.random.Generator], list[np.ndarray]]
    reference: Callable[..., list[np.ndarray]]
    outputs: tuple[int, ...]
    interp_sizes: Sizes
    compiled_sizes: tuple[Sizes, ...]
    externs: dict[str, Callable[..., None]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return Path(self.file).stem

    @property
    def path(self) -> Path:
        return SAMPLES_DIR / self.file

    @property
    def is_dynamic(self) -> bool:
        return bool(self.interp_sizes)

    def inputs(self, sizes: Sizes, seed: int = 0) -> list[np.ndarray]:
        """Seeded random inputs for `sizes`."""
        return self.make_inputs(sizes, np.random.default_rng(seed))

    def expected(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return self.reference(*inputs)

    def arguments(self, inputs: Sequence[np.ndarray],
                  expected: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The full argument list of a loop function: inputs, and NaN-filled outputs in place.

        Outputs start as NaN (or a sentinel for integers) so that an element the kernel never
        writes fails the comparison.
        """
        args = list(inputs)
        for pos, want in zip(self.outputs, expected):
            fill = np.nan if np.issubdtype(want.dtype, np.floating) else -7
            args.insert(pos, np.full(want.shape, fill, dtype=want.dtype))
        return args

    def output_values(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(args[pos]) for pos in self.outputs]


def mismatch(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> str | None:
    """None when every output matches within its dtype's tolerance, else what differs."""
    if len(got) != len(want):
        return f"expected {len(want)} outputs, got {len(got)}"
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k}: expected {w.dtype}{list(w.shape)}, got {g.dtype}{list(g.shape)}"
        rtol, atol = tolerance(w.dtype)
        if not np.allclose(g, w, rtol=rtol, atol=atol):
            bad = ~np.isclose(g, w, rtol=rtol, atol=atol)
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))))
            return (f"output {k}: {int(bad.sum())} of {w.size} elements differ; first at "
                    f"{idx}: got {g[idx]}, expected {w[idx]} (max abs error {err:.3g})")
    return None


# ---- helpers -----------------------------------------------------------------------------


def _randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


# ---- references --------------------------------------------------------------------------


def _matmul(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [_f32(_f64(a) @ _f64(b))]


def _batch_matmul_nt(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [_f32(_f64(a) @ _f64(b).transpose(0, 2, 1))]


def _softmax(a: np.ndarray) -> list[np.ndarray]:
    x = _f64(a)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return [_f32(e / e.sum(axis=1, keepdims=True))]


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> list[np.ndarray]:
    v = _f64(x)
    mean = v.mean(axis=1, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=1, keepdims=True)
    return [_f32((v - mean) / np.sqrt(var + 1e-5) * _f64(gamma) + _f64(beta))]


def _conv2d_nchw(x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    n, _, h, wd = x.shape
    pad = np.pad(_f64(x), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for ry in range(3):
        for rx in range(3):
            window = pad[:, :, ry:ry + h, rx:rx + wd]
            out += np.einsum("nchw,fc->nfhw", window, _f64(w[:, :, ry, rx]))
    return [_f32(out)]


def _elementwise_chain(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    v = _f64(x)
    return [_f32(np.maximum(v * _f64(w) + _f64(b), 0.0) * 0.5 + v)]


def _row_sum(a: np.ndarray) -> list[np.ndarray]:
    return [_f32(_f64(a).sum(axis=1))]


def _transpose(a: np.ndarray) -> list[np.ndarray]:
    return [np.ascontiguousarray(a.T)]


def _stencil_5pt(a: np.ndarray) -> list[np.ndarray]:
    v = _f64(a)
    out = v.copy()
    out[1:-1, 1:-1] = (v[1:-1, 1:-1] + v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2]
                       + v[1:-1, 2:]) * np.float64(np.float32(0.2))
    return [_f32(out)]


def _dense_int8(a: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    return [(a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)]


_ERF = np.frompyfunc(math.erf, 1, 1)


def _gelu_fp16(x: np.ndarray) -> list[np.ndarray]:
    v = _f64(x)
    return [(v * 0.5 * (1.0 + _ERF(v / math.sqrt(2.0)).astype(np.float64))).astype(np.float16)]


def _mlp_dps(x: np.ndarray, w1: np.ndarray, b1: np.ndarray,
             w2: np.ndarray) -> list[np.ndarray]:
    return [_f32(np.maximum(_f64(x) @ _f64(w1) + _f64(b1), 0.0) @ _f64(w2))]


def _bias_relu_dps(h: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """What samples/mlp_dps_extern.c computes, for the interpreter."""
    np.maximum(h + b, np.float32(0), out=out)


def _rms_norm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-5) * weight


def _transformer_block(x: np.ndarray, mask: np.ndarray, norm1: np.ndarray, wq: np.ndarray,
                       wk: np.ndarray, wv: np.ndarray, wo: np.ndarray, norm2: np.ndarray,
                       w_gate: np.ndarray, w_up: np.ndarray,
                       w_down: np.ndarray) -> list[np.ndarray]:
    x, mask = _f64(x), _f64(mask)
    b, s, _ = x.shape
    xn = _rms_norm(x, _f64(norm1))
    heads = [(xn @ _f64(w)).reshape(b, s, 4, 16).transpose(0, 2, 1, 3) for w in (wq, wk, wv)]
    q, k, v = heads
    scores = q @ k.transpose(0, 1, 3, 2) * 0.25 + mask
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, 64)
    h = x + ctx @ _f64(wo)
    hn = _rms_norm(h, _f64(norm2))
    gate = hn @ _f64(w_gate)
    act = gate / (1.0 + np.exp(-gate))
    return [_f32(h + (act * (hn @ _f64(w_up))) @ _f64(w_down))]


def _conv3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Stride 1, zero padding 1: a sum over the nine taps of shifted slices."""
    n, _, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", padded[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out


def _resnet_block(x: np.ndarray, *params: np.ndarray) -> list[np.ndarray]:
    w1, g1, b1, m1, v1, w2, g2, b2, m2, v2, fc_w, fc_b = (_f64(p) for p in params)

    def bn(y: np.ndarray, g: np.ndarray, b: np.ndarray, m: np.ndarray,
           v: np.ndarray) -> np.ndarray:
        c = (slice(None), None, None)
        return (y - m[c]) / np.sqrt(v[c] + 1e-5) * g[c] + b[c]

    h = np.maximum(bn(_conv3x3(_f64(x), w1), g1, b1, m1, v1), 0.0)
    h = np.maximum(bn(_conv3x3(h, w2), g2, b2, m2, v2) + _f64(x), 0.0)
    padded = np.pad(h, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    pooled = np.full(h.shape[:2] + (8, 8), -np.inf)
    for i in range(3):
        for j in range(3):
            pooled = np.maximum(pooled, padded[:, :, i:i + 16:2, j:j + 16:2])
    return [_f32(pooled.mean(axis=(2, 3)) @ fc_w.T + fc_b)]


def _resnet_inputs(s: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    def norm() -> list[np.ndarray]:
        return [_randn(rng, 8, scale=0.5) + 1, _randn(rng, 8, scale=0.1),
                _randn(rng, 8, scale=0.1), (rng.random(8) + 0.5).astype(np.float32)]

    return [_randn(rng, s["n"], 8, 16, 16), _randn(rng, 8, 8, 3, 3, scale=0.2), *norm(),
            _randn(rng, 8, 8, 3, 3, scale=0.2), *norm(), _randn(rng, 10, 8, scale=0.3),
            _randn(rng, 10)]


def _transformer_inputs(s: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    seq = s["s"]
    causal = np.triu(np.full((seq, seq), -1e9, dtype=np.float32), k=1)
    return [_randn(rng, s["b"], seq, 64), causal, _randn(rng, 64) + np.float32(1),
            *(_randn(rng, 64, 64, scale=0.125) for _ in range(4)), _randn(rng, 64) + np.float32(1),
            _randn(rng, 64, 128, scale=0.125), _randn(rng, 64, 128, scale=0.125),
            _randn(rng, 128, 64, scale=0.09)]


def _randint8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def _mlp(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray,
         w3: np.ndarray, b3: np.ndarray) -> list[np.ndarray]:
    h1 = np.maximum(_f64(x) @ _f64(w1) + _f64(b1), 0.0)
    h2 = np.maximum(h1 @ _f64(w2) + _f64(b2), 0.0)
    return [_f32(h2 @ _f64(w3) + _f64(b3))]


SAMPLES: tuple[Sample, ...] = (
    Sample(
        "matmul.tir", "matmul", "loop",
        lambda s, rng: [_randn(rng, 64, 64), _randn(rng, 64, 64)],
        _matmul, (2,), {}, ({},),
    ),
    Sample(
        "batch_matmul_nt.tir", "batch_matmul_nt", "loop",
        lambda s, rng: [_randn(rng, s["batch"], 32, 16), _randn(rng, s["batch"], 24, 16)],
        _batch_matmul_nt, (2,), {"batch": 2}, ({"batch": 1}, {"batch": 5}, {"batch": 12}),
    ),
    Sample(
        "softmax.tir", "softmax", "loop",
        lambda s, rng: [_randn(rng, s["n"], 128, scale=4.0)],
        _softmax, (1,), {"n": 3}, ({"n": 1}, {"n": 7}, {"n": 64}),
    ),
    Sample(
        "layer_norm.tir", "layer_norm", "loop",
        lambda s, rng: [_randn(rng, s["n"], 256, scale=2.0) + np.float32(0.5),
                        _randn(rng, 256), _randn(rng, 256)],
        _layer_norm, (3,), {"n": 3}, ({"n": 1}, {"n": 5}, {"n": 33}),
    ),
    Sample(
        "conv2d_nchw.tir", "conv2d_nchw", "loop",
        lambda s, rng: [_randn(rng, s["n"], 4, 14, 14), _randn(rng, 8, 4, 3, 3)],
        _conv2d_nchw, (2,), {"n": 1}, ({"n": 1}, {"n": 3}),
    ),
    Sample(
        "elementwise_chain.tir", "fused_mul_add_relu_scale_add", "loop",
        lambda s, rng: [_randn(rng, s["n"]), _randn(rng, s["n"]), _randn(rng, s["n"])],
        _elementwise_chain, (3,), {"n": 50}, ({"n": 1}, {"n": 1000}, {"n": 4099}),
    ),
    Sample(
        "row_sum.tir", "row_sum", "loop",
        lambda s, rng: [_randn(rng, s["m"], s["n"])],
        _row_sum, (1,), {"m": 5, "n": 7},
        ({"m": 1, "n": 1}, {"m": 13, "n": 100}, {"m": 64, "n": 257}),
    ),
    Sample(
        "transpose.tir", "transpose", "loop",
        lambda s, rng: [_randn(rng, 64, 96)],
        _transpose, (1,), {}, ({},),
    ),
    Sample(
        "stencil_5pt.tir", "stencil_5pt", "loop",
        lambda s, rng: [_randn(rng, s["h"], s["w"])],
        _stencil_5pt, (1,), {"h": 6, "w": 7},
        ({"h": 3, "w": 4}, {"h": 17, "w": 33}, {"h": 64, "w": 100}),
    ),
    Sample(
        "dense_tiled.tir", "dense_tiled", "loop",
        lambda s, rng: [_randn(rng, s["m"], 64), _randn(rng, 64, 64)],
        _matmul, (2,), {"m": 9}, ({"m": 1}, {"m": 8}, {"m": 37}),
    ),
    Sample(
        "matmul_int8.tir", "dense_int8", "loop",
        lambda s, rng: [_randint8(rng, s["m"], 64), _randint8(rng, 32, 64)],
        _dense_int8, (2,), {"m": 3}, ({"m": 1}, {"m": 6}, {"m": 50}),
    ),
    Sample(
        "gelu_fp16.tir", "gelu_fp16", "loop",
        lambda s, rng: [(rng.standard_normal(s["n"]) * 3).astype(np.float16)],
        _gelu_fp16, (1,), {"n": 40}, ({"n": 1}, {"n": 333}, {"n": 4096}),
    ),
    Sample(
        "gemm_packed_layout.tir", "gemm_packed_layout", "loop",
        lambda s, rng: [_randn(rng, s["M"], s["K"]), _randn(rng, s["K"], 256)],
        _matmul, (2,), {"M": 3, "K": 5},
        ({"M": 1, "K": 1}, {"M": 7, "K": 33}, {"M": 64, "K": 70}),
    ),
    Sample(
        "mlp.tir", "main", "graph",
        lambda s, rng: [_randn(rng, s["n"], 64), _randn(rng, 64, 128, scale=0.2),
                        _randn(rng, 128), _randn(rng, 128, 64, scale=0.1), _randn(rng, 64),
                        _randn(rng, 64, 10, scale=0.2), _randn(rng, 10)],
        _mlp, (), {"n": 3}, ({"n": 2}, {"n": 16}),
    ),
    Sample(
        "mlp_dps.tir", "main", "graph",
        lambda s, rng: [_randn(rng, s["n"], 64), _randn(rng, 64, 128, scale=0.2),
                        _randn(rng, 128), _randn(rng, 128, 10, scale=0.2)],
        _mlp_dps, (), {"n": 3}, ({"n": 2}, {"n": 16}),
        externs={"mlp_bias_relu": _bias_relu_dps},
    ),
    Sample(
        "resnet_block.tir", "main", "graph",
        _resnet_inputs, _resnet_block, (), {"n": 2}, ({"n": 1}, {"n": 4}),
    ),
    Sample(
        "transformer_block.tir", "main", "graph",
        _transformer_inputs, _transformer_block, (), {"b": 2, "s": 5},
        ({"b": 1, "s": 7}, {"b": 2, "s": 16}),
    ),
)

BY_NAME: dict[str, Sample] = {s.name: s for s in SAMPLES}
LOOP_SAMPLES: tuple[Sample, ...] = tuple(s for s in SAMPLES if s.level == "loop")
GRAPH_SAMPLES: tuple[Sample, ...] = tuple(s for s in SAMPLES if s.level == "graph")
