"""Graph-level functions: struct info, bindings, dataflow blocks, operator and cross-level calls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tirc.frontend import parse, parse_file
from tirc.ir import (
    BinOp,
    Constant,
    ExternFunc,
    Function,
    GCall,
    GlobalVar,
    MatchCast,
    ObjectSInfo,
    PrimSInfo,
    ShapeExpr,
    ShapeSInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    Var,
    VarBinding,
)
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter

MLP = Path(__file__).resolve().parents[2] / "samples" / "mlp.tir"
HEADER = "from tvm.script import relax as R\nfrom tvm.script import tir as T\n\n"


def graph(text: str, name: str = "main") -> Function:
    f = parse(HEADER + text, "graph.tir")[name]
    assert isinstance(f, Function)
    return f


def test_mlp_sample_structure() -> None:
    mod = parse_file(MLP)
    main = mod["main"]
    assert isinstance(main, Function)
    x = main.params[0]
    n = x.struct_info.shape[0]
    assert isinstance(n, Var) and str(n.dtype) == "int64"
    assert main.ret_struct_info.shape[0] is n
    (block,) = main.body.blocks
    assert block.is_dataflow
    names = [b.var.name for b in block.bindings]
    assert names == ["lv0", "lv1", "lv2", "lv3", "lv4", "lv5", "gv"]
    assert [b.var.is_dataflow for b in block.bindings] == [True] * 6 + [False]
    assert block.outputs == (block.bindings[-1].var,)
    assert main.body.body is block.bindings[-1].var
    call = block.bindings[1].value
    assert isinstance(call, GCall) and call.op == "call_tir"
    assert call.args[0] == GlobalVar("bias_relu")
    assert isinstance(call.args[1], Tuple) and len(call.args[1].fields) == 2
    (out,) = call.sinfo_args
    assert isinstance(out, TensorSInfo) and out.shape[0] is n and str(out.dtype) == "float32"
    assert [b.value.op for b in block.bindings if b.value.op != "call_tir"] == [
        "matmul", "matmul", "add", "nn.relu", "matmul", "add"]


def test_struct_info_forms() -> None:
    f = graph('''\
@R.function
def main(a: R.Tensor(("n", "n * 2"), "float16"), b: R.Tensor(ndim=2, dtype="int8"),
         c: R.Tuple(R.Tensor((4,), "float32"), R.Object), d: R.Shape([4, "m"]),
         e: R.Prim("int64"), g: R.Tensor, h: R.Shape(ndim=3), k: R.Any):
    return a
''')
    a, b, c, d, e, g, h, k = (p.struct_info for p in f.params)
    assert isinstance(k, ObjectSInfo)  # TVM 0.27 prints R.Object as R.Any
    n, twice = a.shape
    assert isinstance(n, Var) and isinstance(twice, BinOp) and twice.a is n
    assert str(twice.b.dtype) == "int64" and twice.b.value == 2
    assert b.shape is None and b.ndim == 2 and str(b.dtype) == "int8"
    assert isinstance(c, TupleSInfo) and isinstance(c.fields[1], ObjectSInfo)
    assert isinstance(d, ShapeSInfo) and d.values[0].value == 4 and d.values[1].name == "m"
    assert isinstance(e, PrimSInfo) and str(e.dtype) == "int64"
    assert isinstance(g, TensorSInfo) and g.shape is None and g.dtype is None and g.ndim == -1
    assert isinstance(h, ShapeSInfo) and h.values is None and h.ndim == 3


def test_positional_attributes_equal_keywords() -> None:
    f = graph('''\
@R.function
def main(x: R.Tensor((4, 8), "float32")):
    a = R.sum(x, 1, True)
    b = R.sum(x, axis=1, keepdims=True)
    c = R.nn.softmax(x, axis=-1)
    d = R.permute_dims(x, [1, 0])
    e = R.astype(x, "float16")
    return (a, b, c, d, e)
''')
    a, b, c, d, e = (bd.value for bd in f.body.blocks[0].bindings)
    assert a.attrs == b.attrs == {"axis": 1, "keepdims": True}
    assert c.op == "nn.softmax" and c.attrs == {"axis": -1}
    assert d.attrs == {"axes": (1, 0)}
    assert e.attrs == {"dtype": "float16"}
    assert isinstance(f.body.body, Tuple) and len(f.body.body.fields) == 5
    assert not f.body.blocks[0].is_dataflow


def test_shapes_constants_tuples_and_match_cast() -> None:
    f = graph('''\
@R.function
def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(ndim=1, dtype="float32")):
    R.func_attr({"megakernel": "static"})
    n = T.int64()
    r = R.reshape(x, (n * 2, 2))
    s = R.add(r, R.const(1.5, "float32"))
    m = T.int64()
    z = R.match_cast(y, R.Tensor((m,), "float32"))
    t = (s, z)
    u = t[1]
    p = R.call_dps_packed("my_kernel", (x, u), out_sinfo=R.Tensor((n, 4), "float32"))
    return p
''')
    assert f.attrs == {"megakernel": "static"}
    r, s, z, t, u, p = f.body.blocks[0].bindings
    shape = r.value.args[1]
    assert isinstance(shape, ShapeExpr) and shape.values[0].a is f.params[0].struct_info.shape[0]
    const = s.value.args[1]
    assert isinstance(const, Constant) and const.value == 1.5
    assert isinstance(z, MatchCast) and z.struct_info.shape[0].name == "m"
    assert z.var.struct_info is z.struct_info
    assert isinstance(u, VarBinding) and isinstance(u.value, TupleGetItem)
    assert u.value.index == 1 and u.value.tuple_value is t.var
    assert p.value.op == "call_dps_packed" and p.value.args[0] == ExternFunc("my_kernel")


def test_constants_that_are_not_finite_numbers() -> None:
    """TVM writes an infinite constant `R.const(float("inf"), "float32")` (PyTorch's exporter
    in isfinite and logaddexp); it reads as that value and prints back the same way."""
    text = '''\
@R.function
def main(x: R.Tensor((3,), "float32")):
    a = R.not_equal(R.abs(x), R.const(float("inf"), "float32"))
    b = R.maximum(x, R.const(float("-inf"), "float32"))
    return (a, b)
'''
    f = graph(text)
    values = [b.value.args[1].value for b in f.body.blocks[0].bindings if b.value.args[1:]
              and isinstance(b.value.args[1], Constant)]
    assert values == [float("inf"), float("-inf")]
    printed = parse(text).script()
    assert 'R.const(float("inf"), "float32")' in printed
    assert parse(printed).script() == printed
    with pytest.raises(CompileError, match="R.const of anything but a number"):
        graph(text.replace('float("-inf")', 'float("big")'))


def test_a_void_dtype_is_the_default() -> None:
    """TVM prints an unset dtype as "void" (`R.full_like(x, R.const(1, "int32"),
    dtype="void")`, PyTorch's ones_like; older versions as ""): the operator's default, the
    input's dtype, applies."""
    text = '''\
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    y: R.Tensor((2, 3), "float32") = R.full_like(x, R.const(1, "int32"), dtype="void")
    return y
'''
    mod = parse(text)
    call = mod["main"].body.blocks[0].bindings[0].value
    assert isinstance(call, GCall) and "dtype" not in call.attrs
    older = parse(text.replace('"void"', '""'))["main"].body.blocks[0].bindings[0].value
    assert "dtype" not in older.attrs
    got = Interpreter(mod).call("main", np.zeros((2, 3), "float32"))
    assert got.dtype == np.float32 and (got == 1).all()


def test_sizes_declared_as_size_vars() -> None:
    """PyTorch's exporter declares a dynamic dimension `s0 = T.int64(is_size_var=True)`: the
    same size as the signature's `"s0"`, alone or in a tuple; another keyword is an error."""
    text = '''\
@R.function
def main(x: R.Tensor(("s0", 4), "float32"), y: R.Tensor(("s1", 4), "float32")):
    s0 = T.int64(is_size_var=True)
    s1, s2 = T.int64(is_size_var=True), T.int64()
    z: R.Tensor((s0 + s1, 4), "float32") = R.concat((x, y), axis=0)
    return z
'''
    f = graph(text)
    assert f.params[0].struct_info.shape[0].name == "s0"
    with pytest.raises(CompileError):
        graph(text.replace("is_size_var=True)\n", "is_size_var=1)\n"))


def test_relax_op_calls_are_graph_operators() -> None:
    """TVM's tests call the Python API inside scripts (`relax.op.astype(x, "int8")`,
    `relax.op.nn.softmax`): the same operators as `R.astype` and `R.nn.softmax`."""
    f = graph('''\
@R.function
def main(x: R.Tensor((2, 3), "float32")):
    a = relax.op.astype(x, dtype="int8")
    b = relax.op.nn.softmax(x, axis=1)
    return (a, b)
''')
    assert [b.value.op for b in f.body.blocks[0].bindings[:2]] == ["astype", "nn.softmax"]


def test_annotated_bindings_keep_their_struct_info() -> None:
    f = graph('''\
@R.function
def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
    with R.dataflow():
        y: R.Tensor((2,), "float32") = R.exp(x)
        R.output(y)
    return y
''')
    (y,) = f.body.blocks[0].bindings
    assert y.var.struct_info.shape[0].value == 2 and not y.var.is_dataflow


def test_t_var_declares_a_symbolic_size_as_t_int64_does() -> None:
    f = graph('''\
@R.function
def main(x: R.Tensor(("a", "b"), "float32")) -> R.Tensor(("a * b",), "float32"):
    a = T.Var("a", "int64")
    b = T.Var(name="b", dtype="int64")
    c = T.Var("c", "int32")
    r = R.reshape(x, (a * b,))
    return r
''')
    (r,) = f.body.blocks[0].bindings
    a, b = f.params[0].struct_info.shape
    product = r.value.args[1].values[0]
    assert product.a is a and product.b is b


def test_t_var_without_a_dtype_is_an_error() -> None:
    with pytest.raises(CompileError, match=r'error: T.Var takes a name and a dtype'):
        graph('''\
@R.function
def main(x: R.Tensor((2,), "float32")):
    a = T.Var("a")
    return x
''')
