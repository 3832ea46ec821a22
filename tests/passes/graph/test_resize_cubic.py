"""R.image.resize2d with method="cubic" as TVM 0.27 computes it (TOPI's spline of
`cubic_alpha`, taps clamped to the image, `cubic_exclude` renormalizing the taps inside):
run by the interpreter and compiled at -O0 and -O3, checked against PyTorch's bicubic
interpolation (alpha -0.75, clamped taps) and a NumPy transcription of TOPI's formula."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from graph_support import normalize_diagnostic, run_everywhere
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.printer import print_module

CUBIC = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2, 3, 4), "float32"), h: R.Tensor((1, 5, 4, 2), "int32")):
        n = T.int64()
        a = R.image.resize2d(x, (7, 9), method="cubic")
        b = R.image.resize2d(x, (5, 3), method="cubic",
                             coordinate_transformation_mode="align_corners")
        c = R.image.resize2d(x, (6, 8), method="cubic", cubic_alpha=-0.5, cubic_exclude=1,
                             coordinate_transformation_mode="asymmetric")
        d = R.image.resize2d(h, (7, 3), layout="NHWC", method="cubic",
                             coordinate_transformation_mode="pytorch_half_pixel")
        e = R.image.resize2d(x, (2, 2), method="cubic", cubic_exclude=1,
                             coordinate_transformation_mode="tf_half_pixel_for_nn",
                             out_dtype="float16")
        gv = (a, b, c, d, e)
        return gv
"""


def _coords(out: int, size: int, mode: str) -> np.ndarray:
    x = np.arange(out, dtype=np.float64)
    scale = size / out
    return {"half_pixel": (x + 0.5) * scale - 0.5, "asymmetric": x * scale,
            "pytorch_half_pixel": (x + 0.5) * scale - 0.5 if out > 1 else 0 * x,
            "tf_half_pixel_for_nn": (x + 0.5) * scale,
            "align_corners": x * (size - 1) / max(out - 1, 1)}[mode]


def _weights(out: int, size: int, mode: str, alpha: float, exclude: bool) -> np.ndarray:
    """The (out, size) matrix of each output position's weights on the input positions."""
    m = np.zeros((out, size))
    for o, c in enumerate(_coords(out, size, mode)):
        base = int(np.floor(c))
        t = c - base
        w = [alpha * (t**3 - 2 * t**2 + t), (alpha + 2) * t**3 - (3 + alpha) * t**2 + 1,
             -(alpha + 2) * t**3 + (3 + 2 * alpha) * t**2 - alpha * t, -alpha * t**3 + alpha * t**2]
        taps = [base - 1 + j for j in range(4)]
        if exclude:
            w = [0.0 if not 0 <= p < size else v for p, v in zip(taps, w)]
            w = [v / sum(w) for v in w]
        for p, v in zip(taps, w):
            m[o, min(max(p, 0), size - 1)] += v
    return m


def _bicubic(x: np.ndarray, size: tuple[int, int], mode: str, alpha: float = -0.75,
             exclude: bool = False) -> np.ndarray:
    """TOPI's bicubic resize of NCHW data, in float64."""
    wy = _weights(size[0], x.shape[2], mode, alpha, exclude)
    wx = _weights(size[1], x.shape[3], mode, alpha, exclude)
    return np.einsum("oh,nchw,pw->ncop", wy, x.astype(np.float64), wx)


def test_cubic_in_every_mode(tmp_path: Path) -> None:
    """Upscaling, downscaling, both alphas, with and without exclusion, int and NHWC data,
    a float16 result; half_pixel and align_corners at alpha -0.75 are PyTorch's bicubic."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 2, 3, 4)).astype("float32")
    h = rng.integers(-50, 50, (1, 5, 4, 2)).astype("int32")
    hn = h.transpose(0, 3, 1, 2)
    t = torch.tensor(x)
    torch_half = torch.nn.functional.interpolate(t, (7, 9), mode="bicubic", align_corners=False)
    torch_corners = torch.nn.functional.interpolate(t, (5, 3), mode="bicubic",
                                                    align_corners=True)
    for got in run_everywhere(tmp_path, CUBIC, [x, h]):
        np.testing.assert_allclose(got[0], torch_half.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[0], _bicubic(x, (7, 9), "half_pixel"), atol=1e-5)
        np.testing.assert_allclose(got[1], torch_corners.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[2], _bicubic(x, (6, 8), "asymmetric", -0.5, True),
                                   atol=1e-5)
        want = _bicubic(hn, (7, 3), "pytorch_half_pixel").transpose(0, 2, 3, 1)
        assert got[3].dtype == np.int32
        np.testing.assert_array_equal(got[3], np.trunc(want).astype("int32"))
        assert got[4].dtype == np.float16
        np.testing.assert_allclose(got[4], _bicubic(x, (2, 2), "tf_half_pixel_for_nn",
                                                    exclude=True), atol=2e-3)


def test_cubic_prints_and_parses_back() -> None:
    mod = parse(CUBIC)
    printed = print_module(mod)
    assert structural_equal(parse(printed), mod)
    assert "cubic_alpha=-0.5, cubic_exclude=1" in printed


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 4), "float32")):
        gv = CALL
        return gv
"""


@pytest.mark.parametrize(("call", "message"), [
    ("R.image.resize2d(x, (6, 8), method=\"bicubic\")", "R.image.resize2d: unknown method "
     "'bicubic' (expected 'nearest_neighbor', 'linear' or 'cubic')"),
    ("R.image.resize2d(x, (6, 8), method=\"cubic\", cubic_exclude=2)",
     "R.image.resize2d: cubic_exclude must be 0 or 1, got 2"),
    ("R.image.resize2d(x, (6, 8), method=\"cubic\", cubic_alpha=\"a\")",
     "R.image.resize2d: argument 'cubic_alpha' must be a number"),
    ("R.image.resize2d(x, (1, 8), method=\"cubic\", "
     "coordinate_transformation_mode=\"align_corners\")",
     "R.image.resize2d: 'align_corners' needs an output height of at least 2, got 1"),
])
def test_misuse_is_a_diagnostic_at_the_call(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and (diag.span.line, diag.span.col) == (5, 14)
