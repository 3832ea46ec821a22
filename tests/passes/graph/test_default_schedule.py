"""default-schedule: the scheduled kernels compute what the unscheduled ones do (reference
interpreter, row counts that hit the row-group remainder), with the expected loop kinds."""

from __future__ import annotations

import numpy as np
from graph_support import SAMPLES, assert_same, interpret, random_inputs, run_passes
from tirc.frontend import parse_file
from tirc.ir import IRModule
from tirc.ir.graph import ShapeExpr
from tirc.ir.ops import GraphBuilder
from tirc.ir.ops.sinfo_util import dim
from tirc.ir.stmt import For
from tirc.ir.visitor import post_order_visit
from tirc.passes.graph.annotate_op_pattern import AnnotateOpPattern
from tirc.passes.graph.dead_code_elim import DeadCodeElim
from tirc.passes.graph.default_schedule import DefaultSchedule
from tirc.passes.graph.fuse_ops import FuseOps
from tirc.passes.graph.fuse_tir import FuseTIR
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.normalize import Normalize

FUSED = (Normalize(), LegalizeOps(), AnnotateOpPattern(), FuseOps(), FuseTIR(), DeadCodeElim())


def loop_kinds(func: object) -> list[str]:
    kinds: list[str] = []
    post_order_visit(func, lambda n: kinds.append(n.kind.value) if isinstance(n, For) else None)
    return kinds


def test_mlp_kernels_tiled_with_epilogue() -> None:
    mods = run_passes(parse_file(SAMPLES / "mlp.tir"), (*FUSED, DefaultSchedule()))
    fused, scheduled = mods[-2], mods[-1]
    kernel = scheduled["fused_matmul1_add_relu"]
    text = scheduled.script()
    kinds = loop_kinds(kernel)
    # groups of 8 rows (the last clamped to row n - 1) and, for n == 1, one row of wide tiles
    assert kinds.count("parallel") == 2 and "vectorized" in kinds and "unroll" in kinds
    assert "T.min(" in text and "n == T.int64(1)" in text
    # the matmul result and the bias sum live in tile-local accumulators only
    assert [b.name for b in kernel.body.block.alloc_buffers] == []
    assert 'scope="local"' in text and "T.fma(" in text
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
    user = parse_file(SAMPLES / "mlp.tir")
    assert DefaultSchedule()(user) is user


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
    assert text.count('_init"):') == 2 and "T.init()" not in text
    for size in (0, 1, 5):
        args = random_inputs(mod, {"n": size}, seed=size)
        (got,) = interpret(mods[-1], args)
        np.testing.assert_allclose(got, args[0].sum(axis=1) + args[1].sum(), rtol=1e-5,
                                   atol=1e-5)
    # A constant reduction extent keeps the init inside the block.
    gb = GraphBuilder()
    m = gb.sym("m")
    fixed = gb.emit("sum", gb.param("z", (m, 4)), axis=1)
    scheduled = run_passes(IRModule({"main": gb.function("main", fixed)}),
                           (*FUSED, DefaultSchedule()))[-1]
    assert "T.init()" in scheduled.script() and '_init"):' not in scheduled.script()
