"""Sharding propagates through every operator tirc legalizes: for each one, a program whose
input is split along each of its dimensions (evenly over 2 devices, unevenly over 3) runs on
the numpy-simulated mesh and equals the single-process interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from dist_support import check_simulated, module_text
from tirc.passes.dist.rules import has_rule
from tirc.passes.graph.legalize_table import LEGALIZERS, get_legalizer

# op -> (parameters as "name: shape dtype", the call's body, the input shapes)
F = "float32"
CASES: dict[str, tuple[list[tuple[str, tuple[int, ...], str]], str]] = {}


def case(ops: str | tuple[str, ...], params: list[tuple[str, tuple[int, ...], str]],
         body: str) -> None:
    for op in (ops,) if isinstance(ops, str) else ops:
        CASES[op] = (params, body.replace("OP", op))


X = ("x", (6, 8), F)  # the first parameter is the one split, along each of its dimensions
case(("add", "subtract", "multiply", "divide", "maximum", "minimum", "power"),
     [X, ("y", (6, 8), F), ("b", (8,), F)], "R.OP(R.OP(x, y), b)")
case(("floor_divide",), [X, ("y", (6, 8), F)], "R.OP(x, y)")
case(("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"),
     [X, ("b", (8,), F)], "R.OP(x, b)")
case(("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs", "nn.relu", "nn.relu6",
      "nn.gelu", "nn.silu", "floor", "ceil", "round", "trunc", "sin", "cos", "tan", "sinh",
      "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "square", "sign",
      "nn.gelu_tanh", "nn.leakyrelu", "nn.softplus", "nn.selu"), [X], "R.OP(x)")
case(("isnan", "isinf", "isfinite"), [X], "R.astype(R.OP(x), \"float32\")")
case(("mod", "floor_mod", "atan2"), [X, ("y", (6, 8), F)], "R.OP(x, y)")
case(("tril", "triu"), [("x", (2, 6, 8), F)], "R.OP(x, 1)")
XI = ("x", (6, 8), "int32")
case(("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"),
     [XI, ("y", (8,), "int32")], "R.OP(x, y)")
case("bitwise_not", [XI], "R.bitwise_not(x)")
XB = ("x", (6, 8), "bool")
case(("logical_and", "logical_or", "logical_xor"), [XB, ("y", (6, 8), "bool")], "R.OP(x, y)")
case("logical_not", [XB], "R.logical_not(x)")
case("where", [XB, ("a", (6, 8), F), ("b", (8,), F)], "R.where(x, a, b)")
case("clip", [X], "R.clip(x, -0.5, 0.5)")
case(("zeros_like", "ones_like"), [X], "R.add(x, R.OP(x))")
case("full_like", [X], "R.add(x, R.full_like(x, R.const(2.0, \"float32\")))")
case("flatten", [X], "R.flatten(x)")
case(("argmax", "argmin"), [X], "R.OP(x, axis=1)")
case(("variance", "std"), [X], "R.OP(x, axis=[0])")
case(("cumsum", "cumprod"), [X], "R.OP(x, axis=1)")
case("flip", [X], "R.flip(x, axis=0)")
case("strided_slice", [X], "R.strided_slice(x, axes=[1], begin=[1], end=[7], strides=[2])")
case("layout_transform", [X], "R.layout_transform(x, index_map=lambda i, j: (i, j // 3, j % 3))")
case("tile", [X], "R.tile(x, (2, 1))")
case("repeat", [X], "R.repeat(x, 2, axis=1)")
case("nn.pad", [X], "R.nn.pad(x, [0, 0, 1, 2], pad_value=1.0)")
case("nn.prelu", [X, ("a", (8,), F)], "R.nn.prelu(x, a, axis=1)")
case("quantize", [X, ("s", (8,), F), ("z", (8,), "int8")],
     "R.astype(R.quantize(x, R.add(s, R.const(1.5, \"float32\")), z, axis=1), \"float32\")")
case("dequantize", [("x", (6, 8), "int8"), ("s", (6,), F), ("z", (6,), "int8")],
     "R.dequantize(x, s, z, axis=0)")
C = [("g", (3,), F), ("b", (3,), F), ("m", (3,), F), ("v", (3,), F)]
case("nn.batch_norm", [("x", (4, 3, 2, 2), F), *C], "R.nn.batch_norm(x, g, b, m, v, axis=1)[0]")
case("nn.conv1d", [("x", (2, 4, 9), F), ("w", (6, 4, 3), F)], "R.nn.conv1d(x, w, padding=1)")
case("nn.conv2d", [("x", (2, 4, 5, 5), F), ("w", (6, 4, 3, 3), F)],
     "R.nn.conv2d(x, w, padding=1)")
case("nn.conv3d", [("x", (2, 2, 3, 4, 4), F), ("w", (3, 2, 2, 2, 2), F)],
     "R.nn.conv3d(x, w, padding=1)")
case("nn.conv1d_transpose", [("x", (2, 4, 5), F), ("w", (4, 3, 3), F)],
     "R.nn.conv1d_transpose(x, w, strides=2)")
case("nn.conv2d_transpose", [("x", (2, 4, 3, 3), F), ("w", (4, 3, 3, 3), F)],
     "R.nn.conv2d_transpose(x, w, strides=2)")
for r, shape in ((1, (2, 3, 8)), (2, (2, 3, 6, 6)), (3, (2, 2, 4, 4, 4))):
    case((f"nn.max_pool{r}d", f"nn.avg_pool{r}d"), [("x", shape, F)],
         "R.OP(x, pool_size=2, strides=2, padding=1)")
    case(f"nn.adaptive_avg_pool{r}d", [("x", shape, F)], "R.OP(x, output_size=3)")
case("nn.attention", [("q", (2, 4, 2, 8), F), ("k", (2, 5, 2, 8), F), ("v", (2, 5, 2, 8), F)],
     "R.nn.attention(q, k, v)")
case("image.resize2d", [("x", (2, 3, 4, 4), F)], "R.image.resize2d(x, (6, 5))")
case("image.affine_grid", [("t", (4, 2, 3), F)], "R.image.affine_grid(t, (5, 3))")
case("astype", [X], "R.astype(x, \"float64\")")
case("matmul", [X, ("w", (8, 5), F)], "R.matmul(x, w)")
case(("sum", "mean", "max", "min", "prod"), [X], "R.OP(x, axis=[1], keepdims=False)")
case(("nn.softmax", "nn.log_softmax"), [X], "R.OP(x, axis=1)")
case("nn.layer_norm", [X, ("g", (8,), F), ("b", (8,), F)],
     "R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)")
case("nn.rms_norm", [X, ("g", (8,), F)], "R.nn.rms_norm(x, g, axes=[-1], epsilon=1e-5)")
case("permute_dims", [X], "R.permute_dims(x, axes=[1, 0])")
case("expand_dims", [X], "R.expand_dims(x, axis=[1])")
case("squeeze", [("x", (6, 1, 8), F)], "R.squeeze(x, axis=[1])")
case("reshape", [X], "R.reshape(x, R.shape([6, 2, 4]))")
case("concat", [X, ("y", (6, 8), F)], "R.concat((x, y), axis=1)")
case("split", [X], "R.split(x, 2, axis=1)")
case("take", [X, ("i", (4,), "int64")], "R.take(x, i, axis=0)")
case("collapse_sum_to", [("x", (6, 4, 8), F)], "R.collapse_sum_to(x, R.shape([4, 1]))")
case("collapse_sum_like", [("x", (6, 4, 8), F), ("y", (1, 8), F)], "R.collapse_sum_like(x, y)")
case("nn.group_norm", [("x", (2, 6, 4), F), ("g", (6,), F), ("b", (6,), F)],
     "R.nn.group_norm(x, g, b, num_groups=3, channel_axis=1, axes=[2])")
case("nn.instance_norm", [("x", (2, 6, 4), F), ("g", (6,), F), ("b", (6,), F)],
     "R.nn.instance_norm(x, g, b, channel_axis=1, axes=[2])")
case("gather_elements", [X, ("i", (6, 3), "int64")], "R.gather_elements(x, i, axis=1)")
case("gather_nd", [("x", (6, 6, 8), F), ("i", (6, 3, 1), "int64")],
     "R.gather_nd(x, i, batch_dims=1)")
case("one_hot", [("x", (6, 8), "int64")],
     "R.one_hot(x, R.prim_value(T.float32(2)), R.prim_value(T.float32(-1)), 5, axis=1)")
case("nn.dropout", [X], "R.nn.dropout(x, 0.25)")
case("nn.pixel_shuffle", [("x", (6, 8, 2, 3), F)], "R.nn.pixel_shuffle(x, 2)")
case("scatter_nd", [("x", (6, 4, 8), F), ("i", (5, 1), "int64"), ("u", (5, 4, 8), F)],
     "R.scatter_nd(x, i, u, reduction=\"add\")")
case("index_tensor", [("x", (6, 8, 4), F), ("i", (3, 1), "int64"), ("j", (5,), "int64")],
     "R.index_tensor(x, (i, j))")
case("einsum", [X, ("y", (8, 4), F)], "R.einsum((x, y), subscripts=\"ij,jk->ki\")")
case("bucketize", [X, ("b", (5,), F)], "R.astype(R.bucketize(x, b, right=True), \"float32\")")
# (`[0]` of a tuple-valued call written inline: bound by normalize, placed by its item)
case("topk", [X], "R.add(R.astype(R.topk(x, 3, axis=1, ret_type=\"indices\"), \"float32\"), "
     "R.topk(x, 3, axis=1, ret_type=\"both\", largest=False)[0])")
case("slice_scatter", [X, ("u", (6, 3), F)], "R.slice_scatter(x, u, 1, 7, 2, axis=1)")
case("scatter_elements", [X, ("i", (6, 3), "int64"), ("u", (6, 3), F)],
     "R.scatter_elements(x, i, u, axis=1, reduction=\"add\")")
case("nn.nll_loss", [("p", (4, 6, 3), F), ("t", (4, 3), "int64"), ("w", (6,), F)],
     "R.nn.nll_loss(p, t, w, reduction=\"sum\")")
case("nn.cross_entropy_with_logits", [X, ("l", (6, 8), F)],
     "R.nn.cross_entropy_with_logits(x, l)")
case("broadcast_to", [("b", (8,), F)], "R.broadcast_to(b, R.shape([6, 8]))")
case(("zeros", "ones"), [X], "R.add(x, R.OP(R.shape([6, 8]), \"float32\"))")
case("arange", [X], "R.add(x, R.arange(R.prim_value(-3), R.prim_value(13), R.prim_value(2), "
     "dtype=\"float32\"))")
case("full", [X], "R.add(x, R.full(R.shape([6, 8]), R.const(2.0, \"float32\"), \"float32\"))")


def program(op: str, mesh: int, split: int) -> tuple[str, list[np.ndarray]]:
    params, body = CASES[op]
    rng = np.random.default_rng(0)
    decls, args = [], []
    for k, (name, shape, dt) in enumerate(params):
        if k == 0 and split < len(shape):
            decls.append(f"{name}: R.DTensor({shape}, \"{dt}\", \"mesh[0]\", \"S[{split}]\")")
        else:
            decls.append(f"{name}: R.Tensor({shape}, \"{dt}\")")
        if dt == "int64":
            args.append(rng.integers(0, 6, shape).astype(dt))
        elif dt == "int32":
            args.append(rng.integers(-20, 21, shape).astype(dt) if k == 0 else
                        rng.integers(0, 4, shape).astype(dt))  # shift by 0..3
        elif dt == "bool":
            args.append(rng.integers(0, 2, shape).astype(dt))
        elif op in ("asin", "acos", "atanh"):
            args.append(rng.uniform(-0.9, 0.9, shape).astype(dt))
        elif op == "acosh":
            args.append(rng.uniform(1.1, 3.0, shape).astype(dt))
        elif op in ("log", "sqrt", "rsqrt", "power", "prod", "floor_divide", "cumprod"):
            args.append(rng.uniform(0.5, 1.5, shape).astype(dt))
        else:
            args.append(rng.standard_normal(shape).astype(dt))
    text = module_text(f"@R.function\ndef main({', '.join(decls)}):\n"
                       f"    return {body}\n", (mesh,))
    return text, args


# Operators whose operands cannot be distributed tensors keep the opaque rule (every operand
# and result replicated): a sparse matrix (R.SparseTensor) has no placement of its own.
OPAQUE = {"sparse.matmul"}


def test_every_legalized_operator_has_a_rule_and_a_case() -> None:
    get_legalizer("add")
    missing = [op for op in LEGALIZERS if not has_rule(op) and op not in OPAQUE]
    assert missing == []
    assert not any(has_rule(op) for op in OPAQUE)
    assert sorted(set(LEGALIZERS) - set(CASES) - OPAQUE) == []


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("mesh", [2, 3])
def test_operator_on_a_simulated_mesh(op: str, mesh: int) -> None:
    ndim = len(CASES[op][0][0][1])
    for split in range(ndim):
        text, args = program(op, mesh, split)
        check_simulated(text, "main", *args, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("split", range(5))
def test_pooling_in_a_blocked_layout_on_a_simulated_mesh(split: int) -> None:
    """Pooling in a blocked layout (`NHW4cC`): the factor names no axis (5 letters for 5
    dimensions); the batch and channels split, the sub-axis and the spatial axes stay whole."""
    x = np.random.default_rng(1).standard_normal((2, 6, 6, 4, 3)).astype(F)
    text = module_text(
        "@R.function\ndef main(x: R.DTensor((2, 6, 6, 4, 3), \"float32\", \"mesh[0]\", "
        f"\"S[{split}]\")):\n    return R.nn.max_pool2d(x, pool_size=2, strides=2, padding=1, "
        "layout=\"NHW4cC\")\n", (2,))
    check_simulated(text, "main", x, rtol=2e-5, atol=2e-5)
