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


X = ("x", (6, 8), F)
case(("add", "subtract", "multiply", "divide", "maximum", "minimum", "power"),
     [X, ("y", (6, 8), F), ("b", (8,), F)], "R.OP(R.OP(x, y), b)")
case(("floor_divide",), [X, ("y", (6, 8), F)], "R.OP(x, y)")
case(("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"),
     [X, ("b", (8,), F)], "R.OP(x, b)")
case(("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs", "nn.relu",
      "nn.gelu", "nn.silu"), [X], "R.OP(x)")
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
case("broadcast_to", [("b", (8,), F)], "R.broadcast_to(b, R.shape([6, 8]))")
case(("zeros", "ones"), [X], "R.add(x, R.OP(R.shape([6, 8]), \"float32\"))")
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
        elif op in ("log", "sqrt", "rsqrt", "power", "prod", "floor_divide"):
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
