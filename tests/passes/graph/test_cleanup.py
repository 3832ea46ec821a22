"""dead-code-elim and fold-constants, each checked with the interpreter before and after."""

from __future__ import annotations

from graph_support import SAMPLES, assert_same, random_inputs
from tirc.frontend import parse_file
from tirc.ir import IRModule
from tirc.ir.dtype import dtype
from tirc.ir.graph import Constant, GCall, ShapeExpr
from tirc.ir.ops import GraphBuilder
from tirc.passes.graph.dead_code_elim import DeadCodeElim
from tirc.passes.graph.fold_constants import FoldConstants
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.normalize import Normalize

F32 = dtype("float32")


def bound_names(mod: IRModule) -> list[str]:
    return [b.var.name for blk in mod["main"].body.blocks for b in blk.bindings]


def test_dead_bindings_and_functions_go() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    gb.emit("exp", x, name="unused")
    y = gb.emit("negative", x, name="y")
    gb.emit("sum", y, name="also_unused")
    mod = LegalizeOps()(IRModule({"main": gb.function("main", y)}))
    assert sorted(mod.prim_funcs()) == ["exp", "negative", "sum"]
    out = DeadCodeElim()(mod)
    assert bound_names(out) == ["y"]
    assert sorted(out.functions) == ["main", "negative"]
    assert_same(mod, out, random_inputs(mod, {"n": 3}))
    assert DeadCodeElim()(out) is out


def test_loop_functions_with_a_global_symbol_stay() -> None:
    mod = parse_file(SAMPLES / "mlp.tir")
    kernel = mod["bias_relu"]
    exported = mod.with_function("bias_relu", kernel.replace(
        attrs={**kernel.attrs, "global_symbol": "bias_relu"}))
    assert "bias_relu" in DeadCodeElim()(exported)
    unused = Normalize()(mod)
    body = unused["main"]
    calls_kernel = DeadCodeElim()(unused)
    assert "bias_relu" in calls_kernel and calls_kernel["main"] is body


def test_scalar_constants_fold_and_chains_follow() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    a = gb.emit("add", Constant(1.5, F32), Constant(2.0, F32), name="a")
    b = gb.emit("multiply", a, Constant(2.0, F32), name="b")
    c = gb.emit("sqrt", b, name="c")
    y = gb.emit("multiply", x, c, name="y")
    mod = IRModule({"main": gb.function("main", y)})
    folded = FoldConstants()(mod)
    values = {b.var.name: b.value for b in folded["main"].body.blocks[0].bindings}
    assert values["a"] == Constant(3.5, F32)
    assert values["b"] == Constant(7.0, F32)
    assert isinstance(values["c"], Constant) and abs(values["c"].value - 7.0 ** 0.5) < 1e-6
    assert values["y"].args[1] == values["c"]
    cleaned = DeadCodeElim()(folded)
    assert bound_names(cleaned) == ["y"]
    args = random_inputs(mod, {"n": 2})
    assert_same(mod, [folded, cleaned, LegalizeOps()(cleaned)], args)


def test_shape_of_a_known_shape_folds() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    shape = gb.emit(GCall("shape_of", (x,)), name="shape")
    folded = FoldConstants()(IRModule({"main": gb.function("main", shape)}))
    value = folded["main"].body.blocks[0].bindings[0].value
    assert isinstance(value, ShapeExpr) and value.values[0] is n


def test_legalized_constant_calls_fold_through_the_loop_interpreter() -> None:
    gb = GraphBuilder()
    x = gb.param("x", (3,))
    c = gb.emit("exp", Constant(0.0, F32), name="c")
    y = gb.emit("add", x, c, name="y")
    mod = LegalizeOps()(IRModule({"main": gb.function("main", y)}))
    folded = DeadCodeElim()(FoldConstants()(mod))
    assert bound_names(folded) == ["y"]
    assert folded["main"].body.blocks[0].bindings[0].value.args[1].fields[1] == \
        Constant(1.0, F32)
    assert_same(mod, folded, random_inputs(mod, {}))
