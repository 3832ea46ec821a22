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
    "b_multiply": (XYB, "R.multiply(x, y)"),  # PyTorch's isfinite: (x == x) * (|x| != inf)
    "i_bitwise_not": (XI, "R.bitwise_not(x)"),
    "i_sign": (XI, "R.sign(x)"),
    **{f"i_{op}": (XI, f"R.{op}(x)") for op in ("floor", "ceil", "round", "trunc")},
    "i_square": (XI, "R.square(x)"),
    "t_where": (CXY, "R.where(c, x, y)"),
    "t_clip": (X, "R.clip(x, -0.5, 2)"),
    "i_clip": (XI, "R.clip(x, 0, 6)"),
    "t_clip_prim": (X, 'R.clip(x, R.prim_value(T.float64(-0.5)), R.prim_value(T.float64("inf")))'),
    "i_clip_prim": (XI, "R.clip(x, min=R.prim_value(0), max=R.prim_value(6))"),
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
    "a_relu6": (X, "R.nn.relu6(x)"),
    "i_relu6": (XI, "R.nn.relu6(x)"),
    "a_gelu_tanh": (X, "R.nn.gelu_tanh(x)"),
    "p_constant": (X, "R.nn.pad(x, pad_width=[1, 2, 0, 3], pad_value=1.5)"),
    "p_edge": (XI, 'R.nn.pad(x, [2, 1, 3, 0], "edge")'),
    "p_reflect": (X, 'R.nn.pad(x, [3, 2, 1, 7], pad_mode="reflect")'),
    "c_cumsum": (X, "R.cumsum(x, axis=1)"),
    "c_cumsum_flat_exclusive": (XI, 'R.cumsum(x, dtype="int64", exclusive=True)'),
    "c_cumprod": (X, "R.cumprod(x, axis=0, exclusive=True)"),
    "a_prelu": ('x: R.Tensor((4, 8), "float32"), a: R.Tensor((4,), "float32")',
                "R.nn.prelu(x, a, axis=0)"),
    "r_arange": (X, "R.add(x, R.arange(R.prim_value(-3), R.prim_value(13), R.prim_value(2), "
                    'dtype="float32"))'),
    "r_arange_float": (X, "R.multiply(x, R.arange(0.5, 4.5, 0.5))"),
    "r_arange_int": (XI, "R.add(x, R.astype(R.arange(8, 0, -1), \"int32\"))"),
    "r_slice_scatter": ('x: R.Tensor((4, 8), "float32"), u: R.Tensor((4, 3), "float32")',
                        "R.slice_scatter(x, u, R.prim_value(1), R.prim_value(7), "
                        "R.prim_value(2), axis=1)"),
    "r_slice_scatter_neg": ('x: R.Tensor((4, 8), "int32"), u: R.Tensor((2, 8), "int32")',
                            "R.slice_scatter(x, u, -3, -1, 1)"),
    "e_einsum_matmul": ('x: R.Tensor((4, 8), "float32"), y: R.Tensor((8, 3), "float32")',
                        'R.einsum((x, y), subscripts="ij,jk->ik")'),
    "e_einsum_trace": ('x: R.Tensor((4, 4), "float32")', 'R.einsum((x,), "ii")'),
    "e_einsum_implicit": (X, 'R.einsum((x,), "ba")'),
    "e_einsum_outer": ('x: R.Tensor((4,), "float32"), y: R.Tensor((3,), "float32")',
                       'R.einsum((x, y), subscripts="i,j->ji")'),
    "e_einsum_batch": ('x: R.Tensor((2, 3, 4), "float32"), y: R.Tensor((2, 4, 5), "float32"), '
                       'z: R.Tensor((5,), "float32")',
                       'R.einsum((x, y, z), "bij,bjk,k->bi")'),
    "r_bucketize": ('x: R.Tensor((4, 8), "float32"), b: R.Tensor((5,), "float32")',
                    "R.bucketize(x, b)"),
    "r_bucketize_right": ('x: R.Tensor((4, 8), "int32"), b: R.Tensor((3,), "int32")',
                          "R.bucketize(x, b, True, True)"),
    "r_take_clip": ('x: R.Tensor((4, 8), "float32"), i: R.Tensor((5,), "int32")',
                    'R.take(x, i, axis=1, mode="clip")'),
    "r_take_wrap": ('x: R.Tensor((4, 8), "float32"), i: R.Tensor((3, 2), "int32")',
                    'R.take(x, i, mode="wrap")'),
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


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc"])
def test_rounding_an_integer_tensor_is_the_tensor(op: str) -> None:
    """As TVM's (its legalization is topi.identity): int64 values past 2**53 stay exact."""
    text = functions_module({"main": ('x: R.Tensor((3,), "int64")', f"R.{op}(x)")})
    x = np.array([2**62 + 1, -(2**53) - 1, 7], dtype="int64")
    got = Interpreter(parse(text)).call("main", x)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, x)


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
    ('R.add(x, R.arange(0, 8, 0))', "R.arange: step must not be 0"),
    ('R.bucketize(x, x)', "R.bucketize: boundaries must be 1-D, got (4, 8)"),
    ('R.topk(x, 9, axis=1)', "R.topk: k 9 is larger than the axis (8 elements)"),
    ('R.topk(x, 2, ret_type="first")', "R.topk: ret_type must be one of both, values, "
     "indices, got 'first'"),
    ('R.einsum((x,), "i...")', "R.einsum: an ellipsis in the subscripts 'i...' is not supported"),
    ('R.einsum((x, x), "ij,jk->ik")', "R.einsum: label 'j' has the sizes 8 and 4"),
    ('R.einsum((x,), "ij->k")', "R.einsum: the output subscripts 'k' must be distinct labels of "
     "the operands"),
    ('R.slice_scatter(x, x, 0, 2, 1)', "R.slice_scatter: src (4, 8) must have the shape of "
     "the slice it replaces, (2, 8)"),
    ('R.slice_scatter(x, x, 0, 4, -1)', "R.slice_scatter: step must be positive, got -1"),
    ('R.add(R.isnan(x), R.isnan(x))', "R.add: arithmetic on bool tensors"),
    ('R.take(x, R.arange(2), axis=0, mode="nearest")', "R.take: mode must be one of fast, "
     "clip, wrap, got 'nearest'"),
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


