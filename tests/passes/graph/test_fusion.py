"""annotate-op-pattern, fuse-ops and fuse-tir: kinds, groups, kernel counts, and meaning kept
(the reference interpreter before and after each pass)."""

from __future__ import annotations

from pathlib import Path
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

GRAPH_TESTS = Path(__file__).parent
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


BAD_PATTERN = """
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def double(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        T.func_attr({"op_pattern": PATTERN})
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(2)

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((4,), "float32"))
            z = R.add(y, x)
            R.output(z)
        return z
"""


def test_an_op_pattern_that_is_no_kind_is_a_diagnostic() -> None:
    """`"op_pattern": 16` (a mutated LegalizeOps kernel, pipeline_fuzz): fuse-ops met
    `OpPattern(16)`, a ValueError, an internal error; now a diagnostic naming TVM's kinds,
    and a kind that is one (8, opaque) still compiles."""
    from tirc.frontend import parse
    from tirc.ir import CompileError

    with pytest.raises(CompileError, match="loop function 'double': \"op_pattern\": 16 is not "
                                           "one of TVM's OpPatternKind values: 0 \\(elemwise\\)"):
        run_passes(parse(BAD_PATTERN.replace("PATTERN", "16")), PIPELINE)
    out = run_passes(parse(BAD_PATTERN.replace("PATTERN", "8")), PIPELINE)[-1]
    assert kinds(out)["double"] == OpPattern.OPAQUE


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
    # the sum over n (which may be 0) reduces into T_sum_acc, then picks 0 or it
    assert [b.name for b in fused.body.block.alloc_buffers] == ["lv", "T_sum_acc"]
    assert_same(mods[0], mods[-1], random_inputs(mod, {"n": 2}))
    assert_same(mods[0], mods[-1], random_inputs(mod, {"n": 0}))


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


def test_tuple_bindings_and_tir_vars_fuse() -> None:
    """A kernel with several outputs and its projections, a tuple and its projections, and
    calls given `tir_vars` (sizes `n * 2`) all fuse into one kernel; the meaning is kept after
    every pass."""
    mods = run_passes(parse_file(GRAPH_TESTS / "tuples.tir"), PIPELINE)
    legal = mods[2]
    assert any(len(b.value.args) == 3 for b in legal["main"].body.blocks[0].bindings
               if getattr(b.value, "op", None) == "call_tir")  # some carry tir_vars
    name = "fused_exp_split_add_concatenate_relu_reshape_multiply"
    assert kernel_calls(mods[4]) == [name]
    group = mods[4][name].body.blocks[0].bindings
    assert [type(b.value).__name__ for b in group].count("TupleGetItem") == 4
    printed = mods[4].script()
    assert f'= Module.{name}(x)' in printed
    for line in ('a: R.Tensor((n, T.int64(4)), dtype="float32") = s[0]',
                 't: R.Tuple(R.Tensor((n, T.int64(4)), dtype="float32"), '
                 'R.Tensor((n, T.int64(4)), dtype="float32")) = (c, a)',
                 '= R.call_tir(Module.relu, (d,), tir_vars=R.shape([n]), '):
        assert line in printed.split(f"def {name}(")[1], line
    assert kernel_calls(mods[-1]) == [name]
    assert sorted(mods[-1].functions) == [name, "main"]
    for n in (1, 3):
        assert_same(mods[0], mods[1:], random_inputs(mods[0], {"n": n}, seed=n))


def test_returned_tuple_stays_unfused_and_a_result_naming_an_input_is_copied() -> None:
    """A tuple the function returns is no group's business (its kernel stays alone); a result
    that is a projection of a tuple of the function's own is that field (normalize)."""
    gb = GraphBuilder()
    n = gb.sym("n")
    x = gb.param("x", (n, 4))
    e = gb.emit("exp", x)
    s = gb.emit("split", e, 2, axis=1)
    mod = IRModule({"main": gb.function("main", s)})
    mods = run_passes(mod, PIPELINE)
    assert kernel_calls(mods[4]) == ["exp", "split"]
    assert_same(mods[0], mods[1:], random_inputs(mod, {"n": 3}))

    mod2 = parse_file(GRAPH_TESTS / "pass_through.tir")
    mods = run_passes(mod2, PIPELINE)
    # normalize resolves the projections of `t = (x, c)`: `u = x` stays outside the group
    # (lower-graph copies it into its result), `w` is `c`, and the three kernels fuse.
    assert "u: R.Tensor((n, 4), dtype=\"float32\") = x" in mods[1].script()
    assert kernel_calls(mods[-1]) == ["fused_exp_add_multiply"]
    assert_same(mods[0], mods[1:], random_inputs(mod2, {"n": 4}))


def test_a_scalar_constant_operand_fuses() -> None:
    """`R.take(x, R.const(0, "int64"), axis=0)` (PyTorch's `x[0]`) passes a constant to its
    kernel; in a group it becomes a 0-d buffer the fused kernel fills before the take."""
    from tirc.frontend import parse

    mod = parse('''\
@R.function
def main(x: R.Tensor((3, 4), "float32")):
    with R.dataflow():
        a = R.take(x, R.const(2, "int64"), axis=0)
        b = R.exp(a)
        R.output(b)
    return b
''')
    mods = run_passes(mod, PIPELINE)
    assert kernel_calls(mods[-1]) == ["fused_take_exp"]
    assert_same(mods[0], mods[1:], random_inputs(mod, {}))


def test_an_in_place_call_in_a_group_writes_its_argument() -> None:
    """TVM's FuseOps output with R.call_tir_inplace in a `Primitive` group: its result is the
    argument it wrote, so the group's result is copied from that buffer (it was a fresh
    output nothing wrote: the function returned zeros)."""
    from tirc.frontend import parse

    mod = parse('''\
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(A: T.Buffer((4, 5), "float32"), B: T.Buffer((1,), "float32"),
            Out: T.Buffer((4, 5), "float32")):
        for i, j in T.grid(4, 5):
            with T.block("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                Out[vi, vj] = A[vi, vj] + B[0]

    @T.prim_func(private=True)
    def exp_inplace(A: T.Buffer((4, 5), "float32")):
        for i, j in T.grid(4, 5):
            with T.block("exp"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = T.exp(A[vi, vj])

    @R.function
    def fused(x: R.Tensor((4, 5), "float32"), p: R.Tensor((1,), "float32")
              ) -> R.Tensor((4, 5), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            a = R.call_tir(Module.add, (x, p), out_sinfo=R.Tensor((4, 5), "float32"))
            b = R.call_tir_inplace(Module.exp_inplace, (a,), out_sinfo=R.Tensor((4, 5), "float32"),
                                   inplace_indices=[0])
            R.output(b)
        return b

    @R.function
    def main(x: R.Tensor((4, 5), "float32"), p: R.Tensor((1,), "float32")
             ) -> R.Tensor((4, 5), "float32"):
        with R.dataflow():
            y = Module.fused(x, p)
            R.output(y)
        return y
''')
    mods = run_passes(mod, PIPELINE)
    assert kernel_calls(mods[-1]) == ["fused"]
    assert_same(mods[0], mods[1:], random_inputs(mod, {}))
