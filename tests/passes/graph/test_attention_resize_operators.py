"""Attention, transposed convolution and resizing (`R.nn.attention`,
`R.nn.conv1d_transpose`/`conv2d_transpose`, `R.image.resize2d`): each operator compiled at -O0
and -O3 against the interpreter, the interpreter against per-element loops written from the
definitions, the printed form read back, and the diagnostics for wrong calls."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import assert_levels_agree, compile_levels, functions_module
from tirc.frontend import parse
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module


def tensor(shape: str, dt: str = "float32") -> str:
    return f'R.Tensor({shape}, "{dt}")'


def sym(*dims: int) -> str:
    """A shape whose first dimension is the symbolic `n`."""
    return "(" + ", ".join(['"n"', *map(str, dims)]) + ")"


QKV = (f"q: {tensor('(2, 3, 2, 4)')}, k: {tensor('(2, 5, 2, 4)')}, "
       f"v: {tensor('(2, 5, 2, 3)')}")

CASES: dict[str, tuple[str, str]] = {
    "attention": (QKV, "R.nn.attention(q, k, v)"),
    "attention_bias_top_left": (f"{QKV}, b: {tensor('(1, 2, 3, 5)')}",
                                'R.nn.attention(q, k, v, b, scale=0.5, causal_mask="TopLeft")'),
    "attention_bottom_right": (QKV, 'R.nn.attention(q, k, v, causal_mask="BottomRight")'),
    "attention_long_query": (f"q: {tensor('(1, 4, 1, 2)')}, k: {tensor('(1, 2, 1, 2)')}, "
                             f"v: {tensor('(1, 2, 1, 3)')}, b: {tensor('(1, 1, 4, 2)')}",
                             'R.nn.attention(q, k, v, b, causal_mask="BottomRight")'),
    "attention_symbolic": (f"q: {tensor(sym(3, 2, 4))}, k: {tensor(sym(4, 2, 4))}, "
                           f"v: {tensor(sym(4, 2, 2))}, b: {tensor(sym(1, 1, 4))}",
                           'R.nn.attention(q, k, v, b, causal_mask="TopLeft")'),
    "conv1d_transpose": (f"x: {tensor('(2, 4, 5)')}, w: {tensor('(4, 3, 3)')}",
                         "R.nn.conv1d_transpose(x, w, strides=2, padding=(1, 0), "
                         "output_padding=1, groups=2)"),
    "conv1d_transpose_crop": (f"x: {tensor('(1, 2, 6)')}, w: {tensor('(2, 2, 2)')}",
                              "R.nn.conv1d_transpose(x, w, strides=3, padding=(3, 1), "
                              "dilation=2, output_padding=2)"),
    "conv2d_transpose": (f"x: {tensor('(1, 4, 5, 6)')}, w: {tensor('(4, 3, 3, 2)')}",
                         "R.nn.conv2d_transpose(x, w, strides=(2, 1), padding=(1, 0, 0, 1), "
                         "output_padding=(1, 0), groups=2)"),
    "conv2d_transpose_nhwc": (f"x: {tensor('(2, 4, 3, 3)')}, w: {tensor('(2, 3, 2, 3)')}",
                              'R.nn.conv2d_transpose(x, w, strides=2, padding=1, dilation=(1, 2), '
                              'data_layout="NHWC", kernel_layout="HWOI", out_layout="NCHW")'),
    "conv2d_transpose_int8": (f"x: {tensor('(1, 2, 3, 4)', 'int8')}, "
                              f"w: {tensor('(2, 2, 2, 2)', 'int8')}",
                              'R.nn.conv2d_transpose(x, w, strides=2, out_dtype="int32")'),
    "conv2d_transpose_symbolic": (f"x: {tensor(sym(2, 3, 3))}, w: {tensor('(2, 1, 3, 3)')}",
                                  "R.nn.conv2d_transpose(x, w, strides=2, padding=1, groups=2)"),
    "resize_linear": (f"x: {tensor('(2, 3, 3, 4)')}", "R.image.resize2d(x, (7, 9))"),
    "resize_linear_corners": (f"x: {tensor('(1, 2, 4, 5)')}",
                              'R.image.resize2d(x, (5, 3), '
                              'coordinate_transformation_mode="align_corners")'),
    "resize_linear_int": (f"x: {tensor('(1, 2, 3, 3)', 'int32')}",
                          'R.image.resize2d(x, (6, 5), '
                          'coordinate_transformation_mode="asymmetric")'),
    "resize_nearest_asymmetric": (f"x: {tensor('(1, 2, 3, 4)')}",
                                  'R.image.resize2d(x, (6, 8), method="nearest_neighbor", '
                                  'coordinate_transformation_mode="asymmetric")'),
    "resize_nearest_floor": (f"x: {tensor('(1, 2, 6, 5)')}",
                             'R.image.resize2d(x, (4, 8), method="nearest_neighbor", '
                             'rounding_method="floor")'),
    "resize_nearest_corners_ties": (f"x: {tensor('(1, 1, 3, 5)')}",
                                    'R.image.resize2d(x, (5, 9), method="nearest_neighbor", '
                                    'coordinate_transformation_mode="align_corners")'),
    "resize_nearest_nhwc": (f"x: {tensor('(1, 4, 6, 3)')}",
                            'R.image.resize2d(x, R.shape([8, 2]), layout="NHWC", '
                            'method="nearest_neighbor", '
                            'coordinate_transformation_mode="pytorch_half_pixel", '
                            'rounding_method="round_prefer_ceil")'),
    "resize_nearest_tf": (f"x: {tensor('(1, 2, 3, 4)')}",
                          'R.image.resize2d(x, (4, 2), method="nearest_neighbor", '
                          'coordinate_transformation_mode="tf_half_pixel_for_nn", '
                          'rounding_method="ceil", out_dtype="float16")'),
    "resize_symbolic": (f"x: {tensor(sym(2, 3, 3))}",
                        'R.image.resize2d(x, (4, 6), rounding_method="round_prefer_floor", '
                        'method="nearest_neighbor")'),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    return compile_levels(functions_module(CASES), tmp_path_factory.mktemp("attention_resize"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    assert_levels_agree(*built, name, 11)


# ---- the interpreter against the definitions, one output element at a time ----------------


def run(params: str, call: str, *args: np.ndarray) -> np.ndarray:
    return Interpreter(parse(functions_module({"main": (params, call)}))).call("main", *args)


def naive_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None,
                    scale: float | None, mask: str | None) -> np.ndarray:
    """out[b, i, h, :] = sum_j p_j v[b, j, h, :], p the softmax over the kept keys j of
    (q[b, i, h] . k[b, j, h]) * scale + bias[b, h, i, j] (TVM's masks: j <= i, or
    j <= i + |seq - seq_kv|)."""
    batch, seq, heads, dim = q.shape
    seq_kv = k.shape[1]
    out = np.zeros((batch, seq, heads, v.shape[3]))
    for b, i, h in itertools.product(range(batch), range(seq), range(heads)):
        offset = 0 if mask == "TopLeft" else abs(seq - seq_kv)
        keys = [j for j in range(seq_kv) if mask is None or j <= i + offset]
        logits = []
        for j in keys:
            s = sum(q[b, i, h, d] * k[b, j, h, d] for d in range(dim))
            s = s * scale if scale is not None else s / math.sqrt(dim)
            if bias is not None:
                s += bias[min(b, bias.shape[0] - 1), min(h, bias.shape[1] - 1),
                          min(i, bias.shape[2] - 1), j]
            logits.append(s)
        top = max(logits)
        weights = [math.exp(s - top) for s in logits]
        total = sum(weights)
        for j, wgt in zip(keys, weights):
            out[b, i, h] += wgt / total * v[b, j, h]
    return out


@pytest.mark.parametrize("seq, seq_kv, mask, scale, bias_shape", [
    (3, 5, None, None, None), (3, 5, "TopLeft", 0.3, (2, 1, 3, 5)),
    (5, 3, "BottomRight", None, (1, 2, 1, 3)), (2, 4, "BottomRight", 1.5, None),
    (4, 2, "TopLeft", None, None)])
def test_interpreter_attention_is_the_definition(seq: int, seq_kv: int, mask: str | None,
                                                 scale: float | None,
                                                 bias_shape: tuple[int, ...] | None) -> None:
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((2, seq, 2, 3)), rng.standard_normal((2, seq_kv, 2, 3))
    v = rng.standard_normal((2, seq_kv, 2, 4))
    params = (f"q: {tensor(str((2, seq, 2, 3)), 'float64')}, "
              f"k: {tensor(str((2, seq_kv, 2, 3)), 'float64')}, "
              f"v: {tensor(str((2, seq_kv, 2, 4)), 'float64')}")
    args, extra = [q, k, v], ""
    bias = None
    if bias_shape is not None:
        bias = rng.standard_normal(bias_shape)
        params += f", b: {tensor(str(bias_shape), 'float64')}"
        args.append(bias)
        extra = ", b"
    attrs = "".join([f", scale={scale}" if scale is not None else "",
                     f', causal_mask="{mask}"' if mask else ""])
    got = run(params, f"R.nn.attention(q, k, v{extra}{attrs})", *args)
    np.testing.assert_allclose(got, naive_attention(q, k, v, bias, scale, mask), rtol=1e-12)


def test_bias_of_one_batch_broadcasts_over_a_symbolic_batch() -> None:
    """A bias of batch 1 broadcasts over the query's symbolic batch `n`: no size is assumed
    equal to it (a run-time check of `1 == n` refused every batch but 1)."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal(s) for s in ((3, 2, 1, 2), (3, 4, 1, 2), (3, 4, 1, 3)))
    bias = rng.standard_normal((1, 1, 2, 4))
    params = ", ".join(f"{name}: {tensor(sym(*a.shape[1:]), 'float64')}"
                       for name, a in (("q", q), ("k", k), ("v", v)))
    params += f", b: {tensor('(1, 1, 2, 4)', 'float64')}"
    got = run(params, "R.nn.attention(q, k, v, b)", q, k, v, bias)
    np.testing.assert_allclose(got, naive_attention(q, k, v, bias, None, None), rtol=1e-12)


