"""Struct info inference of every operator: shapes (symbolic), dtypes and error messages."""

from __future__ import annotations

from typing import Any

import pytest
from tirc.ir import CompileError
from tirc.ir.expr import Var
from tirc.ir.graph import (
    Constant,
    GCall,
    GlobalVar,
    GVar,
    ShapeExpr,
    TensorSInfo,
    Tuple,
    TupleSInfo,
)
from tirc.ir.ops import infer_expr, sinfo_text, tensor
from tirc.ir.ops.sinfo_util import INT64, dim
from tirc.ir.span import Span

n = Var("n", INT64)
m = Var("m", INT64)
SPAN = Span("model.tir", 12, 9, 12, 24)


def t(*shape: Any, dt: str = "float32") -> GVar:
    return GVar(name="x", struct_info=tensor(shape, dt))


def infer(op: str, *args: Any, **attrs: Any) -> str:
    _, s = infer_expr(GCall(op, tuple(args), attrs, span=SPAN))
    return sinfo_text(s)


def error(op: str, *args: Any, **attrs: Any) -> str:
    with pytest.raises(CompileError) as info:
        infer(op, *args, **attrs)
    d = info.value.diagnostics[0]
    assert d.span == SPAN
    return d.message


def shape(*dims: Any) -> ShapeExpr:
    return ShapeExpr(tuple(dim(d) for d in dims))


F32 = '"float32"'


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum",
                                "power"])
def test_binary_broadcasting(op: str) -> None:
    assert infer(op, t(n, 256), t(256)) == f"R.Tensor((n, 256), {F32})"
    assert infer(op, t(n, 1, 4), t(3, 1)) == f"R.Tensor((n, 3, 4), {F32})"
    assert infer(op, t(1, m), t(n, 1)) == f"R.Tensor((n, m), {F32})"
    assert infer(op, t(n * 2, 8), t(n + n, 8)) == f"R.Tensor((n * 2, 8), {F32})"


def test_binary_errors() -> None:
    assert error("add", t(n, 256), t(n, 255)) == "R.add: cannot broadcast (n, 256) with (n, 255)"
    assert error("add", t(n), t(n + 1)) == "R.add: cannot broadcast (n,) with (n + 1,)"
    # n and m may be equal: accepted, the first operand's size (checked at run time,
    # tests/ir/ops/test_size_checks.py)
    assert infer("multiply", t(n, 4), t(m, 4)) == f"R.Tensor((n, 4), {F32})"
    assert error("add", t(4), t(4, dt="float16")) == "R.add: dtype mismatch: float32 and float16"
    assert error("add", t(4), t(4), alpha=1) == "R.add: unexpected keyword argument 'alpha'"
    assert error("add", t(4)) == "R.add: missing argument 'x2'"


def test_scalar_constant_and_comparison() -> None:
    c = Constant(2.0, tensor((), "float32").dtype)
    assert infer("multiply", t(n, 3), c) == f"R.Tensor((n, 3), {F32})"
    assert infer("less", t(n, 3), t(3)) == 'R.Tensor((n, 3), "bool")'


def test_unary_and_astype() -> None:
    for op in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs",
               "nn.relu", "nn.gelu", "nn.silu"):
        assert infer(op, t(n, 7)) == f"R.Tensor((n, 7), {F32})"
    assert error("exp", t(3, dt="int32")) == "R.exp: needs a floating-point tensor, got int32"
    assert infer("astype", t(n, 2), dtype="float16") == 'R.Tensor((n, 2), "float16")'


