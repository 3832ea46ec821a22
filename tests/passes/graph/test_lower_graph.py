"""lower-graph: the host loop function, run by the reference interpreter, computes what the
graph function computes (workspace views, match_cast, copies of returned parameters)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graph_support import SAMPLES, interpret, random_inputs, run_passes
from tirc.frontend import parse_file
from tirc.ir import CompileError, IRModule, PrimFunc
from tirc.ir.graph import ExternFunc, GCall, Tuple
from tirc.ir.interpreter import Interpreter
from tirc.ir.ops import GraphBuilder, tensor
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


def test_unsupported_bindings_are_diagnostics() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    out = gb.emit(GCall("call_dps_packed", (ExternFunc("ext"), Tuple((x,))), {},
                        (tensor((n, 4), "float32"),)), name="out")
    mod = IRModule({"main": gb.function("main", out)})
    with pytest.raises(CompileError, match="lower-graph: R.call_dps_packed is not supported"):
        LowerGraph()(mod)


def test_call_dps_packed_sample_through_the_graph_passes() -> None:
    """mlp_dps.tir: the external call stays an opaque binding through fusion; the interpreter
    runs it with a Python stand-in; lowering it to the CPU is not supported yet."""
    def bias_relu(h: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        out[...] = np.maximum(h + b, 0)

    mods = run_passes(parse_file(SAMPLES / "mlp_dps.tir"), ALL[:-2])
    calls = [b.value.op for b in mods[-1]["main"].body.blocks[0].bindings]
    assert calls == ["call_tir", "call_dps_packed", "call_tir"]
    args = random_inputs(mods[0], {"n": 3})
    externs = {"mlp_bias_relu": bias_relu}
    want = interpret(mods[0], args, externs=externs)
    got = interpret(mods[-1], args, externs=externs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(CompileError, match="R.call_dps_packed is not supported"):
        LowerGraph()(MemoryPlanPass()(mods[-1]))