def naive_conv2d_transpose(x: np.ndarray, w: np.ndarray, stride: tuple[int, int],
                           pads: tuple[int, int, int, int], out_pad: tuple[int, int],
                           dil: tuple[int, int], groups: int) -> np.ndarray:
    """out[n, g*O + o, y, z] = sum over the group's channels c and taps (i, j) of
    x[n, c, r, q] * w[c, o, i, j] where r*s - top + i*d = y and q*s - left + j*d = z."""
    n, channels, h, wd = x.shape
    per, o_per, kh, kw = channels // groups, w.shape[1], w.shape[2], w.shape[3]
    top, left, bottom, right = pads
    oh = (h - 1) * stride[0] - top - bottom + dil[0] * (kh - 1) + out_pad[0] + 1
    ow = (wd - 1) * stride[1] - left - right + dil[1] * (kw - 1) + out_pad[1] + 1
    out = np.zeros((n, groups * o_per, oh, ow))
    for b, f, y, z in itertools.product(range(n), range(groups * o_per), range(oh), range(ow)):
        g, o = divmod(f, o_per)
        for c, i, j in itertools.product(range(g * per, (g + 1) * per), range(kh), range(kw)):
            r, ry = divmod(y + top - i * dil[0], stride[0])
            q, rz = divmod(z + left - j * dil[1], stride[1])
            if ry == 0 and rz == 0 and 0 <= r < h and 0 <= q < wd:
                out[b, f, y, z] += x[b, c, r, q] * w[c, o, i, j]
    return out


