"""propagate-sharding: placements inferred forwards, backwards and sideways, redistributions
where operators need them, statistics for normalizations over a split axis, warnings."""

from __future__ import annotations

import numpy as np
import pytest
from dist_support import ccl_ops, check_simulated, lowered, module_text, placements, propagated
from script_modules import distributed_sample_references
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.structural import structural_equal
from tirc.passes.pass_base import PassContext

MLP = module_text('''@R.function
def main(x: R.Tensor((16, 32), "float32"), w1: R.Tensor((32, 64), "float32"),
         w2: R.Tensor((64, 32), "float32")):
    h = R.matmul(x, w1)
    a = R.nn.gelu(h)
    a2 = R.dist.annotate_sharding(a, device_mesh="mesh[0]", placement="S[1]")
    y = R.matmul(a2, w2)
    return y
''')


def test_one_annotation_shards_the_mlp_like_megatron() -> None:
    mod = propagated(MLP)
    assert placements(mod) == {"x": "R", "w1": "S[1]", "w2": "S[0]", "h": "S[1]", "a": "S[1]",
                               "y": "P", "y_r1": "R"}
    assert [op for op, _ in ccl_ops(lowered(MLP))] == ["ccl.allreduce"]


def test_propagated_module_is_a_fixed_point() -> None:
    once = propagated(MLP)
    again = propagated(once.script())
    assert structural_equal(once, again)
    assert once.script() == again.script()


def test_mlp_on_simulated_meshes() -> None:
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((16, 32), (32, 64), (64, 32))]
    for mesh in (1, 2, 3, 4):
        check_simulated(MLP.replace("(2,), I.Range(0, 2)", f"({mesh},), I.Range(0, {mesh})"),
                        "main", *args, rtol=1e-4, atol=1e-4)


def test_transformer_block_over_heads_needs_two_all_reduces() -> None:
    text = distributed_sample_references().BY_NAME["transformer_block_tp"].path.read_text()
    for mesh in ("2", "4"):
        ctx = PassContext(config={"sharding.mesh": mesh})
        assert [(op, a.get("op_type")) for op, a in ccl_ops(lowered(text, ctx))] == \
            [("ccl.allreduce", "sum")] * 2
        assert ctx.warnings == []
    places = placements(propagated(text))
    assert places["qh"] == places["kt"] == places["probs"] == "S[1]"  # the head dimension
    assert places["attn"] == places["down"] == "P"


def test_split_normalizations_reduce_statistics_not_tensors() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((6, 10), "float32", "mesh[0]", "S[1]"), g: R.Tensor((10,), "float32"),
         b: R.Tensor((10,), "float32")):
    s = R.nn.softmax(x, axis=1)
    l = R.nn.log_softmax(x, axis=-1)
    n = R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)
    r = R.nn.rms_norm(x, g, axes=[-1], epsilon=1e-5)
    return (s, l, n, r)
''')
    ctx = PassContext()
    low = lowered(text, ctx)
    ops = ccl_ops(low)
    assert {op for op, _ in ops} == {"ccl.allreduce", "ccl.shard"}
    assert [a["op_type"] for op, a in ops if op == "ccl.allreduce"] == \
        ["max", "sum", "max", "sum", "sum", "sum", "sum"]
    assert ctx.warnings == []
    rng = np.random.default_rng(0)
    check_simulated(text, "main", rng.standard_normal((6, 10)).astype("float32"),
                    rng.standard_normal(10).astype("float32"),
                    rng.standard_normal(10).astype("float32"))


def test_gathering_a_whole_tensor_is_a_warning_at_its_line() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((4, 6), "float32", "mesh[0]", "S[0]")):
    y = R.split(x, 2, axis=0)
    return y
''')
    ctx = PassContext()
    propagated(text, ctx)
    (w,) = ctx.warnings
    line = next(k for k, t in enumerate(text.splitlines(), 1) if "R.split" in t)
    assert w.severity == "warning" and w.span is not None and w.span.line == line
    assert "all-gathers the whole (4, 6) float32 tensor 'x' (96 bytes)" in w.message
    assert "R.split needs it whole" in w.message


def test_explicit_redistribution_is_no_warning() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((4, 6), "float32", "mesh[0]", "S[0]")):
    y = R.dist.redistribute(x, device_mesh="mesh[0]", placement="R")
    return y
''')
    ctx = PassContext()
    low = lowered(text, ctx)
    assert ctx.warnings == [] and [op for op, _ in ccl_ops(low)] == ["ccl.allgather"]


def test_annotated_output_is_computed_split_not_sliced() -> None:
    text = module_text('''@R.function
def main(x: R.Tensor((8, 6), "float32"), y: R.Tensor((8, 6), "float32")):
    z = R.add(x, y)
    e = R.exp(z)
    out = R.dist.annotate_sharding(e, device_mesh="mesh[0]", placement="S[0]")
    return out