def test_matmul() -> None:
    assert infer("matmul", t(n, 256), t(256, 512)) == f"R.Tensor((n, 512), {F32})"
    assert infer("matmul", t(2, n, 8), t(8, 3)) == f"R.Tensor((2, n, 3), {F32})"
    assert infer("matmul", t(4, 1, n, 8), t(3, 8, 5)) == f"R.Tensor((4, 3, n, 5), {F32})"
    assert infer("matmul", t(8), t(8, 3)) == f"R.Tensor((3,), {F32})"
    assert infer("matmul", t(n, 8), t(8)) == f"R.Tensor((n,), {F32})"
    assert infer("matmul", t(n, 8, dt="float16"), t(8, 2, dt="float16"), out_dtype="float32") \
        == f"R.Tensor((n, 2), {F32})"
    assert error("matmul", t(n, 256), t(255, 8)) == \
        "R.matmul: reduction dimensions differ: (n, 256) @ (255, 8)"


def test_reductions() -> None:
    for op in ("sum", "mean", "max", "min"):
        assert infer(op, t(n, 4, 5), axis=1) == f"R.Tensor((n, 5), {F32})"
        assert infer(op, t(n, 4, 5), axis=(-1, 0), keepdims=True) == \
            f"R.Tensor((1, 4, 1), {F32})"
        assert infer(op, t(n, 4)) == f"R.Tensor((), {F32})"
    assert error("sum", t(n, 4), axis=2) == \
        "R.sum: axis 2 is out of range for a tensor of rank 2"


def test_softmax_and_norms() -> None:
    assert infer("nn.softmax", t(n, 8), axis=-1) == f"R.Tensor((n, 8), {F32})"
    assert infer("nn.log_softmax", t(n, 8)) == f"R.Tensor((n, 8), {F32})"
    assert infer("nn.layer_norm", t(n, 8), t(8), t(8), axes=[-1]) == f"R.Tensor((n, 8), {F32})"
    assert infer("nn.rms_norm", t(n, 8), t(8)) == f"R.Tensor((n, 8), {F32})"
    assert error("nn.rms_norm", t(n, 8), t(7)) == (
        "R.nn.rms_norm: 'weight' must have shape (8,) (the normalized axes of (n, 8)), got (7,)")
    assert error("nn.softmax", t(n, 8), axis=3) == \
        "R.nn.softmax: axis 3 is out of range for a tensor of rank 2"


def test_reshape() -> None:
    assert infer("reshape", t(n, 256), shape(n, 4, 64)) == f"R.Tensor((n, 4, 64), {F32})"
    assert infer("reshape", t(n, 4, 64), shape(n, -1)) == f"R.Tensor((n, 256), {F32})"
    assert infer("reshape", t(n, 256), shape(n * 2, 128)) == f"R.Tensor((n * 2, 128), {F32})"
    assert error("reshape", t(n, 256), shape(n + 1, 256)) == \
        "R.reshape: cannot reshape (n, 256) to (n + 1, 256)"
    # n * 256 and n * 255 agree when n is 0: accepted, checked at run time
    assert infer("reshape", t(n, 256), shape(n, 255)) == f"R.Tensor((n, 255), {F32})"


def test_permute_expand_squeeze() -> None:
    assert infer("permute_dims", t(n, 4, 5), axes=[2, 0, 1]) == f"R.Tensor((5, n, 4), {F32})"
    assert infer("permute_dims", t(n, 4)) == f"R.Tensor((4, n), {F32})"
    assert error("permute_dims", t(n, 4), axes=[0, 0]) == \
        "R.permute_dims: axes (0, 0) are not a permutation of 2 dimensions"
    assert infer("expand_dims", t(n, 4), axis=[0, -1]) == f"R.Tensor((1, n, 4, 1), {F32})"
    assert infer("squeeze", t(1, n, 1), axis=[0]) == f"R.Tensor((n, 1), {F32})"
    assert infer("squeeze", t(1, 3, 1)) == f"R.Tensor((3,), {F32})"
    assert error("squeeze", t(1, n), axis=[1]) == "R.squeeze: dimension 1 of (1, n) is not 1"


