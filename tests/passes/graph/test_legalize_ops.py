"""legalize-ops: every operator becomes a call_tir whose loop function, run by the reference
interpreter, computes what numpy computes (symbolic sizes bound at several values)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tirc.ir import IRModule, PrimFunc
from tirc.ir.dtype import dtype
from tirc.ir.graph import Constant, GCall, ShapeExpr, Tuple
from tirc.ir.interpreter import Interpreter
from tirc.ir.ops import GraphBuilder
from tirc.ir.ops.sinfo_util import dim
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.verify import verify_module

N = "n"
F32 = "float32"


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x).astype(x.dtype)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, axes: tuple) -> np.ndarray:
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


# (op, argument shapes and dtypes, attributes, numpy reference)
Case = tuple[str, list[tuple[tuple, str]], dict[str, Any], Callable[..., Any]]
CASES: list[Case] = [
    ("add", [((N, 6), F32), ((6,), F32)], {}, np.add),
    ("subtract", [((N, 1, 4), F32), ((3, 1), F32)], {}, np.subtract),
    ("multiply", [((N, 6), F32), ((N, 6), F32)], {}, np.multiply),
    ("divide", [((N, 6), F32), ((6,), F32)], {}, np.divide),
    ("divide", [((N, 6), "int32"), ((6,), "int32")], {},
     lambda a, b: (np.fmod(a, b) * 0 + (a - np.fmod(a, b)) // b).astype(a.dtype)),
    ("floor_divide", [((N, 3), "int32"), ((3,), "int32")], {}, np.floor_divide),
    ("maximum", [((N, 3), F32), ((1,), F32)], {}, np.maximum),
    ("minimum", [((2, N), F32), ((N,), F32)], {}, np.minimum),
    ("power", [((N, 3), F32), ((3,), F32)], {}, np.power),
    ("less", [((N, 3), F32), ((3,), F32)], {}, np.less),
    ("exp", [((N, 5), F32)], {}, np.exp),
    ("log", [((N, 5), F32)], {}, np.log),
    ("sqrt", [((N, 5), F32)], {}, np.sqrt),
    ("rsqrt", [((N, 5), F32)], {}, lambda a: 1 / np.sqrt(a)),
    ("tanh", [((N, 5), F32)], {}, np.tanh),
    ("sigmoid", [((N, 5), F32)], {}, lambda a: 1 / (1 + np.exp(-a))),
    ("negative", [((N, 5), F32)], {}, np.negative),
    ("abs", [((N, 5), "int32")], {}, np.abs),
    ("nn.relu", [((N, 5), F32)], {}, lambda a: np.maximum(a, 0)),
    ("nn.gelu", [((N, 5), F32)], {}, lambda a: 0.5 * a * (1 + _erf(a / math.sqrt(2)))),
    ("nn.silu", [((N, 5), F32)], {}, lambda a: a / (1 + np.exp(-a))),
    ("astype", [((N, 5), F32)], {"dtype": "int32"}, lambda a: a.astype("int32")),
    ("matmul", [((N, 8), F32), ((8, 5), F32)], {}, np.matmul),
    ("matmul", [((2, N, 4), F32), ((1, 4, 3), F32)], {}, np.matmul),
    ("matmul", [((4,), F32), ((N, 4, 3), F32)], {}, np.matmul),
    ("matmul", [((N, 4), F32), ((4,), F32)], {}, np.matmul),
    ("sum", [((N, 4, 5), F32)], {"axis": 1}, lambda a: a.sum(axis=1)),
    ("mean", [((N, 4, 5), F32)], {"axis": [0, 2], "keepdims": True},
     lambda a: a.mean(axis=(0, 2), keepdims=True)),
    ("max", [((N, 4), F32)], {}, lambda a: np.max(a)),
    ("min", [((N, 4), "int32")], {"axis": -1}, lambda a: a.min(axis=-1)),
    ("prod", [((N, 3), F32)], {"axis": 0}, lambda a: a.prod(axis=0)),
    ("nn.softmax", [((N, 7), F32)], {"axis": -1}, lambda a: _softmax(a, -1)),
    ("nn.softmax", [((N, 7), F32)], {"axis": 0}, lambda a: _softmax(a, 0)),
    ("nn.log_softmax", [((N, 7), F32)], {}, lambda a: np.log(_softmax(a, -1))),
    ("nn.layer_norm", [((N, 6), F32), ((6,), F32), ((6,), F32)], {"axes": [-1]},
     lambda a, g, b: _layer_norm(a, g, b, (-1,))),
    ("nn.layer_norm", [((2, N, 3), F32), ((N, 3), F32), ((N, 3), F32)], {"axes": [1, 2]},
     lambda a, g, b: _layer_norm(a, g, b, (1, 2))),
    ("nn.rms_norm", [((N, 6), F32), ((6,), F32)], {},
     lambda a, w: a / np.sqrt((a * a).mean(axis=-1, keepdims=True) + 1e-5) * w),
    ("permute_dims", [((N, 3, 4), F32)], {"axes": [2, 0, 1]}, lambda a: a.transpose(2, 0, 1)),
    ("permute_dims", [((N, 3), F32)], {}, lambda a: a.T),
    ("expand_dims", [((N, 3), F32)], {"axis": [0, 3]}, lambda a: a[None, :, :, None]),
    ("squeeze", [((1, N, 1), F32)], {"axis": [0]}, lambda a: a[0]),
    ("split", [((N, 10), F32)], {"indices_or_sections": [3, 7], "axis": 1},
     lambda a: tuple(np.split(a, [3, 7], axis=1))),
    ("split", [((9, N), F32)], {"indices_or_sections": 4},
     lambda a: tuple(np.split(a, [3, 6, 9]))),
    ("take", [((10, 4), F32), ((N,), "int64")], {"axis": 0}, lambda a, i: np.take(a, i, 0)),
    ("take", [((N, 4), F32), ((2, 3), "int32")], {"axis": 1}, lambda a, i: np.take(a, i, 1)),
    ("take", [((N, 4), F32), ((5,), "int64")], {}, lambda a, i: np.take(a, i)),
]


def sym_shape(shape: tuple, n: Any) -> tuple:
    return tuple(n if d == N else d for d in shape)


POSITIVE = ("power", "log", "sqrt", "rsqrt")


def random_array(shape: tuple, dt: str, rng: np.random.Generator) -> np.ndarray:
    if dt.startswith("int"):
        arr = rng.integers(-20, 20, shape).astype(dt)
        arr[arr == 0] = 3
        return arr
    return rng.standard_normal(shape).astype(dt)


def legalized(build: Callable[[GraphBuilder], Any]) -> tuple[IRModule, IRModule]:
    gb = GraphBuilder()
    out = build(gb)
    before = IRModule({"main": gb.function("main", out)})
    after = LegalizeOps()(before)
    problems = verify_module(after)
    assert not problems, "\n".join(d.render() for d in problems)
    return before, after


def check(after: IRModule, args: list[np.ndarray], expected: Any) -> None:
    got = Interpreter(after).call("main", *args)
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    else:
        assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_legalized_operator_matches_numpy(case: Case) -> None:
    op, specs, attrs, ref = case

    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        params = [gb.param(f"x{k}", sym_shape(s, n), dt) for k, (s, dt) in enumerate(specs)]
        return gb.emit(op, *params, **attrs)

    before, after = legalized(build)
    call = after["main"].body.blocks[0].bindings[0].value
    assert call.op == "call_tir" and isinstance(after[call.args[0].name], PrimFunc)
    rng = np.random.default_rng(7)
    for n in (1, 3):
        args = [random_array(sym_shape(s, n), dt, rng) for s, dt in specs]
        if op in POSITIVE:
            args = [np.abs(a) + np.float32(0.1) for a in args]
        if op == "take":
            args[1] = rng.integers(-4, 4, args[1].shape).astype(args[1].dtype)
        check(after, args, ref(*args))


def test_concat_reshape_broadcast_and_creation() -> None:
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        a = gb.param("a", (n, 2), F32)
        b = gb.param("b", (3, 2), F32)
        c = gb.emit("concat", Tuple((a, b, a)), axis=0)
        r = gb.emit("reshape", c, ShapeExpr((dim(-1),)))
        z = gb.emit("zeros", ShapeExpr((n * 2 + 3, dim(2))), dtype="float32")
        o = gb.emit("ones", ShapeExpr((dim(2),)), dtype="float32")
        f = gb.emit("full", ShapeExpr((n, dim(2))), Constant(1.5, dtype(F32)))
        bt = gb.emit("broadcast_to", o, ShapeExpr((n, dim(2))))
        s = gb.emit("add", gb.emit("reshape", z, ShapeExpr((dim(-1),))), r)
        return Tuple((s, gb.emit("add", f, bt)))

    _, after = legalized(build)
    for n in (1, 4):
        a = np.arange(n * 2, dtype=F32).reshape(n, 2)
        b = -np.arange(6, dtype=F32).reshape(3, 2)
        flat = np.concatenate([a, b, a]).reshape(-1)
        check(after, [a, b], (flat, np.full((n, 2), 2.5, F32)))


def test_symbolic_size_becomes_a_scalar_parameter() -> None:
    """A kernel whose only use of n is `n * 2` takes n through call_tir's tir_vars."""
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        return gb.emit("zeros", ShapeExpr((n * 2,)), dtype="float32")

    _, after = legalized(build)
    call = after["main"].body.blocks[0].bindings[0].value
    assert isinstance(call.args[2], ShapeExpr) and call.args[2].values[0].name == "n"
    kernel = after[call.args[0].name]
    assert [p.name for p in kernel.params][-1] == "n"


def test_identical_kernels_are_shared() -> None:
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        x = gb.param("x", (n, 4), F32)
        b = gb.param("b", (4,), F32)
        y = gb.emit("add", gb.emit("add", x, b), b)
        return gb.emit("add", y, x)

    _, after = legalized(build)
    assert sorted(after.prim_funcs()) == ["add", "add1"]
    ops = [b.value.args[0].name for b in after["main"].body.blocks[0].bindings]
    assert ops == ["add", "add", "add1"]


def test_leaves_cross_level_calls_alone() -> None:
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        x = gb.param("x", (n, 4), F32)
        return gb.emit(GCall("shape_of", (x,)))

    before, after = legalized(build)
    assert after["main"] is before["main"] and not after.prim_funcs()
