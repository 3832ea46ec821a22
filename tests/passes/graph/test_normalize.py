"""normalize: struct info on every binding, canonical calls, errors at the binding's span."""

from __future__ import annotations

import pytest
from tirc.ir import CompileError, IRModule
from tirc.ir.expr import Var
from tirc.ir.graph import (
    BindingBlock,
    Function,
    GCall,
    GVar,
    MatchCast,
    PrimValue,
    SeqExpr,
    VarBinding,
)
from tirc.ir.ops import sinfo_text, tensor
from tirc.ir.ops.sinfo_util import INT64, dim
from tirc.ir.span import Span
from tirc.passes.graph.normalize import Normalize

n = Var("n", INT64)


def span(line: int) -> Span:
    return Span("mlp.tir", line, 13, line, 30)


def module(*calls: tuple[str, tuple, dict], ret_sinfo=None) -> IRModule:  # noqa: ANN001
    """main(x: (n, 256), b: (256,)) with a chain of unannotated bindings."""
    x = GVar(name="x", struct_info=tensor((n, 256), "float32"))
    b = GVar(name="b", struct_info=tensor((256,), "float32"))
    env = {"x": x, "b": b}
    bindings = []
    for k, (op, args, attrs) in enumerate(calls):
        v = GVar(name=f"lv{k}", is_dataflow=True)
        call = GCall(op, tuple(env.get(a, a) for a in args), attrs, span=span(10 + k))
        bindings.append(VarBinding(v, call, span=span(10 + k)))
        env[f"lv{k}"] = v
    last = bindings[-1].var
    body = SeqExpr((BindingBlock(tuple(bindings), True, (last,)),), last)
    return IRModule({"main": Function("main", (x, b), body, ret_sinfo)})


def sinfos(mod: IRModule) -> list[str]:
    f = mod["main"]
    return [sinfo_text(b.var.struct_info) for b in f.body.blocks[0].bindings]


def test_infers_every_binding_and_the_return() -> None:
    mod = Normalize()(module(("add", ("x", "b"), {}), ("nn.relu", ("lv0",), {}),
                             ("sum", ("lv1",), {"axis": PrimValue(dim(1)), "keepdims": True})))
    assert sinfos(mod) == ['R.Tensor((n, 256), "float32")'] * 2 + ['R.Tensor((n, 1), "float32")']
    f = mod["main"]
    assert sinfo_text(f.ret_struct_info) == 'R.Tensor((n, 1), "float32")'
    # Uses point to the new variables, the dataflow output and the body too.
    b = f.body.blocks[0].bindings
    assert b[1].value.args[0] is b[0].var and f.body.body is b[2].var
    assert f.body.blocks[0].outputs == (b[2].var,)
    # Attributes are canonical Python values.
    assert b[2].value.attrs == {"axis": (1,), "keepdims": True}
    again = Normalize()(mod)
    assert again is mod


def test_shape_error_is_at_the_binding() -> None:
    mod = module(("add", ("x", "b"), {}), ("reshape", ("lv0", (n + 1, 256)), {}))
    with pytest.raises(CompileError) as info:
        Normalize()(mod)
    d = info.value.diagnostics[0]
    assert d.span == span(11)
    assert d.render().splitlines()[0] == \
        "mlp.tir:11:13: error: R.reshape: cannot reshape (n, 256) to (n + 1, 256)"


def test_annotation_must_agree() -> None:
    mod = module(("add", ("x", "b"), {}))
    f = mod["main"]
    b = f.body.blocks[0].bindings[0]
    annotated = GVar(name="lv0", struct_info=tensor((n, 128), "float32"), is_dataflow=True)
    bad = VarBinding(annotated, b.value, span=span(3))
    body = SeqExpr((BindingBlock((bad,), True, (annotated,)),), annotated)
    with pytest.raises(CompileError, match=r"lv0: the annotation R.Tensor\(\(n, 128\), "
                       r"\"float32\"\) does not match the value's R.Tensor\(\(n, 256\), "):
        Normalize()(IRModule({"main": Function("main", f.params, body)}))


def test_declared_return_must_agree() -> None:
    mod = module(("add", ("x", "b"), {}), ret_sinfo=tensor((n, 256), "float16"))
    with pytest.raises(CompileError, match=r"main returns R.Tensor\(\(n, 256\), \"float32\"\), "
                       r"but its declared return type is R.Tensor\(\(n, 256\), \"float16\"\)"):
        Normalize()(mod)


def test_match_cast_binds_new_sizes() -> None:
    m = Var("m", INT64)
    mod = module(("add", ("x", "b"), {}))
    f = mod["main"]
    b0 = f.body.blocks[0].bindings[0]
    cast_var = GVar(name="lv1", is_dataflow=True)
    mc = MatchCast(cast_var, b0.var, tensor((m, 256), "float32"))
    body = SeqExpr((BindingBlock((b0, mc), True, (cast_var,)),), cast_var)
    out = Normalize()(IRModule({"main": Function("main", f.params, body)}))
    assert sinfo_text(out["main"].ret_struct_info) == 'R.Tensor((m, 256), "float32")'
    never = MatchCast(cast_var, b0.var, tensor((m, 3, 2), "float32"), span=span(4))
    body = SeqExpr((BindingBlock((b0, never), True, (cast_var,)),), cast_var)
    with pytest.raises(CompileError, match="R.match_cast of lv1 can never succeed: rank 2 is "
                       "not 3"):
        Normalize()(IRModule({"main": Function("main", f.params, body)}))
