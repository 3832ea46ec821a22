"""default-schedule on the graph samples' kernels: the schedule rules' kernels compute what the
unscheduled ones do (reference interpreter, row counts that hit a tile's guarded tail), with
the expected loop kinds, and the schedule applied is reported as a note."""

from __future__ import annotations

import numpy as np
from graph_support import SAMPLES, assert_same, interpret, random_inputs, run_passes
from tirc.frontend import parse_file
from tirc.ir import IRModule
from tirc.ir.graph import ShapeExpr
from tirc.ir.ops import GraphBuilder
from tirc.ir.ops.sinfo_util import dim
from tirc.ir.printer import print_node
from tirc.ir.stmt import For
from tirc.ir.visitor import post_order_visit
from tirc.passes.graph.annotate_op_pattern import AnnotateOpPattern
from tirc.passes.graph.dead_code_elim import DeadCodeElim
from tirc.passes.graph.default_schedule import DefaultSchedule
from tirc.passes.graph.fuse_ops import FuseOps
from tirc.passes.graph.fuse_tir import FuseTIR
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.normalize import Normalize
from tirc.passes.pass_base import PassContext

FUSED = (Normalize(), LegalizeOps(), AnnotateOpPattern(), FuseOps(), FuseTIR(), DeadCodeElim())


def loop_kinds(func: object) -> list[str]:
    kinds: list[str] = []
    post_order_visit(func, lambda n: kinds.append(n.kind.value) if isinstance(n, For) else None)
    return kinds


def test_mlp_kernels_tiled_with_epilogue() -> None:
    ctx = PassContext()
    mods = run_passes(parse_file(SAMPLES / "mlp.tir"), (*FUSED, DefaultSchedule()), ctx)
    fused, scheduled = mods[-2], mods[-1]
    kernel = scheduled["fused_matmul1_add_relu"]
    text = print_node(kernel)
    kinds = loop_kinds(kernel)
    # batch 1 (a run-time dispatch) gets the matrix-vector schedule, other batches the tiles
    assert "if n == T.int64(1):" in text and "T.block(\"matmul_n1_update\")" in text
    assert kinds.count("parallel") == 2 and "vectorized" in kinds and "unroll" in kinds
    # the matmul accumulates in registers (a local cache), the bias and relu read them
    assert 'scope="local"' in text and 'T.block("T_relu")' in text
    notes = "\n".join(ctx.notes)
    assert "default schedule of fused_matmul1_add_relu (matvec on matmul_n1, matmul on " \
        "matmul)" in notes and '@S.schedule("fused_matmul1_add_relu", target="llvm")' in notes
    for n in (1, 2, 4, 6, 7):
        assert_same(fused, scheduled, random_inputs(fused, {"n": n}, seed=n))


def test_spatial_reduction_and_injective_kernels() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 6, 8))
    s = gb.emit("nn.softmax", x)
    t = gb.emit("permute_dims", s, axes=[2, 0, 1])
    r = gb.emit("reshape", t, ShapeExpr((dim(8), n * 6)))
    m = gb.emit("sum", r, axis=1)
    mod = IRModule({"main": gb.function("main", gb.emit("exp", m))})
    mods = run_passes(mod, (*FUSED, DefaultSchedule()))
    for name, f in mods[-1].prim_funcs().items():
        assert "parallel" in loop_kinds(f) or "vectorized" in loop_kinds(f), name
    assert_same(mods[-2], mods[-1], random_inputs(mod, {"n": 2}))


def test_batched_matmul_and_untouched_kernels() -> None:
    mods = run_passes(parse_file(SAMPLES / "transformer_block.tir"), (*FUSED, DefaultSchedule()))
    scheduled = mods[-1]
    assert all(f.attrs.get("tirc.scheduled") for f in scheduled.prim_funcs().values())
    for b, s in ((1, 2), (2, 3), (3, 7)):  # batches of rows that cross matrices
        assert_same(mods[-2], scheduled, random_inputs(mods[0], {"b": b, "s": s}))
    hand = parse_file(SAMPLES / "dense_tiled.tir")  # its loops are scheduled by hand
    assert DefaultSchedule()(hand) is hand


def test_reduction_over_a_possibly_empty_domain_starts_from_its_init() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (3, n))
    total = gb.emit("sum", gb.param("y", (n, 4)))
    rows = gb.emit("sum", x, axis=1)
    mod = IRModule({"main": gb.function("main", gb.emit("add", rows, total))})
    mods = run_passes(mod, (*FUSED, DefaultSchedule()))
    text = mods[-1].script()
    # Both sums reduce over n: each init is a block before the reduction loops.
    assert text.count('_init"):') >= 2 and "T.init()" not in text.split("T_sum_rf")[0]
    for size in (0, 1, 5):
        args = random_inputs(mod, {"n": size}, seed=size)
        (got,) = interpret(mods[-1], args)
        np.testing.assert_allclose(got, args[0].sum(axis=1) + args[1].sum(), rtol=1e-5,
                                   atol=1e-5)