@pytest.mark.parametrize("stride, pads, out_pad, dil, groups", [
    ((2, 1), (1, 0, 0, 1), (1, 0), (1, 1), 2), ((3, 2), (2, 1, 0, 3), (2, 1), (2, 1), 1),
    ((1, 1), (0, 0, 0, 0), (0, 0), (1, 2), 4)])
def test_interpreter_conv_transpose_is_the_definition(
        stride: tuple[int, int], pads: tuple[int, int, int, int], out_pad: tuple[int, int],
        dil: tuple[int, int], groups: int) -> None:
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((2, 4, 4, 3)), rng.standard_normal((4, 2, 3, 2))
    params = f"x: {tensor('(2, 4, 4, 3)', 'float64')}, w: {tensor('(4, 2, 3, 2)', 'float64')}"
    call = (f"R.nn.conv2d_transpose(x, w, strides={stride}, padding={pads}, "
            f"output_padding={out_pad}, dilation={dil}, groups={groups})")
    want = naive_conv2d_transpose(x, w, stride, pads, out_pad, dil, groups)
    np.testing.assert_allclose(run(params, call, x, w), want, rtol=1e-12, atol=1e-12)
    nhwc = call[:-1] + ', data_layout="NHWC", kernel_layout="HWIO")'
    got = run(f"x: {tensor('(2, 4, 3, 4)', 'float64')}, "
              f"w: {tensor('(3, 2, 4, 2)', 'float64')}", nhwc,
              x.transpose(0, 2, 3, 1), w.transpose(2, 3, 0, 1))
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-12, atol=1e-12)