def test_clip_bounds_may_be_prim_values() -> None:
    """PyTorch's exporter writes clamp's bounds as `R.prim_value(T.float64(...))`: they are
    the bounds, as numbers (printed back as numbers), not a loop-level call."""
    text = functions_module({"main": (X, 'R.clip(x, R.prim_value(T.float64(-0.5)), '
                                         'R.prim_value(T.float64("inf")))')})
    mod = parse(text)
    assert 'R.clip(x, min=T.float64(-0.5), max=T.float64("inf"))' in mod.script()
    x = values((4, 8), "float32", np.random.default_rng(0))
    np.testing.assert_array_equal(Interpreter(mod).call("main", x), np.clip(x, -0.5, np.inf))


def test_slice_scatter_is_a_slice_assignment() -> None:
    """`R.slice_scatter(x, u, start, end, step, axis)` is NumPy's `x[..., start:end:step] = u`
    on a copy (the bounds of a Python slice: negative from the end)."""
    text = functions_module({"main": ('x: R.Tensor((4, 8), "float32"), u: R.Tensor((4, 2), '
                                      '"float32")', "R.slice_scatter(x, u, -5, 8, 3, axis=1)")})
    rng = np.random.default_rng(1)
    x, u = (values(s, "float32", rng) for s in ((4, 8), (4, 2)))
    want = x.copy()
    want[:, -5:8:3] = u
    np.testing.assert_array_equal(Interpreter(parse(text)).call("main", x, u), want)


def test_arange_and_take_modes_are_numpy_s() -> None:
    """`R.arange` counts as NumPy's (int64 for integer bounds, else float32; `arange(n)` from
    0), and take's "clip" and "wrap" modes clamp and wrap an index as `np.take` does."""
    text = functions_module({
        "ints": (X, "R.arange(R.prim_value(-2), R.prim_value(12), R.prim_value(3))"),
        "count": (X, "R.arange(5)"),
        "floats": (X, "R.arange(1, 2.2, 0.25)"),
        "clip": (XI, 'R.take(x, R.arange(-3, 12, 2), axis=1, mode="clip")'),
        "wrap": (XI, 'R.take(x, R.arange(-3, 12, 2), axis=1, mode="wrap")')})
    mod, x = parse(text), np.arange(32, dtype="int32").reshape(4, 8)
    interp = Interpreter(mod)
    for name, want in (("ints", np.arange(-2, 12, 3)), ("count", np.arange(5)),
                       ("floats", np.arange(1, 2.2, 0.25).astype("float32")),
                       ("clip", np.take(x, np.arange(-3, 12, 2), axis=1, mode="clip")),
                       ("wrap", np.take(x, np.arange(-3, 12, 2), axis=1, mode="wrap"))):
        got = interp.call(name, x if name in ("clip", "wrap") else x.astype("float32"))
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


TOPK = functions_module({
    "largest": ('x: R.Tensor((3, 7), "float32")', "R.topk(x, 3, axis=1)"),
    "smallest": ('x: R.Tensor((5, 4), "int32")',
                 'R.topk(x, 2, axis=0, largest=False, ret_type="indices", dtype="int64")'),
    "everything": ('x: R.Tensor((2, 6), "int32")', 'R.topk(x, 0, ret_type="values")'),
})


