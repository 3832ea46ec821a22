"""The elementwise, bitwise, logical, predicate and `_like` operators, `flatten`, the statistics
(argmax, argmin, variance, std), the slicing operators (flip, tile, repeat, strided_slice), the
activations with attributes, batch_norm, pad and the scans that TVM's Relax tests use: each one
compiled at -O0 and -O3 agrees with the reference interpreter (NumPy) on values that reach their
edges (negatives, zeros, NaN and infinities, shifts by the width or more; argmax finds the first
NaN, as NumPy's); batch_norm also against its definition, channel by channel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_sample, functions_module
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter

FLOAT_UNARY = ("floor", "ceil", "round", "trunc", "sin", "cos", "tan", "sinh", "cosh", "asin",
               "acos", "atan", "asinh", "acosh", "atanh", "erf", "square", "sign", "isnan",
               "isinf", "isfinite")
INT_BINARY = ("mod", "floor_mod", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
              "right_shift")
FLOAT_BINARY = ("mod", "floor_mod")
LOGICAL = ("logical_and", "logical_or", "logical_xor")


X = 'x: R.Tensor((4, 8), "float32")'
XI = 'x: R.Tensor((4, 8), "int32")'
XYI = 'x: R.Tensor((4, 8), "int32"), y: R.Tensor((8,), "int32")'
XYF = 'x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")'
XYB = 'x: R.Tensor((4, 8), "bool"), y: R.Tensor((1, 8), "bool")'
CXY = 'c: R.Tensor((4, 1), "bool"), x: R.Tensor((4, 8), "float32"), y: R.Tensor((8,), "float32")'
FUNCTIONS: dict[str, tuple[str, str]] = {
    **{f"f_{op}": (X, f"R.{op}(x)") for op in FLOAT_UNARY},
    **{f"i_{op}": (XYI, f"R.{op}(x, y)") for op in INT_BINARY},
    **{f"g_{op}": (XYF, f"R.{op}(x, y)") for op in FLOAT_BINARY},
    **{f"b_{op}": (XYB, f"R.{op}(x, y)") for op in LOGICAL},
    "b_logical_not": ('x: R.Tensor((4, 8), "bool")', "R.logical_not(x)"),
    "i_bitwise_not": (XI, "R.bitwise_not(x)"),
    "i_sign": (XI, "R.sign(x)"),
    "i_square": (XI, "R.square(x)"),
    "t_where": (CXY, "R.where(c, x, y)"),
    "t_clip": (X, "R.clip(x, -0.5, 2)"),
    "i_clip": (XI, "R.clip(x, 0, 6)"),
    "t_zeros_like": (X, "R.zeros_like(x)"),
    "t_ones_like": (X, 'R.ones_like(x, "int32")'),
    "t_full_like": (X, 'R.full_like(x, R.const(2.5, "float32"))'),
    "t_flatten": (X, "R.flatten(x)"),
    "s_argmax": (X, "R.argmax(x, axis=1)"),
    "s_argmin_all": (X, "R.argmin(x)"),
    "s_argmax_int": (XI, "R.argmax(x, axis=0, keepdims=True)"),
    "s_argmin_int_all": (XI, "R.argmin(x, keepdims=True)"),
    "s_variance": (X, "R.variance(x, axis=1)"),
    "s_std": (X, "R.std(x, keepdims=True)"),
    "t_flip": (X, "R.flip(x, axis=1)"),
    "t_tile": (XI, "R.tile(x, (2, 1, 2))"),
    "t_repeat": (X, "R.repeat(x, 2, axis=0)"),
    "t_repeat_flat": (XI, "R.repeat(x, 3)"),
    "t_strided_slice": (X, "R.strided_slice(x, axes=[0, 1], begin=[3, 1], end=[-5, 100], "
                           "strides=[-1, 3])"),
    "a_leakyrelu": (X, "R.nn.leakyrelu(x, alpha=0.2)"),
    "a_softplus": (X, "R.nn.softplus(x, beta=2.0, threshold=3.0)"),
    "a_selu": (X, "R.nn.selu(x)"),
    "a_gelu_tanh": (X, "R.nn.gelu_tanh(x)"),
    "p_constant": (X, "R.nn.pad(x, pad_width=[1, 2, 0, 3], pad_value=1.5)"),
    "p_edge": (XI, 'R.nn.pad(x, [2, 1, 3, 0], "edge")'),
    "p_reflect": (X, 'R.nn.pad(x, [3, 2, 1, 7], pad_mode="reflect")'),
    "c_cumsum": (X, "R.cumsum(x, axis=1)"),
    "c_cumsum_flat_exclusive": (XI, 'R.cumsum(x, dtype="int64", exclusive=True)'),
    "c_cumprod": (X, "R.cumprod(x, axis=0, exclusive=True)"),
    "a_prelu": ('x: R.Tensor((4, 8), "float32"), a: R.Tensor((4,), "float32")',
                "R.nn.prelu(x, a, axis=0)"),
}


def values(shape: tuple[int, ...], dt: str, rng: np.random.Generator) -> np.ndarray:
    """Inputs that reach the edges of each operator."""
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dt == "int32":
        edges = np.array([0, 1, -1, 7, -7, 31, 32, 33, -32, 2**31 - 1, -2**31, 100, -100])
        return rng.choice(edges, shape).astype(dt)
    edges = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 0.999, -1.0, 1.0, 3.25, 80.0, -80.0,
                      np.nan, np.inf, -np.inf], dtype=dt)
    return np.where(rng.random(shape) < 0.5, rng.choice(edges, shape),
                    rng.uniform(-3, 3, shape).astype(dt))


def arguments(mod: Any, name: str, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for p in mod[name].params:
        s = p.struct_info
        out.append(values(tuple(int(d.value) for d in s.shape), str(s.dtype), rng))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    tmp = tmp_path_factory.mktemp("ops")
    path = tmp / "ops.tir"
    path.write_text(functions_module(FUNCTIONS))
    return path, {level: compile_sample(path, tmp / f"ops{level}.so", level)
                  for level in (0, 3)}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on NaN, inf and x % 0
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    path, libs = built
    mod = parse_file(path)
    for seed in range(3):
        args = arguments(mod, name, np.random.default_rng(seed))
        want = Interpreter(mod).call(name, *[a.copy() for a in args])
        for level, lib in libs.items():
            got = getattr(lib, name)(*[a.copy() for a in args])
            assert got.dtype == want.dtype and got.shape == want.shape, (name, level)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} at -O{level}")


@pytest.mark.parametrize("body, message", [
    ('R.bitwise_and(x, x)', "R.bitwise_and: needs integer tensors, got float32"),
    ('R.logical_or(x, x)', "R.logical_or: needs bool tensors, got float32"),
    ('R.bitwise_not(x)', "R.bitwise_not: needs integer tensors, got float32"),
    ('R.isnan(R.astype(x, "int32"))', "R.isnan: needs a floating-point tensor, got int32"),
    ('R.where(x, x, x)', "R.where: the condition must be a bool tensor, got float32"),
    ('R.clip(x, 2, 1)', "R.clip: min 2.0 is greater than max 1.0"),
    ('R.full_like(x, x)', "R.full_like: fill_value must be a scalar (R.const or a 0-d tensor)"),
    ('R.argmax(x, axis=2)', "R.argmax: axis 2 is out of range for a tensor of rank 2"),
    ('R.variance(R.astype(x, "int32"))', "R.variance: needs a floating-point tensor, got int32"),
    ('R.flip(x, axis=-3)', "R.flip: axis -3 is out of range for a tensor of rank 2"),
    ('R.tile(x, (2, -1))', "R.tile: repeats must not be negative, got (2, -1)"),
    ('R.repeat(x, -2)', "R.repeat: repeats must not be negative, got -2"),
    ('R.nn.pad(x, [1, 1, 1])', "R.nn.pad: pad_width needs 2 values per axis (4 for rank 2), "
     "got 3"),
    ('R.nn.pad(x, [1, 1, 0, 8], "reflect")', "R.nn.pad: reflect padding of 8 along axis 1 "
     "needs more elements than that, got 8"),
    ('R.nn.pad(x, [0, 0, 1, 1], "wrap")', "R.nn.pad: pad_mode must be one of constant, edge, "
     "reflect, got 'wrap'"),
    ('R.cumsum(x, axis=2)', "R.cumsum: axis 2 is out of range for a tensor of rank 2"),
    ('R.nn.prelu(x, R.sum(x, axis=0), axis=0)', "R.nn.prelu: 'alpha' must have shape (4,) "
     "(axis 0 of (4, 8)), got (8,)"),
    ('R.nn.batch_norm(x, x, x, x, x, axis=1)', "R.nn.batch_norm: 'gamma' must have shape (8,) "
     "(the normalized axes of (4, 8)), got (4, 8)"),
    ('R.strided_slice(x, [0], [1], [2], [0])', "R.strided_slice: a stride must not be 0"),
    ('R.strided_slice(x, [0, 1], [1], [2])', "R.strided_slice: axes, begin, end and strides "
     "need one value each per axis, got 2, 1, 1 and 2"),
])
def test_wrong_operands_are_diagnostics(body: str, message: str) -> None:
    text = functions_module({"main": (X, body)})
    from tirc.passes.graph.normalize import Normalize

    with pytest.raises(CompileError) as err:
        Normalize()(parse(text))
    assert message in err.value.diagnostics[0].message


def test_slicing_a_symbolic_axis_is_a_diagnostic() -> None:
    from tirc.passes.graph.normalize import Normalize

    text = functions_module({"main": ('x: R.Tensor(("n", 4), "float32")',
                            "R.strided_slice(x, [0], [1], [2])")})
    with pytest.raises(CompileError) as err:
        Normalize()(parse(text))
    assert err.value.diagnostics[0].message == (
        "R.strided_slice: axis 0 has the symbolic size n; only an axis of constant size can "
        "be sliced")


BATCH_NORM = functions_module({
    "train": ('x: R.Tensor((2, 3, 4), "float32"), g: R.Tensor((3,), "float32"), '
              'b: R.Tensor((3,), "float32"), mm: R.Tensor((3,), "float32"), '
              'mv: R.Tensor((3,), "float32")',
              "R.nn.batch_norm(x, g, b, mm, mv, axis=1, momentum=0.25)"),
    "infer": ('x: R.Tensor((2, 4, 3), "float32"), g: R.Tensor((3,), "float32"), '
              'b: R.Tensor((3,), "float32"), mm: R.Tensor((3,), "float32"), '
              'mv: R.Tensor((3,), "float32")',
              "R.nn.batch_norm(x, g, b, mm, mv, -1, 1e-3, False, True, 0.1, False)"),
})


def naive_batch_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, mm: np.ndarray,
                     mv: np.ndarray, axis: int, eps: float, center: bool, momentum: float,
                     training: bool) -> tuple[np.ndarray, ...]:
    """Channel by channel: normalize by the batch's (or the moving) mean and variance."""
    out = np.empty_like(x, dtype=np.float64)
    means, variances = mm.astype(np.float64).copy(), mv.astype(np.float64).copy()
    for c in range(x.shape[axis]):
        part = np.take(x, c, axis=axis).astype(np.float64)
        mean, var = (part.mean(), ((part - part.mean()) ** 2).mean()) if training \
            else (float(mm[c]), float(mv[c]))
        y = (part - mean) / np.sqrt(var + eps) * g[c] + (b[c] if center else 0.0)
        index = [slice(None)] * x.ndim
        index[axis] = c
        out[tuple(index)] = y
        if training:
            means[c] = (1 - momentum) * mm[c] + momentum * mean
            variances[c] = (1 - momentum) * mv[c] + momentum * var
    return out, means, variances


