"""memory-plan: storage tokens by dtype and size, reused after last use, symbolic sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from graph_support import run_everywhere
from tirc.ir import IRModule
from tirc.ir.ops import GraphBuilder
from tirc.ir.ops.sinfo_util import dim_text
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.memory_plan import MemoryPlanPass, plan_memory


def planned(build: Any) -> tuple[IRModule, Any]:
    gb = GraphBuilder()
    out = build(gb)
    mod = LegalizeOps()(IRModule({"main": gb.function("main", out)}))
    return mod, plan_memory(mod["main"])


def tokens_by_name(mod: IRModule, plan: Any) -> dict[str, int]:
    return {tid[0].name: t for tid, t in plan.storage.items()}


def test_chain_reuses_two_tokens() -> None:
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        y = gb.param("x", (n, 4))
        for name in ("a", "b", "c", "d", "e"):
            y = gb.emit("exp", y, name=name)
        return y

    mod, plan = planned(build)
    # a and b are live together; c reuses a's storage, d reuses b's; e is the result.
    assert tokens_by_name(mod, plan) == {"a": 0, "b": 1, "c": 0, "d": 1}
    assert {str(dt): dim_text(v) for dt, v in plan.workspace_bytes.items()} == \
        {"float32": "(n * 16 + 63) // 64 * 128"}


def test_sizes_compare_symbolically_and_tokens_grow() -> None:
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        x = gb.param("x", (n, 8))
        w = gb.param("w", (8, 32))
        v = gb.param("v", (32, 8))
        a = gb.emit("exp", x, name="a")            # n * 32 bytes
        b = gb.emit("matmul", a, w, name="b")      # n * 128 bytes
        c = gb.emit("matmul", b, v, name="c")      # n * 32 bytes: a's token is free again
        d = gb.emit("exp", c, name="d")            # n * 32: b's token (bigger) is free
        return gb.emit("exp", d, name="e")

    mod, plan = planned(build)
    got = tokens_by_name(mod, plan)
    assert got["a"] != got["b"] and got["c"] == got["a"] and got["d"] == got["b"]
    assert dim_text(plan.tokens[got["b"]].size) == "n * 128"


def test_dtypes_and_incomparable_sizes_get_their_own_tokens() -> None:
    def build(gb: GraphBuilder) -> Any:
        n, m = gb.sym("n"), gb.sym("m")
        x = gb.param("x", (n, 4))
        z = gb.param("z", (m, 4))
        a = gb.emit("astype", x, dtype="int32", name="a")
        b = gb.emit("astype", a, dtype="float32", name="b")
        c = gb.emit("exp", z, name="c")
        d = gb.emit("exp", c, name="d")
        return gb.emit("add", gb.emit("sum", b, name="s1"), gb.emit("sum", d, name="s2"))

    mod, plan = planned(build)
    got = tokens_by_name(mod, plan)
    dtypes = {tid[0].name: str(plan.tokens[t].dtype) for tid, t in plan.storage.items()}
    assert dtypes["a"] == "int32" and dtypes["b"] == "float32"
    assert got["c"] not in (got["a"], got["b"])  # m-sized vs n-sized: not comparable
    assert set(plan.workspace_bytes) == {plan.tokens[got["a"]].dtype,
                                         plan.tokens[got["b"]].dtype}


def test_plan_is_shown_in_the_attributes() -> None:
    def build(gb: GraphBuilder) -> Any:
        n = gb.sym("n")
        return gb.emit("exp", gb.emit("exp", gb.param("x", (n, 4)), name="t"), name="y")

    mod, _ = planned(build)
    out = MemoryPlanPass()(mod)
    attrs = out["main"].attrs
    assert dim_text(attrs["tirc.workspace_bytes"]["float32"]) == "(n * 16 + 63) // 64 * 64"
    assert list(attrs["tirc.storage"]) == ["t"]


NESTED_TUPLE = """\
@I.ir_module
class Module:
    @T.prim_func
    def neg(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            with T.block("neg"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = -A[vi, vj]

    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        cls = Module
        y1 = R.call_tir(cls.neg, (x,), out_sinfo=R.Tensor((2, 3), "float32"))
        y2 = R.add(x, y1)
        t = (y1, y2)
        nt = (t, y1)
        nt0 = nt[0]
        a = nt0[1]
        b = nt[1]
        z = R.call_tir(cls.neg, (a,), out_sinfo=R.Tensor((2, 3), "float32"))
        w = R.multiply(z, b)
        return w
"""


def test_items_of_nested_tuple_literals_are_their_fields(tmp_path: Path) -> None:
    """`nt0 = nt[0]` of `nt = (t, y1)` is the tuple `t`, so `nt0[1]` is the tensor y2 (at
    -O0, where no pass folds the items first, lower-graph found no tensor for it)."""
    x = np.arange(6, dtype="float32").reshape(2, 3)
    for got in run_everywhere(tmp_path, NESTED_TUPLE, [x]):
        np.testing.assert_array_equal(got[0], -(x - x) * -x)
