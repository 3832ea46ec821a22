"""The reference interpreter on graph functions: call_tir, operators, shapes, externs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from lowering_support import block, buf, loop, prim_func
from tirc.ir import (
    BindingBlock,
    BufferStore,
    Constant,
    ExternFunc,
    Function,
    GCall,
    GlobalVar,
    GVar,
    IntImm,
    IRModule,
    MatchCast,
    SeqExpr,
    ShapeExpr,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    Var,
    VarBinding,
)
from tirc.ir import expr as E
from tirc.ir.dtype import dtype
from tirc.ir.interpreter import Interpreter, InterpreterError, run_graph_func
from tirc.ir.interpreter.ops import OPS

F32 = dtype("float32")


def tensor(*shape, dt: str = "float32") -> TensorSInfo:
    return TensorSInfo(tuple(IntImm(d) if isinstance(d, int) else d for d in shape), dtype(dt))


def graph(name: str, params: list[GVar], bindings: list, result, dataflow: bool = True) -> Function:
    outs = (bindings[-1].var,) if dataflow and bindings else ()
    blk = BindingBlock(tuple(bindings), is_dataflow=dataflow, outputs=outs)
    return Function(name, tuple(params), SeqExpr((blk,), result))


def add_relu_kernel() -> object:
    """Out[i, j] = max(X[i, j] + Y[j], 0) over a symbolic number of rows."""
    n = E.var("n", "int64")
    X, Y, Out = buf("X", (n, 4)), buf("Y", (4,)), buf("Out", (n, 4))
    i, j, vi, vj = Var("i", dtype("int64")), Var("j"), Var("vi", dtype("int64")), Var("vj")
    value = E.maximum(X.vload(vi, vj) + Y.vload(vj), E.FloatImm(0.0, F32))
    blk = block("add_relu", [(vi, n, "S"), (vj, 4, "S")], [i, j],
                BufferStore(Out, value, (vi, vj)))
    return prim_func("add_relu", [X, Y, Out], loop(i, n, loop(j, 4, blk)))


def mlp_module() -> IRModule:
    n = E.var("n", "int64")
    x = GVar("x", tensor(n, 3))
    w = GVar("w", tensor(3, 4))
    b = GVar("b", tensor(4))
    h = GVar("h", tensor(n, 4), is_dataflow=True)
    y = GVar("y", tensor(n, 4), is_dataflow=True)
    bindings = [
        VarBinding(h, GCall("matmul", (x, w))),
        VarBinding(y, GCall("call_tir", (GlobalVar("add_relu"), Tuple((h, b))),
                            sinfo_args=(tensor(n, 4),))),
    ]
    main = graph("main", [x, w, b], bindings, y)
    return IRModule({"add_relu": add_relu_kernel(), "main": main})


def test_mlp_with_symbolic_batch() -> None:
    rng = np.random.default_rng(0)
    mod = mlp_module()
    for batch in (1, 5):
        x = rng.standard_normal((batch, 3)).astype("float32")
        w = rng.standard_normal((3, 4)).astype("float32")
        b = rng.standard_normal(4).astype("float32")
        out = run_graph_func(mod, "main", [x, w, b])
        assert out.shape == (batch, 4) and out.dtype == np.float32
        np.testing.assert_allclose(out, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_graph_argument_checks() -> None:
    mod = mlp_module()
    x = np.zeros((2, 3), dtype="float32")
    w = np.zeros((3, 4), dtype="float32")
    with pytest.raises(InterpreterError, match=r"^argument b: expected dtype float32, got "
                                               r"float64$"):
        run_graph_func(mod, "main", [x, w, np.zeros(4)])
    with pytest.raises(InterpreterError, match=r"^argument w, dimension 1: dimension is 5, "
                                               r"expected 4$"):
        run_graph_func(mod, "main", [x, np.zeros((3, 5), dtype="float32"),
                                     np.zeros(4, dtype="float32")])
    with pytest.raises(InterpreterError, match=r"^main takes 3 arguments, got 1$"):
        run_graph_func(mod, "main", [x])


def test_tuples_constants_shapes_and_match_cast() -> None:
    m = E.var("m", "int64")
    x = GVar("x", tensor(2, 6))
    t = GVar("t", TupleSInfo((tensor(2, 3), tensor(2, 3))))
    first = GVar("first")
    scaled = GVar("scaled")
    flat = GVar("flat")
    cast = GVar("cast")
    bindings = [
        VarBinding(t, GCall("split", (x,), {"indices_or_sections": 2, "axis": 1})),
        VarBinding(first, TupleGetItem(t, 1)),
        VarBinding(scaled, GCall("multiply", (first, Constant(2.0, F32)))),
        VarBinding(flat, GCall("reshape", (scaled, ShapeExpr((IntImm(-1),))))),
        MatchCast(cast, flat, tensor(m)),
    ]
    result = Tuple((cast, GCall("full", (ShapeExpr((m,)), Constant(7, dtype("int32"))))))
    mod = IRModule({"f": graph("f", [x], bindings, result, dataflow=False)})
    a = np.arange(12, dtype="float32").reshape(2, 6)
    got, filled = run_graph_func(mod, "f", [a])
    np.testing.assert_array_equal(got, (a[:, 3:] * 2).reshape(-1))
    np.testing.assert_array_equal(filled, np.full(6, 7, dtype="int32"))


def test_call_dps_packed_uses_registered_externs() -> None:
    x = GVar("x", tensor(3))
    y = GVar("y")
    call = GCall("call_dps_packed", (ExternFunc("my_double"), Tuple((x,))),
                 sinfo_args=(tensor(3),))
    mod = IRModule({"f": graph("f", [x], [VarBinding(y, call)], y)})

    def double(inp: np.ndarray, out: np.ndarray) -> None:
        out[...] = inp * 2

    a = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(Interpreter(mod, {"my_double": double}).call("f", a), a * 2)
    with pytest.raises(InterpreterError, match=r"^R.call_dps_packed: no extern registered for "
                                               r"'my_double'$"):
        run_graph_func(mod, "f", [a])


def test_unknown_operator() -> None:
    x = GVar("x", tensor(3))
    y = GVar("y")
    mod = IRModule({"f": graph("f", [x], [VarBinding(y, GCall("nn.frobnicate", (x,)))], y)})
    with pytest.raises(InterpreterError, match=r"^the interpreter has no implementation of "
                                               r"R.nn.frobnicate$"):
        run_graph_func(mod, "f", [np.zeros(3, dtype="float32")])


X = np.random.default_rng(3).standard_normal((2, 3, 4)).astype("float32")
P = np.abs(X) + 0.5


def _softmax(a: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


OP_CASES = [
    ("add", (X, X[0]), {}, X + X[0]),
    ("subtract", (X, P), {}, X - P),
    ("multiply", (X, P), {}, X * P),
    ("divide", (X, P), {}, X / P),
    ("maximum", (X, P), {}, np.maximum(X, P)),
    ("minimum", (X, P), {}, np.minimum(X, P)),
    ("power", (P, np.float32(2)), {}, P ** 2),
    ("exp", (X,), {}, np.exp(X)),
    ("log", (P,), {}, np.log(P)),
    ("sqrt", (P,), {}, np.sqrt(P)),
    ("rsqrt", (P,), {}, 1 / np.sqrt(P)),
    ("tanh", (X,), {}, np.tanh(X)),
    ("sigmoid", (X,), {}, 1 / (1 + np.exp(-X))),
    ("negative", (X,), {}, -X),
    ("abs", (X,), {}, np.abs(X)),
    ("matmul", (X, P[0].T), {}, X @ P[0].T),
    ("nn.relu", (X,), {}, np.maximum(X, 0)),
    ("nn.gelu", (X,), {},
     (0.5 * X * (1 + np.vectorize(math.erf)(X / math.sqrt(2)))).astype("float32")),
    ("nn.silu", (X,), {}, X / (1 + np.exp(-X))),
    ("nn.softmax", (X,), {"axis": 1}, _softmax(X, 1)),
    ("nn.log_softmax", (X,), {}, np.log(_softmax(X, -1))),
    ("nn.layer_norm", (X, P[0, 0], X[0, 0]), {"axes": [-1], "epsilon": 1e-5},
     (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, keepdims=True) + 1e-5) * P[0, 0]
     + X[0, 0]),
    ("nn.rms_norm", (X, P[0, 0]), {"axes": [-1]},
     X / np.sqrt((X * X).mean(-1, keepdims=True) + 1e-5) * P[0, 0]),
    ("sum", (X,), {"axis": [1, 2]}, X.sum(axis=(1, 2))),
    ("mean", (X,), {"axis": [0], "keepdims": True}, X.mean(axis=0, keepdims=True)),
    ("max", (X,), {"axis": [2]}, X.max(axis=2)),
    ("min", (X,), {}, X.min()),
    ("reshape", (X, (4, 6)), {}, X.reshape(4, 6)),
    ("permute_dims", (X,), {"axes": [2, 0, 1]}, X.transpose(2, 0, 1)),
    ("permute_dims", (X,), {}, X.transpose()),
    ("expand_dims", (X,), {"axis": [0, 2]}, X[None, :, None]),
    ("squeeze", (X[:1],), {"axis": [0]}, X[0]),
    ("concat", ((X, P),), {"axis": 2}, np.concatenate([X, P], axis=2)),
    ("take", (X, np.array([2, 0])), {"axis": 2}, X[:, :, [2, 0]]),
    ("broadcast_to", (X[0, 0], (3, 4)), {}, np.broadcast_to(X[0, 0], (3, 4))),
    ("astype", (X,), {"dtype": "float16"}, X.astype("float16")),
    ("zeros", ((2, 3),), {"dtype": "int32"}, np.zeros((2, 3), "int32")),
    ("ones", ((2,),), {"dtype": "float32"}, np.ones(2, "float32")),
    ("full", ((2,), np.float32(3)), {}, np.full(2, 3, "float32")),
]


@pytest.mark.parametrize(("name", "args", "attrs", "want"), OP_CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(OP_CASES)])
def test_operator_table(name: str, args: tuple, attrs: dict, want: np.ndarray) -> None:
    got = OPS[name](*args, **attrs)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_integer_divide_truncates_and_split_sections() -> None:
    a = np.array([7, -7], dtype="int32")
    b = np.array([2, 2], dtype="int32")
    np.testing.assert_array_equal(OPS["divide"](a, b), [3, -3])
    np.testing.assert_array_equal(OPS["floor_divide"](a, b), [3, -4])
    parts = OPS["split"](np.arange(10), 3)
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
