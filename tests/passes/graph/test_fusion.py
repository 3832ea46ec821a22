"""annotate-op-pattern, fuse-ops and fuse-tir: kinds, groups, kernel counts, and meaning kept
(the reference interpreter before and after each pass)."""

from __future__ import annotations

from typing import Any

import pytest
from graph_support import SAMPLES, assert_same, kernel_calls, random_inputs, run_passes
from tirc.frontend import parse_file
from tirc.ir import IRModule
from tirc.ir.graph import ShapeExpr, Tuple
from tirc.ir.ops import GraphBuilder
from tirc.ir.ops.sinfo_util import dim
from tirc.passes.graph.annotate_op_pattern import AnnotateOpPattern, OpPattern
from tirc.passes.graph.dead_code_elim import DeadCodeElim
from tirc.passes.graph.fuse_ops import FuseOps
from tirc.passes.graph.fuse_tir import FuseTIR
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.normalize import Normalize

PIPELINE = (Normalize(), LegalizeOps(), AnnotateOpPattern(), FuseOps(), FuseTIR(),
            DeadCodeElim())


def kinds(mod: IRModule) -> dict[str, OpPattern]:
    return {n: OpPattern(f.attrs["op_pattern"]) for n, f in mod.prim_funcs().items()}


def test_op_patterns_of_legalized_kernels() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 8))
    b = gb.param("b", (8,))
    gb.emit("add", x, b)
    gb.emit("broadcast_to", b, ShapeExpr((n, dim(8))))
    gb.emit("permute_dims", x)
    gb.emit("concat", Tuple((x, x)), axis=1)
    gb.emit("reshape", x, ShapeExpr((n, dim(2), dim(4))))
    gb.emit("sum", x, axis=1)
    gb.emit("matmul", x, gb.param("w", (8, 3)))
    last = gb.emit("nn.softmax", x)
    mod = IRModule({"main": gb.function("main", last)})
    got = kinds(run_passes(mod, (LegalizeOps(), AnnotateOpPattern()))[-1])
    assert got == {
        "add": OpPattern.ELEMWISE, "broadcast_to": OpPattern.BROADCAST,
        "transpose": OpPattern.INJECTIVE, "concatenate": OpPattern.INJECTIVE,
        "reshape": OpPattern.INJECTIVE, "sum": OpPattern.COMM_REDUCE,
        "matmul": OpPattern.OUT_EWISE_FUSABLE, "softmax": OpPattern.OUT_EWISE_FUSABLE,
    }


def test_user_kernel_pattern_and_existing_annotation_kept() -> None:
    mod = parse_file(SAMPLES / "mlp.tir")
    out = AnnotateOpPattern()(mod)
    assert out["bias_relu"].attrs["op_pattern"] == OpPattern.ELEMWISE
    assert AnnotateOpPattern()(out) is out


def test_mlp_fuses_into_three_kernels() -> None:
    mods = run_passes(parse_file(SAMPLES / "mlp.tir"), PIPELINE)
    fused = mods[4]
    assert kernel_calls(fused) == ["fused_matmul_bias_relu", "fused_matmul1_add_relu",
                                   "fused_matmul2_add1"]
    group = fused["fused_matmul1_add_relu"]
    assert group.attrs == {"Primitive": 1}
    assert kernel_calls(fused, "fused_matmul1_add_relu") == ["matmul1", "add", "relu"]
    final = mods[-1]
    assert kernel_calls(final) == ["fused_matmul_bias_relu", "fused_matmul1_add_relu",
                                   "fused_matmul2_add1"]
    assert sorted(final.functions) == ["fused_matmul1_add_relu", "fused_matmul2_add1",
                                       "fused_matmul_bias_relu", "main"]
    assert final["fused_matmul1_add_relu"].attrs["op_pattern"] == OpPattern.OUT_EWISE_FUSABLE
    assert_same(mods[0], mods[1:], random_inputs(mods[0], {"n": 1}))
    assert_same(mods[0], mods[-1], random_inputs(mods[0], {"n": 3}))


def test_transformer_block_kernels_after_fusion() -> None:
    mods = run_passes(parse_file(SAMPLES / "transformer_block.tir"), PIPELINE)
    assert kernel_calls(mods[-1]) == [
        "rms_norm", "matmul", "matmul", "matmul", "fused_reshape_transpose",
        "fused_reshape_transpose1", "fused_reshape_transpose2", "fused_matmul1_multiply_add",
        "softmax", "matmul2", "fused_transpose2_reshape1", "fused_matmul_add1", "rms_norm",
        "matmul3", "fused_matmul3_silu_multiply1", "fused_matmul4_add1"]
    args = random_inputs(mods[0], {"b": 1, "s": 2})
    assert_same(mods[0], mods[-1], args)


def _diamond() -> IRModule:
    """exp feeds both a sum and a multiply whose results are added: a diamond."""
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    e = gb.emit("exp", x)
    s = gb.emit("sum", e, axis=1, keepdims=True)
    m = gb.emit("multiply", e, x)
    return IRModule({"main": gb.function("main", gb.emit("add", m, s))})


def test_producer_with_two_consumers_fuses_only_into_their_post_dominator() -> None:
    mods = run_passes(_diamond(), PIPELINE[1:5])
    # exp's consumers meet at add; the sum on the way is a reduction, so exp stays alone
    # while multiply fuses into add.
    assert kernel_calls(mods[3]) == ["exp", "sum", "fused_multiply_add"]
    assert_same(mods[0], mods[1:], random_inputs(mods[0], {"n": 3}))


def test_elementwise_fuses_into_reduction_and_injective_chains() -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 6))
    e = gb.emit("exp", x)
    s = gb.emit("sum", e, axis=0)
    r = gb.emit("reshape", s, ShapeExpr((dim(2), dim(3))))
    t = gb.emit("permute_dims", r)
    mod = IRModule({"main": gb.function("main", t)})
    mods = run_passes(mod, PIPELINE[1:])
    assert kernel_calls(mods[3]) == ["fused_exp_sum", "fused_reshape_transpose"]
    fused = mods[-1]["fused_exp_sum"]
    assert [b.name for b in fused.buffers] == ["x", "lv1"]
    assert [b.name for b in fused.body.block.alloc_buffers] == ["lv"]
    assert_same(mods[0], mods[-1], random_inputs(mod, {"n": 2}))


@pytest.mark.parametrize("repeat", [2])
def test_same_kernel_twice_in_a_group_gets_unique_blocks(repeat: Any) -> None:
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    y = x
    for _ in range(repeat):
        y = gb.emit("exp", y)
    mod = IRModule({"main": gb.function("main", y)})
    mods = run_passes(mod, PIPELINE[1:])
    fused = mods[-1]["fused_exp_exp"]
    text = mods[-1].script()
    assert 'T.block("T_exp")' in text and 'T.block("T_exp_1")' in text
    assert len(fused.body.block.alloc_buffers) == 1
    assert_same(mods[0], mods[-1], random_inputs(mod, {"n": 2}))