@pytest.mark.parametrize("name, axis, eps, center, momentum, training", [
    ("train", 1, 1e-5, True, 0.25, True), ("infer", 2, 1e-3, False, 0.1, False)])
def test_batch_norm_is_the_definition_at_every_level(tmp_path: Path, name: str, axis: int,
                                                     eps: float, center: bool, momentum: float,
                                                     training: bool) -> None:
    path = tmp_path / "bn.tir"
    path.write_text(BATCH_NORM)
    mod = parse_file(path)
    rng = np.random.default_rng(5)
    shape = tuple(int(d.value) for d in mod[name].params[0].struct_info.shape)
    x = rng.standard_normal(shape).astype("float32")
    g, b, mm = (rng.standard_normal(3).astype("float32") for _ in range(3))
    mv = (rng.random(3) + 0.5).astype("float32")
    want = naive_batch_norm(x, g, b, mm, mv, axis, eps, center, momentum, training)
    got = Interpreter(mod).call(name, x, g, b, mm, mv)
    for level in (None, 0, 3):
        if level is not None:
            lib = compile_sample(path, tmp_path / f"bn{level}.so", level)
            got = getattr(lib, name)(x, g, b, mm, mv)
        for field, expected in zip(got, want):
            np.testing.assert_allclose(field, expected, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} at {level}")


