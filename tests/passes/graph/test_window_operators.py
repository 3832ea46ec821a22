"""Convolution and pooling (`R.nn.conv1d/2d/3d`, `R.nn.max_pool*`, `R.nn.avg_pool*`,
`R.nn.adaptive_avg_pool*`, pooling in blocked layouts too): the reference interpreter against a
per-element loop written from the definitions, each operator compiled at -O0 and -O3 against
the interpreter, the printed form read back, and the diagnostics for wrong attributes and
shapes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import assert_levels_agree, compile_levels, functions_module
from tirc.frontend import parse
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module

CASES: dict[str, tuple[str, str]] = {
    "conv2d_groups": ('x: R.Tensor((2, 4, 7, 6), "float32"), w: R.Tensor((6, 2, 3, 3), "float32")',
                      "R.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1), groups=2)"),
    "conv2d_dilated": ('x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 2), "float32")',
                       "R.nn.conv2d(x, w, strides=(1, 2), padding=(2, 0, 1, 1), dilation=(2, 1))"),
    "conv2d_nhwc": ('x: R.Tensor((1, 5, 6, 3), "float32"), w: R.Tensor((3, 3, 3, 4), "float32")',
                    'R.nn.conv2d(x, w, padding=1, data_layout="NHWC", kernel_layout="HWIO")'),
    "conv2d_out_layout": ('x: R.Tensor((1, 3, 5, 6), "float32"), '
                          'w: R.Tensor((4, 3, 3, 3), "float32")',
                          'R.nn.conv2d(x, w, padding=1, out_layout="NHWC")'),
    "conv2d_int8": ('x: R.Tensor((1, 3, 5, 6), "int8"), w: R.Tensor((4, 3, 3, 3), "int8")',
                    'R.nn.conv2d(x, w, padding=1, out_dtype="int32")'),
    "conv2d_half": ('x: R.Tensor((1, 3, 5, 6), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")',
                    'R.nn.conv2d(x, w, out_dtype="float16")'),
    "conv2d_symbolic": ('x: R.Tensor(("n", 2, 6, 5), "float32"), '
                        'w: R.Tensor((3, 2, 3, 3), "float32")',
                        "R.nn.conv2d(x, w, strides=2, padding=1)"),
    "conv1d_depthwise": ('x: R.Tensor((2, 4, 9), "float32"), w: R.Tensor((4, 1, 3), "float32")',
                         "R.nn.conv1d(x, w, strides=2, padding=(1, 2), groups=4)"),
    "conv3d": ('x: R.Tensor((1, 2, 4, 5, 4), "float32"), w: R.Tensor((3, 2, 2, 3, 2), "float32")',
               "R.nn.conv3d(x, w, padding=1)"),
    "max_pool2d": ('x: R.Tensor((2, 3, 7, 7), "float32")',
                   "R.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))"),
    "max_pool2d_ceil": ('x: R.Tensor((2, 3, 8, 7), "float32")',
                        "R.nn.max_pool2d(x, pool_size=(3, 2), strides=(2, 2), ceil_mode=True)"),
    "max_pool2d_int": ('x: R.Tensor((2, 3, 8, 7), "int32")',
                       "R.nn.max_pool2d(x, pool_size=2, strides=2, dilation=2, padding=1)"),
    "avg_pool2d": ('x: R.Tensor((2, 3, 7, 7), "float32")',
                   "R.nn.avg_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))"),
    "avg_pool2d_include_pad": ('x: R.Tensor((2, 3, 7, 7), "float32")',
                               "R.nn.avg_pool2d(x, pool_size=3, strides=2, padding=1, "
                               "count_include_pad=True)"),
    "avg_pool2d_ceil": ('x: R.Tensor((1, 2, 8, 7), "float32")',
                        "R.nn.avg_pool2d(x, pool_size=3, strides=2, padding=1, ceil_mode=True, "
                        "count_include_pad=True)"),
    "avg_pool2d_dilated": ('x: R.Tensor((1, 2, 8, 7), "float32")',
                           "R.nn.avg_pool2d(x, pool_size=3, strides=2, padding=1, "
                           "ceil_mode=True, dilation=(1, 2))"),
    "avg_pool1d": ('x: R.Tensor((1, 2, 9), "float32")',
                   "R.nn.avg_pool1d(x, pool_size=3, strides=2, padding=1)"),
    "max_pool3d_ndhwc": ('x: R.Tensor((1, 5, 4, 6, 2), "float32")',
                         'R.nn.max_pool3d(x, pool_size=2, strides=2, layout="NDHWC")'),
    "adaptive_avg_pool2d": ('x: R.Tensor((2, 3, 7, 5), "float32")',
                            "R.nn.adaptive_avg_pool2d(x, output_size=(3, 2))"),
    "adaptive_global": ('x: R.Tensor((2, 3, 7, 5), "float32")',
                        "R.nn.adaptive_avg_pool2d(x, output_size=1)"),
    "adaptive_identity": ('x: R.Tensor((2, 7, 5, 3), "float32")',
                          'R.nn.adaptive_avg_pool2d(x, layout="NHWC")'),
    "adaptive_avg_pool1d": ('x: R.Tensor((2, 3, 10), "float32")',
                            "R.nn.adaptive_avg_pool1d(x, 4)"),
    "max_pool2d_nchw4c": ('x: R.Tensor((2, 2, 7, 7, 4), "float32")',
                          'R.nn.max_pool2d(x, pool_size=3, strides=2, padding=1, '
                          'layout="NCHW4c")'),
    "avg_pool2d_nchw4c_ceil": ('x: R.Tensor((1, 2, 8, 7, 4), "float32")',
                               "R.nn.avg_pool2d(x, pool_size=3, strides=2, padding=1, "
                               'ceil_mode=True, layout="NCHW4c")'),
    "avg_pool2d_nhwc8c": ('x: R.Tensor((1, 6, 6, 2, 8), "float32")',
                          "R.nn.avg_pool2d(x, pool_size=2, strides=2, padding=1, "
                          'layout="NHWC8c", count_include_pad=True)'),
    "adaptive_nchw4c": ('x: R.Tensor((2, 2, 7, 5, 4), "float32")',
                        'R.nn.adaptive_avg_pool2d(x, output_size=(3, 2), layout="NCHW4c")'),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    return compile_levels(functions_module(CASES), tmp_path_factory.mktemp("window"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    assert_levels_agree(*built, name, 7)


# ---- the interpreter against the definitions, one output element at a time ----------------


def naive_conv2d(x: np.ndarray, w: np.ndarray, stride: tuple[int, int],
                 pads: tuple[int, int, int, int], dil: tuple[int, int], groups: int
                 ) -> np.ndarray:
    """out[n, f, y, x] = sum over the group's channels c and taps (i, j) of
    data[n, g*C + c, y*s - top + i*d, x*s - left + j*d] * w[f, c, i, j] (zero outside)."""
    n, _, h, wd = x.shape
    o, per, kh, kw = w.shape
    top, left, bottom, right = pads
    oh = (h + top + bottom - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + left + right - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    for b, f, y, z in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = f // (o // groups)
        for c, i, j in itertools.product(range(per), range(kh), range(kw)):
            r = y * stride[0] - top + i * dil[0]
            q = z * stride[1] - left + j * dil[1]
            if 0 <= r < h and 0 <= q < wd:
                out[b, f, y, z] += x[b, g * per + c, r, q] * w[f, c, i, j]
    return out


def naive_pool1d(x: np.ndarray, k: int, s: int, pad: int, ceil: bool, kind: str,
                 include_pad: bool) -> np.ndarray:
    """Pooling over the last axis with the same padding on both sides."""
    size = x.shape[-1]
    out_n = (size + 2 * pad - k + (s - 1 if ceil else 0)) // s + 1
    out = np.zeros(x.shape[:-1] + (out_n,))
    for p in range(out_n):
        taps = [p * s - pad + t for t in range(k)]
        inside = [t for t in taps if 0 <= t < size]
        vals = x[..., inside]
        if kind == "max":
            out[..., p] = vals.max(axis=-1)
        else:
            count = sum(1 for t in taps if -pad <= t < size + pad) if include_pad else len(inside)
            out[..., p] = vals.sum(axis=-1) / count
    return out


def test_interpreter_conv2d_is_the_definition() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((6, 2, 3, 2))
    text = functions_module({"main": ('x: R.Tensor((2, 4, 7, 6), "float64"), '
                            'w: R.Tensor((6, 2, 3, 2), "float64")',
                            "R.nn.conv2d(x, w, strides=(2, 1), padding=(1, 0, 2, 1), "
                            "dilation=(1, 2), groups=2)")})
    got = Interpreter(parse(text)).call("main", x, w)
    want = naive_conv2d(x, w, (2, 1), (1, 0, 2, 1), (1, 2), 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    nhwc = functions_module({"main": ('x: R.Tensor((2, 7, 6, 4), "float64"), '
                            'w: R.Tensor((3, 2, 2, 6), "float64")',
                            "R.nn.conv2d(x, w, strides=(2, 1), padding=(1, 0, 2, 1), "
                            'dilation=(1, 2), groups=2, data_layout="NHWC", '
                            'kernel_layout="HWIO")')})
    got = Interpreter(parse(nhwc)).call("main", x.transpose(0, 2, 3, 1),
                                        w.transpose(2, 3, 1, 0))
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-12)


@pytest.mark.parametrize("kind, include, ceil", [
    ("max", False, False), ("max", False, True), ("avg", False, False), ("avg", True, False),
    ("avg", True, True), ("avg", False, True)])
def test_interpreter_pooling_is_the_definition(kind: str, include: bool, ceil: bool) -> None:
    x = np.random.default_rng(4).standard_normal((2, 3, 10))
    call = (f"R.nn.{kind}_pool1d(x, pool_size=3, strides=2, padding=1, ceil_mode={ceil}, "
            f"count_include_pad={include})")
    text = functions_module({"main": ('x: R.Tensor((2, 3, 10), "float64")', call)})
    got = Interpreter(parse(text)).call("main", x)
    np.testing.assert_allclose(got, naive_pool1d(x, 3, 2, 1, ceil, kind, include), rtol=1e-12)


def test_interpreter_adaptive_pooling_windows() -> None:
    x = np.arange(10.0).reshape(1, 1, 10)
    text = functions_module({"main": ('x: R.Tensor((1, 1, 10), "float64")',
                            "R.nn.adaptive_avg_pool1d(x, output_size=4)")})
    got = Interpreter(parse(text)).call("main", x)
    windows = [(0, 3), (2, 5), (5, 8), (7, 10)]  # [floor(o*10/4), ceil((o+1)*10/4))
    np.testing.assert_allclose(got[0, 0], [x[0, 0, a:b].mean() for a, b in windows])


@pytest.mark.parametrize("call", [
    'R.nn.max_pool2d(x, pool_size=3, strides=2, padding=1, layout="NCHW4c")',
    'R.nn.avg_pool2d(x, pool_size=3, strides=2, padding=(1, 0), ceil_mode=True, '
    'layout="NCHW4c")',
    'R.nn.adaptive_avg_pool2d(x, output_size=(3, 2), layout="NCHW4c")'])
def test_interpreter_blocked_pooling_is_the_unpacked_one(call: str) -> None:
    """Pooling `NCHW4c` data is pooling the `NCHW` tensor it packs (channel `C * 4 + c`),
    packed the same way: the sub-axis passes through as the channels do."""
    x = np.random.default_rng(5).standard_normal((2, 2, 7, 7, 4))
    text = functions_module({"main": ('x: R.Tensor((2, 2, 7, 7, 4), "float64")', call)})
    got = Interpreter(parse(text)).call("main", x)
    plain = x.transpose(0, 1, 4, 2, 3).reshape(2, 8, 7, 7)
    text = functions_module({"main": ('x: R.Tensor((2, 8, 7, 7), "float64")',
                                      call.replace(', layout="NCHW4c"', ""))})
    want = Interpreter(parse(text)).call("main", plain)
    want = want.reshape(2, 2, 4, *want.shape[2:]).transpose(0, 1, 3, 4, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_printed_calls_read_back() -> None:
    mod = parse(functions_module(CASES))
    again = parse(print_module(mod))
    assert print_module(again) == print_module(mod)


@pytest.mark.parametrize("params, body, message", [
    ('x: R.Tensor((1, 4, 5, 5), "float32"), w: R.Tensor((2, 3, 3, 3), "float32")',
     "R.nn.conv2d(x, w)",
     "R.nn.conv2d: the data has 4 channels; the weight takes 3"),
    ('x: R.Tensor((1, 4, 5, 5), "float32"), w: R.Tensor((3, 2, 3, 3), "float32")',
     "R.nn.conv2d(x, w, groups=2)",
     "R.nn.conv2d: 3 output channels do not divide into 2 groups"),
    ('x: R.Tensor((1, 4, 5, 5), "float32"), w: R.Tensor((2, 4, 3, 3), "float32")',
     'R.nn.conv2d(x, w, data_layout="NCHW4c")',
     "R.nn.conv2d: data_layout 'NCHW4c' is not an order of the axes NCHW"),
    ('x: R.Tensor((1, 4, 5, 5), "float32"), w: R.Tensor((2, 4, 3, 3), "float32")',
     "R.nn.conv2d(x, w, padding=(1, 1, 1))",
     "R.nn.conv2d: 'padding' needs 1, 2 or 4 values, got 3"),
    ('x: R.Tensor((1, 4, 2, 2), "float32"), w: R.Tensor((2, 4, 3, 3), "float32")',
     "R.nn.conv2d(x, w)", "R.nn.conv2d: the window does not fit along axis H: 0 positions"),
    ('x: R.Tensor((1, 4, 5), "float32"), w: R.Tensor((2, 4, 3, 3), "float32")',
     "R.nn.conv2d(x, w)", "R.nn.conv2d: 'data' must have 4 dimensions, got (1, 4, 5)"),
    ('x: R.Tensor((1, 4, 5, 5), "float32"), w: R.Tensor((2, 4, 3, 3), "int32")',
     "R.nn.conv2d(x, w)", "R.nn.conv2d: dtype mismatch: float32 and int32"),
    ('x: R.Tensor((1, 4, 5, 5), "int32")', "R.nn.avg_pool2d(x, pool_size=2)",
     "R.nn.avg_pool2d: needs a floating-point tensor, got int32"),
    ('x: R.Tensor((1, 4, 5, 5), "float32")', "R.nn.max_pool2d(x, pool_size=2, padding=2)",
     "R.nn.max_pool2d: padding 2, 2 along axis H must be smaller than the window 2"),
    ('x: R.Tensor((1, 4, 5, 5), "float32")', "R.nn.max_pool2d(x, strides=0)",
     "R.nn.max_pool2d: 'strides' must be positive, got (0, 0)"),
    ('x: R.Tensor((1, 4, "n", 5), "float32")', "R.nn.adaptive_avg_pool2d(x, 2)",
     "R.nn.adaptive_avg_pool2d: needs a constant input size along axis H, got n"),
    ('x: R.Tensor((1, 4, 5, 5), "float32")', 'R.nn.max_pool2d(x, layout="NCHW4c")',
     "R.nn.max_pool2d: 'data' must have 5 dimensions, got (1, 4, 5, 5)"),
    ('x: R.Tensor((1, 4, 5, 5, 4), "float32")', 'R.nn.max_pool2d(x, layout="NCHW4h")',
     "R.nn.max_pool2d: layout 'NCHW4h' is not an order of the axes NCHW, with blocked "
     "sub-axes of N or C only (such as NCHW16c)"),
    ('x: R.Tensor((1, 4, 5, 5, 4), "float32")', 'R.nn.avg_pool2d(x, layout="NCHWc")',
     "R.nn.avg_pool2d: layout 'NCHWc' is not an order of the axes NCHW"),
    ('x: R.Tensor((1, 4, 5, 5, 4), "float32")',
     'R.nn.adaptive_avg_pool2d(x, layout="NCHW4c", out_layout="NHWC")',
     "R.nn.adaptive_avg_pool2d: out_layout 'NHWC' must equal the blocked layout 'NCHW4c'"),
])
def test_wrong_calls_are_diagnostics(params: str, body: str, message: str) -> None:
    from tirc.passes.graph.normalize import Normalize

    with pytest.raises(CompileError) as err:
        Normalize()(parse(functions_module({"main": (params, body)})))
    assert message in err.value.diagnostics[0].message


def test_interpreter_names_a_blocked_layout() -> None:
    """Run without shape inference, the interpreter still refuses a convolution's `NCHW16c`
    by name (pooling runs it)."""
    from tirc.ir.interpreter import InterpreterError

    text = functions_module({"main": ('x: R.Tensor((1, 2, 4, 4, 16), "float32"), '
                                      'w: R.Tensor((4, 32, 1, 1), "float32")',
                                      'R.nn.conv2d(x, w, data_layout="NCHW16c")')})
    with pytest.raises(InterpreterError, match="layout 'NCHW16c' of a 5-d tensor is not an "
                                               "order of the axes NCHW"):
        Interpreter(parse(text)).call("main", np.zeros((1, 2, 4, 4, 16), np.float32),
                                      np.zeros((4, 32, 1, 1), np.float32))