''')
    mod = propagated(text)
    assert placements(mod) == {"x": "S[0]", "y": "S[0]", "z": "S[0]", "e": "S[0]"}
    assert ccl_ops(lowered(text)) == []


def test_owned_input_is_broadcast() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((4, 6), "float32", "mesh[0]", "O[1]"), y: R.Tensor((4, 6), "float32")):
    z = R.add(x, y)
    return z
''')
    low = lowered(text)
    assert ccl_ops(low) == [("ccl.broadcast", {"device_mesh": "mesh[0]", "mesh_axis": 0,
                                               "root": 1})]
    rng = np.random.default_rng(0)
    check_simulated(text, "main", *(rng.standard_normal((4, 6)).astype("float32")
                                    for _ in range(2)))


def test_two_dimensional_mesh() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((8, 12), "float32", "mesh[0]", "S[0], S[1]"),
         w: R.DTensor((12, 6), "float32", "mesh[0]", "R, S[0]")):
    y = R.matmul(x, w)
    s = R.sum(y, axis=[0])
    return (y, s)
''', mesh=(2, 2))
    rng = np.random.default_rng(0)
    low = check_simulated(text, "main", rng.standard_normal((8, 12)).astype("float32"),
                          rng.standard_normal((12, 6)).astype("float32"), rtol=1e-4, atol=1e-4)
    assert ("ccl.allreduce", {"device_mesh": "mesh[0]", "mesh_axis": 1, "op_type": "sum"}) in \
        ccl_ops(low)


def test_user_function_without_placements_is_untouched() -> None:
    text = module_text('''@R.function
def main(x: R.Tensor((4, 6), "float32")):
    return R.exp(x)
''')
    once = propagated(text)
    assert "DTensor" not in once.script()
    assert structural_equal(once, propagated(parse(text).script()))


def test_partial_sum_meeting_a_split_operand_is_reduce_scattered() -> None:
    """Megatron's sequence parallelism: the row-parallel output added to a residual split by
    rows is reduce-scattered, not all-reduced."""
    text = module_text('''@R.function
def main(a: R.DTensor((8, 6), "float32", "mesh[0]", "S[1]"),
         w: R.DTensor((6, 4), "float32", "mesh[0]", "S[0]"),
         r: R.DTensor((8, 4), "float32", "mesh[0]", "S[0]")):
    p = R.matmul(a, w)
    y = R.add(p, r)
    return y
''')
    rng = np.random.default_rng(0)
    low = check_simulated(text, "main", *(rng.standard_normal(s).astype("float32")
                                          for s in ((8, 6), (6, 4), (8, 4))))
    assert ccl_ops(low) == [("ccl.reduce_scatter", {"device_mesh": "mesh[0]", "mesh_axis": 0,
                                                    "op_type": "sum", "axis": 0})]


def test_a_mesh_must_start_at_device_zero() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((4, 6), "float32", "mesh[0]", "S[0]")):
    return x
''').replace("I.Range(0, 2)", "I.Range(4, 6)")
    with pytest.raises(CompileError, match="'mesh\\[0\\]' starts at device 4"):
        propagated(text)


TVM_SHARDED_MLP = '''from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class ShardedMLP:
    I.module_attrs({"device_num": 10})
    I.module_global_infos(
        {"mesh": [R.device_mesh((2,), I.Range(0, 2)), R.device_mesh((1,), I.Range(4, 5))]}
    )

    @R.function
    def foo(
        x: R.DTensor((128, 128), "float32", "mesh[0]", "R"),
        weight1: R.DTensor((128, 128), "float32", "mesh[0]", "S[1]"),
        weight2: R.DTensor((128, 128), "float32", "mesh[0]", "S[0]"),
    ) -> R.DTensor((128, 128), "float32", "mesh[0]", "R"):
        lv0: R.DTensor((128, 128), "float32", "mesh[0]", "S[1]") = R.matmul(
            x, weight1, out_dtype="void"
        )
        lv1: R.DTensor((128, 128), "float32", "mesh[0]", "S[1]") = R.nn.gelu(lv0)
        lv3: R.DTensor((128, 128), "float32", "mesh[0]", "R") = R.matmul(
            lv1, weight2, out_dtype="void"
        )
        return lv3
'''


def test_tvms_printed_sharded_module_compiles() -> None:
    """TVM's PropagateSharding output (its test_mlp) as TVM prints it: its annotations are
    kept, and the replicated annotation on the row-parallel matmul is an all-reduce."""
    places = placements(propagated(TVM_SHARDED_MLP), "foo")
    assert places["lv0"] == places["lv1"] == "S[1]" and places["lv3"] == "R"
    assert [op for op, _ in ccl_ops(lowered(TVM_SHARDED_MLP), "foo")] == ["ccl.allreduce"]