def test_interpreter_conv1d_transpose_matches_the_2d_form() -> None:
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((1, 2, 5)), rng.standard_normal((2, 3, 3))
    got = run(f"x: {tensor('(1, 2, 5)', 'float64')}, w: {tensor('(2, 3, 3)', 'float64')}",
              "R.nn.conv1d_transpose(x, w, strides=2, padding=(0, 2), output_padding=1)", x, w)
    want = naive_conv2d_transpose(x[:, :, None], w[:, :, None], (1, 2), (0, 0, 0, 2), (0, 1),
                                  (1, 1), 1)
    np.testing.assert_allclose(got, want[:, :, 0], rtol=1e-12)


def coordinate(o: int, n_in: int, n_out: int, mode: str) -> float:
    """The source coordinate of output position `o` (the ONNX Resize definitions)."""
    if mode == "half_pixel":
        return (o + 0.5) * n_in / n_out - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) * n_in / n_out - 0.5 if n_out > 1 else 0.0
    if mode == "align_corners":
        return o * (n_in - 1) / (n_out - 1)
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) * n_in / n_out
    return o * n_in / n_out


def naive_resize(x: np.ndarray, size: tuple[int, int], method: str, mode: str,
                 rounding: str) -> np.ndarray:
    """Each output pixel of an NCHW image from the source coordinates of its row and column:
    the nearest pixel (by `rounding`) or the bilinear blend of the four around it."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, *size))
    pick = {"round": round, "floor": math.floor, "ceil": math.ceil,
            "round_prefer_floor": lambda v: math.ceil(v - 0.5),
            "round_prefer_ceil": lambda v: math.floor(v + 0.5)}[rounding]
    for r, q in itertools.product(range(size[0]), range(size[1])):
        cy, cx = coordinate(r, h, size[0], mode), coordinate(q, w, size[1], mode)
        if method == "nearest_neighbor":
            iy, ix = min(max(pick(cy), 0), h - 1), min(max(pick(cx), 0), w - 1)
            out[:, :, r, q] = x[:, :, iy, ix]
            continue
        y0, x0 = math.floor(cy), math.floor(cx)
        ty, tx = cy - y0, cx - x0
        total = 0.0
        for dy, dx in itertools.product((0, 1), (0, 1)):
            wgt = (ty if dy else 1 - ty) * (tx if dx else 1 - tx)
            total = total + wgt * x[:, :, min(max(y0 + dy, 0), h - 1),
                                    min(max(x0 + dx, 0), w - 1)]
        out[:, :, r, q] = total
    return out


@pytest.mark.parametrize("size, method, mode, rounding", [
    ((7, 9), "linear", "half_pixel", "round"), ((5, 3), "linear", "align_corners", "round"),
    ((2, 7), "linear", "asymmetric", "round"), ((1, 6), "linear", "pytorch_half_pixel", "round"),
    ((8, 4), "nearest_neighbor", "half_pixel", "round_prefer_ceil"),
    ((8, 4), "nearest_neighbor", "half_pixel", "round_prefer_floor"),
    ((5, 9), "nearest_neighbor", "align_corners", "round"),
    ((4, 2), "nearest_neighbor", "tf_half_pixel_for_nn", "floor"),
    ((4, 2), "nearest_neighbor", "tf_half_pixel_for_nn", "ceil")])
def test_interpreter_resize_is_the_definition(size: tuple[int, int], method: str, mode: str,
                                              rounding: str) -> None:
    x = np.random.default_rng(9).standard_normal((1, 2, 3, 5)).astype(np.float32)
    call = (f"R.image.resize2d(x, {size}, method=\"{method}\", "
            f"coordinate_transformation_mode=\"{mode}\", rounding_method=\"{rounding}\")")
    got = run(f"x: {tensor('(1, 2, 3, 5)')}", call, x)
    np.testing.assert_allclose(got, naive_resize(x, size, method, mode, rounding), rtol=1e-5,
                               atol=1e-6)


def test_interpreter_resize_rounds_ties_to_even() -> None:
    """Nearest-neighbour `round` is ties-to-even, an asymmetric integer upscale included
    (what TVM 0.27's legalization computes: `T.round(0.5 * i)`)."""
    x = np.arange(5.0, dtype=np.float32).reshape(1, 1, 1, 5)
    got = run(f"x: {tensor('(1, 1, 1, 5)')}",
              'R.image.resize2d(x, (1, 9), method="nearest_neighbor", '
              'coordinate_transformation_mode="align_corners")', x)
    assert got[0, 0, 0].tolist() == [0, 0, 1, 2, 2, 2, 3, 4, 4]  # 0.5 -> 0, 1.5 -> 2, ...
    got = run(f"x: {tensor('(1, 1, 1, 5)')}",
              'R.image.resize2d(x, (1, 10), method="nearest_neighbor", '
              'coordinate_transformation_mode="asymmetric")', x)
    assert got[0, 0, 0].tolist() == [0, 0, 1, 2, 2, 2, 3, 4, 4, 4]  # rint(i / 2)


def test_printed_calls_read_back() -> None:
    mod = parse(functions_module(CASES))
    again = parse(print_module(mod))
    assert print_module(again) == print_module(mod)


def test_tvm_printed_forms_parse() -> None:
    """TVM prints `roi` as a list of `T.float32` values and the shape as `R.shape([...])`."""
    text = functions_module({"main": (f"x: {tensor('(1, 2, 3, 4)')}",
                            "R.image.resize2d(x, R.shape([6, 8]), roi=[T.float32(0.0), "
                            "T.float32(0.0), T.float32(0.0), T.float32(0.0)], layout=\"NCHW\", "
                            "method=\"linear\", coordinate_transformation_mode=\"half_pixel\", "
                            "rounding_method=\"round\", cubic_alpha=-0.5, cubic_exclude=0, "
                            "extrapolation_value=0.0, out_dtype=\"void\")")})
    from tirc.passes.graph.normalize import Normalize

    out = Normalize()(parse(text))["main"].ret_struct_info
    assert [int(d.value) for d in out.shape] == [1, 2, 6, 8]


def test_attention_bias_is_attention_with_a_bias() -> None:
    """TVM's `R.nn.attention_bias(q, k, v, bias, ...)` (PyTorch's scaled_dot_product_attention
    with a mask) is `R.nn.attention` given the bias; without one it is a diagnostic."""
    params = f"{QKV}, b: {tensor('(1, 2, 3, 5)')}"
    mod = parse(functions_module({"main": (params, "R.nn.attention_bias(q, k, v, b, "
                                                   "scale=None, causal_mask=None, "
                                                   "window_size=None)")}))
    same = parse(functions_module({"main": (params, "R.nn.attention(q, k, v, b)")}))
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(tuple(int(d.value) for d in p.struct_info.shape))
            .astype("float32") for p in mod["main"].params]
    np.testing.assert_array_equal(Interpreter(mod).call("main", *args),
                                  Interpreter(same).call("main", *args))
    with pytest.raises(CompileError) as err:
        parse(functions_module({"main": (QKV, "R.nn.attention_bias(q, k, v)")}))
    assert "R.nn.attention_bias takes a bias" in err.value.diagnostics[0].message