def test_concat_split_take() -> None:
    assert infer("concat", Tuple((t(n, 4), t(m, 4))), axis=0) == f"R.Tensor((n + m, 4), {F32})"
    assert error("concat", Tuple((t(n, 4), t(n, 5))), axis=0) == \
        "R.concat: cannot concatenate (n, 4) with (n, 5) along axis 0"
    assert infer("split", t(n, 10), indices_or_sections=[3, 7], axis=1) == \
        f"R.Tuple(R.Tensor((n, 3), {F32}), R.Tensor((n, 4), {F32}), R.Tensor((n, 3), {F32}))"
    assert infer("split", t(10, n), indices_or_sections=4) == (
        f"R.Tuple(R.Tensor((3, n), {F32}), R.Tensor((3, n), {F32}), R.Tensor((3, n), {F32}), "
        f"R.Tensor((1, n), {F32}))")
    assert infer("take", t(100, 16), t(n, dt="int64"), axis=0) == f"R.Tensor((n, 16), {F32})"
    assert error("take", t(100, 16), t(n), axis=0) == \
        "R.take: indices must be integers, got float32"


def test_broadcast_to_and_creation() -> None:
    assert infer("broadcast_to", t(1, 4), shape(n, 4)) == f"R.Tensor((n, 4), {F32})"
    assert error("broadcast_to", t(3, 4), shape(n, 5)) == \
        "R.broadcast_to: cannot broadcast (3, 4) to (n, 5)"
    assert infer("broadcast_to", t(3, 4), shape(n, 4)) == f"R.Tensor((n, 4), {F32})"
    assert infer("zeros", shape(n, 3), dtype="int32") == 'R.Tensor((n, 3), "int32")'
    assert infer("ones", shape(2)) == f"R.Tensor((2,), {F32})"
    c = Constant(7, tensor((), "int64").dtype)
    assert infer("full", shape(n), c) == 'R.Tensor((n,), "int64")'


def test_call_tir_checks_the_kernel() -> None:
    from tirc.ir import IRModule, PrimFunc, make_buffer
    from tirc.ir.stmt import Evaluate

    k = Var("k", INT64)
    x = make_buffer("X", (k, dim(8)))
    y = make_buffer("Y", (k, dim(8)))
    handles = (Var("x", x.data.dtype), Var("y", y.data.dtype))
    kernel = PrimFunc("kernel", handles, {handles[0]: x, handles[1]: y},
                      Evaluate(dim(0)))
    mod = IRModule({"kernel": kernel})
    out = tensor((n, 8), "float32")

    def call(arg: GVar, o: TensorSInfo = out) -> str:
        c = GCall("call_tir", (GlobalVar("kernel"), Tuple((arg,))), {}, (o,), span=SPAN)
        return sinfo_text(infer_expr(c, mod)[1])

    assert call(t(n, 8)) == f"R.Tensor((n, 8), {F32})"
    with pytest.raises(CompileError, match=r"output 0 of kernel \(Y\): expected shape "
                                           r"\(n, 8\), got \(m, 8\)"):
        call(t(n, 8), tensor((m, 8), "float32"))
    with pytest.raises(CompileError, match=r"argument 0 of kernel \(X\): expected dtype "
                                           r"float32, got float16"):
        call(t(n, 8, dt="float16"))
    with pytest.raises(CompileError, match="no loop function named 'nope'"):
        infer_expr(GCall("call_tir", (GlobalVar("nope"), Tuple(())), {}, (out,)), mod)


def test_shape_of_and_tuple_results() -> None:
    assert infer("shape_of", t(n, 3)) == "R.Shape([n, 3])"
    tup = GVar(name="tup", struct_info=TupleSInfo((tensor((n,), "float32"),)))
    assert error("add", tup, t(3)).startswith("R.add: argument 'x1' must be a tensor")


def test_unknown_operator() -> None:
    with pytest.raises(CompileError, match="unknown operator R.frobnicate"):
        infer("frobnicate", t(3))
