"""lower-graph: the host loop function, run by the reference interpreter, computes what the
graph function computes (workspace views, match_cast, copies of returned parameters)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graph_support import SAMPLES, interpret, random_inputs, run_passes
from tirc.frontend import parse, parse_file
from tirc.ir import IRModule, PrimFunc, structural_equal
from tirc.ir.graph import ExternFunc, GCall, Tuple
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.ops import GraphBuilder, tensor
from tirc.ir.structural import first_difference
from tirc.passes.graph.annotate_op_pattern import AnnotateOpPattern
from tirc.passes.graph.dead_code_elim import DeadCodeElim
from tirc.passes.graph.default_schedule import DefaultSchedule
from tirc.passes.graph.fuse_ops import FuseOps
from tirc.passes.graph.fuse_tir import FuseTIR
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.lower_graph import LowerGraph
from tirc.passes.graph.memory_plan import MemoryPlanPass
from tirc.passes.graph.normalize import Normalize

ALL = (Normalize(), LegalizeOps(), AnnotateOpPattern(), FuseOps(), FuseTIR(), DeadCodeElim(),
       DefaultSchedule(), MemoryPlanPass(), LowerGraph())


def run_host(mod: IRModule, args: list[np.ndarray], outs: list[np.ndarray]) -> list[np.ndarray]:
    Interpreter(mod).call("main", *args, *outs)
    return outs


def check(graph: IRModule, host: IRModule, sizes: dict[str, int]) -> None:
    args = random_inputs(graph, sizes)
    want = interpret(graph, args)
    got = run_host(host, args, [np.zeros_like(w) for w in want])
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_mlp_host_function() -> None:
    mods = run_passes(parse_file(SAMPLES / "mlp.tir"), ALL)
    host = mods[-1]
    assert list(host.functions) == ["main"]
    main = host["main"]
    assert isinstance(main, PrimFunc) and main.attrs["global_symbol"] == "main"
    assert [p.name for p in main.params] == ["x", "w1", "b1", "w2", "b2", "w3", "b3", "gv"]
    assert "workspace_float32 = T.decl_buffer" in host.script()
    for n in (1, 5):
        check(mods[0], host, {"n": n})


def test_transformer_host_function() -> None:
    mods = run_passes(parse_file(SAMPLES / "transformer_block.tir"), ALL)
    check(mods[0], mods[-1], {"b": 1, "s": 2})


def _lowered(build: Any) -> tuple[IRModule, IRModule]:
    gb = GraphBuilder()
    out = build(gb)
    mod = IRModule({"main": gb.function("main", out)})
    return mod, run_passes(mod, ALL)[-1]


def test_tuple_results_returned_parameters_and_match_cast() -> None:
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        x = gb.param("x", (n, 4))
        e = gb.emit("exp", x, name="e")
        m = gb.sym("m")
        c = gb.match_cast(e, tensor((m, 4), "float32"), name="c")
        s = gb.emit("sum", c, axis=1, name="s")
        return Tuple((s, x, e))

    graph, host = _lowered(build)
    main = host["main"]
    assert [p.name for p in main.params] == ["x", "s_out0", "x_out1", "e_out2"]
    for n in (1, 3):
        check(graph, host, {"n": n})


def test_returned_match_cast_to_another_shape_checks_before_writing_the_result() -> None:
    """`w = R.match_cast(e, R.Tensor((3, 4)))` returned, `e` of shape `(n, 4)`: `e` is computed
    in the workspace, checked, then copied to the result; written into the `(3, 4)` result, an
    `n` of 5 overran it before the check (which compared the result's shape with itself).
    Alongside, a later tensor may not take `e`'s storage before the copy."""
    def build(gb: GraphBuilder) -> Any:
        x = gb.param("x", (gb.sym("n"), 4))
        e = gb.emit("exp", x, name="e")
        w = gb.match_cast(e, tensor((3, 4), "float32"), name="w")
        t = gb.emit("sum", x, axis=[1], name="t")
        return Tuple((w, gb.emit("sum", t, name="u")))

    graph, host = _lowered(build)
    check(graph, host, {"n": 3})
    args = [np.ones((5, 4), "float32")]
    outs = [np.zeros((3, 4), "float32"), np.zeros((), "float32")]
    with pytest.raises(InterpreterError, match=r"R.match_cast of w: dimension 0 is not 3"):
        run_host(host, args, outs)


def test_workspace_of_a_tensor_sized_by_a_match_cast() -> None:
    """`t` of shape `(c,)`, `c` bound by a match_cast of a computed tensor, lives in the
    workspace, which is allocated at entry, before the cast runs: its size is the dimension
    the cast reads `c` from (8), not `c` (undefined there), and the cast binds `c` after."""
    def build(gb: GraphBuilder) -> Any:
        x = gb.param("x", (8, 1))
        e = gb.emit("tanh", x, name="e")
        c = gb.match_cast(e, tensor((gb.sym("c"), 1), "float32"), name="c")
        t = gb.emit("sum", c, axis=[1], name="t")
        return gb.emit("max", t, axis=[0], name="s")

    graph, host = _lowered(build)
    assert "c * T.int64(4)" not in host.script()
    check(graph, host, {})


def test_a_result_sized_by_a_match_cast_has_the_size_it_was_read_from() -> None:
    """`s` of shape `(m,)`, `m` bound by a match_cast of `e` of shape `(n, 4)`: the result
    parameter has shape `(n,)`, which the caller can allocate from the arguments (`m` alone,
    known only inside the function, left tirc.runtime unable to)."""
    def build(gb: GraphBuilder) -> Any:
        e = gb.emit("exp", gb.param("x", (gb.sym("n"), 4)), name="e")
        c = gb.match_cast(e, tensor((gb.sym("m"), 4), "float32"), name="c")
        return gb.emit("sum", c, axis=[1], name="s")

    graph, host = _lowered(build)
    main = host["main"]
    assert [getattr(d, "name", d) for d in main.buffer_map[main.params[-1]].shape] == ["n"]
    check(graph, host, {"n": 3})


def test_call_dps_packed_becomes_an_external_call() -> None:
    """The binding becomes one `tirc.call_packed` in the host function: inputs, then the output
    (a workspace view), each with its extents; the printed form parses back."""
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    e = gb.emit("exp", x, name="e")
    out = gb.emit(GCall("call_dps_packed", (ExternFunc("ext"), Tuple((e, x))), {},
                        (tensor((n, 4), "float32"),)), name="p")
    s = gb.emit("sum", out, axis=1, name="s")
    mod = IRModule({"main": gb.function("main", s)})
    host = run_passes(mod, ALL)[-1]
    text = host.script()
    assert ('T.evaluate(T.call_intrin("int32", "tirc.call_packed", "ext", "main", '
            'T.call_intrin("handle", "tirc.dltensor", "in", e[0, 0], n, T.int64(4)), '
            'T.call_intrin("handle", "tirc.dltensor", "in", x[0, 0], n, T.int64(4)), '
            'T.call_intrin("handle", "tirc.dltensor", "out", p[0, 0], n, T.int64(4))))') in text
    again = parse(text)
    assert structural_equal(again, host), first_difference(host, again)

    def ext(a: np.ndarray, b: np.ndarray, o: np.ndarray) -> None:
        o[...] = a * b

    for k in (1, 3):
        args = random_inputs(mod, {"n": k})
        want = interpret(mod, args, externs={"ext": ext})
        got = np.zeros_like(want[0])
        Interpreter(host, {"ext": ext}).call("main", *args, got)
        np.testing.assert_allclose(got, want[0], rtol=1e-5, atol=1e-5)


def test_a_failing_external_call_stops_the_host_function() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    out = gb.emit(GCall("call_dps_packed", (ExternFunc("ext"), Tuple((x,))), {},
                        (tensor((n, 4), "float32"),)), name="out")
    host = LowerGraph()(IRModule({"main": gb.function("main", out)}))
    args = [np.ones((2, 4), np.float32), np.zeros((2, 4), np.float32)]
    with pytest.raises(InterpreterError, match=r"^main: external function 'ext' returned 3$"):
        Interpreter(host, {"ext": lambda a, o: 3}).call("main", *args)
    with pytest.raises(InterpreterError, match=r"^main: no extern registered for 'ext'$"):
        Interpreter(host).call("main", *args)


def test_call_dps_packed_sample_through_the_graph_passes() -> None:
    """mlp_dps.tir: the external call stays an opaque binding through fusion, then becomes a
    call in the host function; the interpreter runs it with a Python stand-in throughout."""
    def bias_relu(h: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        out[...] = np.maximum(h + b, 0)

    mods = run_passes(parse_file(SAMPLES / "mlp_dps.tir"), ALL)
    calls = [b.value.op for b in mods[-3]["main"].body.blocks[0].bindings]
    assert calls == ["call_tir", "call_dps_packed", "call_tir"]
    externs = {"mlp_bias_relu": bias_relu}
    for n in (1, 3):
        args = random_inputs(mods[0], {"n": n})
        want = interpret(mods[0], args, externs=externs)
        got = interpret(mods[-3], args, externs=externs)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
        host_out = np.zeros_like(want[0])
        Interpreter(mods[-1], externs).call("main", *args, host_out)
        np.testing.assert_allclose(host_out, want[0], rtol=1e-4, atol=1e-4)