Q4 = f"q: {tensor('(1, 3, 2, 4)')}, k: {tensor('(1, 5, 2, 4)')}, v: {tensor('(1, 5, 2, 3)')}"


@pytest.mark.parametrize("params, body, message", [
    (f"q: {tensor('(1, 3, 2)')}, k: {tensor('(1, 5, 2, 4)')}, v: {tensor('(1, 5, 2, 3)')}",
     "R.nn.attention(q, k, v)",
     "R.nn.attention: 'query' must have 4 dimensions (batch, sequence, heads, head dimension), "
     "got (1, 3, 2)"),
    (f"q: {tensor('(1, 3, 2, 4)')}, k: {tensor('(1, 5, 2, 3)')}, v: {tensor('(1, 5, 2, 3)')}",
     "R.nn.attention(q, k, v)",
     "R.nn.attention: the query has head dimension 4 but the key has 3"),
    (f"q: {tensor('(1, 3, 2, 4)')}, k: {tensor('(1, 5, 2, 4)')}, v: {tensor('(1, 4, 2, 3)')}",
     "R.nn.attention(q, k, v)",
     "R.nn.attention: the key has sequence length 5 but the value has 4"),
    (f"q: {tensor('(1, 3, 4, 4)')}, k: {tensor('(1, 5, 2, 4)')}, v: {tensor('(1, 5, 2, 3)')}",
     "R.nn.attention(q, k, v)",
     "R.nn.attention: the query has 4 heads but the key has 2 (grouped-query attention is "
     "not supported)"),
    (f"{Q4}, b: {tensor('(1, 2, 3, 1)')}", "R.nn.attention(q, k, v, b)",
     "R.nn.attention: 'bias' of shape (1, 2, 3, 1) does not broadcast to (batch, heads, seq, "
     "seq_kv) = (1, 2, 3, 5)"),
    (Q4, 'R.nn.attention(q, k, v, causal_mask="Diagonal")',
     "R.nn.attention: unknown causal_mask 'Diagonal' (expected 'TopLeft' or 'BottomRight')"),
    (Q4, "R.nn.attention(q, k, v, window_size=2)",
     "R.nn.attention: sliding-window attention (window_size) is not supported"),
    (f"q: {tensor('(1, 3, 2, 4)', 'int32')}, k: {tensor('(1, 5, 2, 4)', 'int32')}, "
     f"v: {tensor('(1, 5, 2, 3)', 'int32')}", "R.nn.attention(q, k, v)",
     "R.nn.attention: needs floating-point tensors, got int32"),
    (f"x: {tensor('(1, 4, 5, 5)')}, w: {tensor('(3, 2, 3, 3)')}", "R.nn.conv2d_transpose(x, w)",
     "R.nn.conv2d_transpose: the data has 4 channels; the weight takes 3 (its I axis)"),
    (f"x: {tensor('(1, 3, 5, 5)')}, w: {tensor('(3, 2, 3, 3)')}",
     "R.nn.conv2d_transpose(x, w, groups=2)",
     "R.nn.conv2d_transpose: 3 input channels do not divide into 2 groups"),
    (f"x: {tensor('(1, 4, 5)')}, w: {tensor('(4, 2, 3)')}",
     "R.nn.conv1d_transpose(x, w, strides=2, output_padding=2)",
     "R.nn.conv1d_transpose: 'output_padding' (2,) must be smaller than the strides (2,)"),
    (f"x: {tensor('(1, 4, 2)')}, w: {tensor('(4, 2, 2)')}",
     "R.nn.conv1d_transpose(x, w, padding=(2, 1))",
     "R.nn.conv1d_transpose: the padding leaves no output along axis W: 0 positions"),
    (f"x: {tensor('(1, 4, 5, 5)')}, w: {tensor('(4, 2, 3, 3)')}",
     'R.nn.conv2d_transpose(x, w, kernel_layout="OIHW4o")',
     "R.nn.conv2d_transpose: kernel_layout 'OIHW4o' is not an order of the axes IOHW"),
    (f"x: {tensor('(1, 4, 5)')}, w: {tensor('(4, 2, 3, 3)')}", "R.nn.conv2d_transpose(x, w)",
     "R.nn.conv2d_transpose: 'data' must have 4 dimensions, got (1, 4, 5)"),
    (f"x: {tensor('(1, 2, 3, 4)')}", 'R.image.resize2d(x, (6, 8), method="bilinear")',
     "R.image.resize2d: unknown method 'bilinear' (expected 'nearest_neighbor', 'linear' or "
     "'cubic')"),
    (f"x: {tensor('(1, 2, 3, 4)')}",
     'R.image.resize2d(x, (6, 8), coordinate_transformation_mode="corners")',
     "R.image.resize2d: unknown coordinate_transformation_mode 'corners'"),
    (f"x: {tensor('(1, 2, 3, 4)')}",
     'R.image.resize2d(x, (6, 8), coordinate_transformation_mode="tf_crop_and_resize")',
     "R.image.resize2d: coordinate_transformation_mode 'tf_crop_and_resize' is not supported"),
    (f"x: {tensor('(1, 2, 3, 4)')}", 'R.image.resize2d(x, (6, 8), rounding_method="nearest")',
     "R.image.resize2d: unknown rounding_method 'nearest'"),
    (f"x: {tensor('(1, 2, 3, 4)')}", "R.image.resize2d(x, (6, 8), roi=(0.1, 0.0, 0.9, 1.0))",
     "R.image.resize2d: a non-zero 'roi' is only read by coordinate_transformation_mode "
     "'tf_crop_and_resize', which is not supported"),
    (f"x: {tensor('(1, 2, 3, 4)')}", "R.image.resize2d(x, (6, 8, 2))",
     "R.image.resize2d: 'size' needs 2 values (height, width), got 3"),
    (f"x: {tensor('(2, 3, 4)')}", "R.image.resize2d(x, (6, 8))",
     "R.image.resize2d: 'data' must have 4 dimensions, got (2, 3, 4)"),
    (f"x: {tensor('(1, 2, 3, 4)')}", 'R.image.resize2d(x, (6, 8), layout="NCWH4c")',
     "R.image.resize2d: layout 'NCWH4c' is not an order of the axes NCHW"),
    (f"x: {tensor('(1, 2, 3, 4)')}",
     'R.image.resize2d(x, (1, 8), coordinate_transformation_mode="align_corners")',
     "R.image.resize2d: 'align_corners' needs an output height of at least 2, got 1"),
])
def test_wrong_calls_are_diagnostics(params: str, body: str, message: str) -> None:
    from tirc.passes.graph.normalize import Normalize

    with pytest.raises(CompileError) as err:
        Normalize()(parse(functions_module({"main": (params, body)})))
    assert message in err.value.diagnostics[0].message