def naive_topk(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, ...]:
    """Row by row along `axis`: positions sorted by value (largest first, or smallest), equal
    values by position; the first k of them and their values."""
    moved = np.moveaxis(x, axis, -1)
    k = k if k >= 1 else moved.shape[-1]
    idx = np.empty(moved.shape[:-1] + (k,), dtype=np.int64)
    for row in np.ndindex(*moved.shape[:-1]):
        sign = -1 if largest else 1
        idx[row] = sorted(range(moved.shape[-1]), key=lambda j, r=row: (sign * moved[r][j], j))[:k]
    vals = np.take_along_axis(moved, idx, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("name, k, axis, largest, pick", [
    ("largest", 3, 1, True, "both"), ("smallest", 2, 0, False, "indices"),
    ("everything", 0, -1, True, "values")])
def test_topk_is_the_definition_at_every_level(tmp_path: Path, name: str, k: int, axis: int,
                                               largest: bool, pick: str) -> None:
    """`R.topk` (PyTorch's topk and max over a dim): the k first elements in order, equal
    ones by position, as values, int positions or both; compiled as the interpreter."""
    path = tmp_path / "topk.tir"
    path.write_text(TOPK)
    mod = parse_file(path)
    shape = tuple(int(d.value) for d in mod[name].params[0].struct_info.shape)
    dt = str(mod[name].params[0].struct_info.dtype)
    x = (np.random.default_rng(2).integers(-3, 3, shape) * (0.5 if dt == "float32" else 1)
         ).astype(dt)  # many ties
    vals, idx = naive_topk(x, k, axis, largest)
    want = {"both": (vals, idx), "values": (vals,), "indices": (idx,)}[pick]
    got = Interpreter(mod).call(name, x)
    for level in (None, 0, 3):
        if level is not None:
            got = getattr(compile_sample(path, tmp_path / f"topk{level}.so", level), name)(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} at {level}")
    if dt == "float32":
        with pytest.raises(Exception, match="topk of NaN"):
            Interpreter(mod).call(name, np.full(shape, np.nan, dt))


def test_sort_and_argsort_are_topk_of_the_whole_axis() -> None:
    """TVM's `R.argsort` and `R.sort` read as `R.topk` with k=0 (the whole axis): NumPy's
    stable order, equal values by position, descending ones too."""
    text = functions_module({"up": (XI, "R.argsort(x)"),
                             "down": (XI, 'R.argsort(x, 0, True, "int64")'),
                             "sorted": (XI, "R.sort(x, axis=0, descending=True)")})
    mod = parse(text)
    assert 'R.topk(x, k=0, ret_type="indices", largest=False)' in mod.script()
    x = np.random.default_rng(4).integers(-2, 3, (4, 8)).astype("int32")
    interp = Interpreter(mod)
    np.testing.assert_array_equal(interp.call("up", x), np.argsort(x, -1, kind="stable"))
    down = interp.call("down", x)
    assert down.dtype == np.int64
    np.testing.assert_array_equal(down, np.argsort(-x, 0, kind="stable"))
    np.testing.assert_array_equal(interp.call("sorted", x), -np.sort(-x, 0))


def test_bucketize_is_searchsorted_on_sorted_boundaries() -> None:
    """`R.bucketize` (PyTorch's): for sorted boundaries, NumPy's searchsorted, left or right;
    int64 positions, or int32 with out_int32."""
    text = functions_module({"left": (X, "R.bucketize(x, R.arange(-2.0, 2.5, 0.5))"),
                             "right": (X, "R.bucketize(x, R.arange(-2.0, 2.5, 0.5), True, True)")})
    interp = Interpreter(parse(text))
    x = np.round(values((4, 8), "float32", np.random.default_rng(6)) * 2) / 2
    x = np.where(np.isnan(x), 0, x).astype("float32")
    edges = np.arange(-2.0, 2.5, 0.5).astype("float32")
    left, right = interp.call("left", x), interp.call("right", x)
    assert left.dtype == np.int64 and right.dtype == np.int32
    np.testing.assert_array_equal(left, np.searchsorted(edges, x, side="left"))
    np.testing.assert_array_equal(right, np.searchsorted(edges, x, side="right"))


def test_slicing_a_symbolic_axis_clamps_the_bounds() -> None:
    """A constant slice of an axis of symbolic size `n` has TVM's clamped length (the
    symbolic cases are tests/passes/graph/test_symbolic_strided_slice.py)."""
    from tirc.ir.printer import print_module
    from tirc.passes.graph.normalize import Normalize

    text = functions_module({"main": ('x: R.Tensor(("n", 4), "float32")',
                            "R.strided_slice(x, [0], [1], [2])")})
    printed = print_module(Normalize()(parse(text)))
    assert "R.Tensor((T.max(T.min(T.int64(2), n) - T.min(T.int64(1), n), T.int64(0)), " \
        "T.int64(4))" in printed


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