EMPTY = functions_module({
    "repeat_none": ('x: R.Tensor((2, 3), "float32")', "R.repeat(x, 0)"),
    "tile_none": ('x: R.Tensor((2, 3), "float32")', "R.tile(x, (0, 2))"),
    "slice_none": ('x: R.Tensor((2, 3), "float32")', "R.strided_slice(x, [1], [2], [1])"),
    "cumsum_none": ('x: R.Tensor((0,), "float32")', "R.cumsum(x)"),
})


@pytest.mark.parametrize("name, shape", [("repeat_none", (0,)), ("tile_none", (0, 6)),
                                         ("slice_none", (2, 0)), ("cumsum_none", (0,))])
def test_empty_results_are_outputs(tmp_path: Path, name: str, shape: tuple[int, ...]) -> None:
    """A result with no elements is still an output the runtime allocates and returns (the
    entry signature once counted only the buffers something is stored into)."""
    path = tmp_path / "empty.tir"
    path.write_text(EMPTY)
    lib = compile_sample(path, tmp_path / "empty.so", 2)
    x = np.ones((0,) if name == "cumsum_none" else (2, 3), "float32")
    got = getattr(lib, name)(x)
    assert got.shape == shape == Interpreter(parse_file(path)).call(name, x).shape


def test_argmax_of_an_empty_axis_is_a_diagnostic() -> None:
    from tirc.passes.graph.normalize import Normalize

    text = functions_module({"main": ('x: R.Tensor((0, 3), "float32")', "R.argmax(x, axis=0)")})
    with pytest.raises(CompileError) as err:
        Normalize()(parse(text))
    assert err.value.diagnostics[0].message == (
        "R.argmax: the reduced elements of (0, 3) are none: an empty axis has no position of "
        "an extreme")


def test_printed_calls_read_back() -> None:
    """Each call prints with its attributes and parses back to the same module."""
    from tirc.ir.printer import print_module

    for text in (functions_module(FUNCTIONS), BATCH_NORM):
        printed = print_module(parse(text))
        assert print_module(parse(printed)) == printed
