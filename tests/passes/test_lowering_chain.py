"""The lowering passes in pipeline order on random functions: well-formed and same results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ir_strategies import prim_funcs
from lowering_support import block, buf, count_nodes, interpret, loop, module, random_args
from tirc.frontend import parse_file
from tirc.ir import Block, BlockRealize, FloatImm, ForKind, IntImm, IRModule, PrimFunc, Var
from tirc.ir import expr as E
from tirc.ir.dtype import dtype
from tirc.ir.interpreter import InterpreterError
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import BufferStore, seq
from tirc.passes.flatten_buffers import FlattenBuffers
from tirc.passes.lower_blocks import LowerBlocks
from tirc.passes.pass_base import PassContext
from tirc.passes.registry import get_pass
from tirc.passes.storage_rewrite import StorageRewrite
from tirc.passes.unroll import Unroll
from tirc.passes.vectorize import Vectorize
from tirc.passes.verify import verify_module

CHAIN = (LowerBlocks(), FlattenBuffers(), Vectorize(), Unroll(), StorageRewrite())
KINDS = st.sampled_from([ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED,
                         ForKind.UNROLLED])
CONFIG = {"vectorize.max-lanes": "4", "unroll.max-extent": "4"}


def lower_all(before: IRModule) -> IRModule:
    """Run the chain, checking well-formedness after each pass and that no block is left."""
    mod = before
    ctx = PassContext(config=dict(CONFIG))
    for p in CHAIN:
        mod = p(mod, ctx)
        problems = verify_module(mod)
        assert not problems, f"after {p.name}: " + "\n".join(d.render() for d in problems)
    for func in mod.functions.values():
        assert count_nodes(func.body, Block) == 0 and count_nodes(func.body, BlockRealize) == 0
    return mod


def assert_chain_keeps_results(before: IRModule, name: str, sizes: dict[str, int]) -> None:
    after = lower_all(before)
    args = random_args(before[name], sizes, seed=0)
    try:
        expected = interpret(before, name, args)
    except InterpreterError:
        assume(False)  # the random program itself is invalid (division by zero, ...)
    got = interpret(after, name, args)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, equal_nan=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prim_funcs())
def test_random_functions_keep_their_results_through_the_lowering_chain(func: PrimFunc) -> None:
    assert_chain_keeps_results(module(func), func.name, {})


@st.composite
def scheduled_funcs(draw: st.DrawFn) -> tuple[IRModule, dict[str, int]]:
    """A split elementwise nest with T.where, a reduction with init and a staged block,
    over a constant or symbolic (int32 or int64) extent, with random loop kinds."""
    idt = dtype(draw(st.sampled_from(["int32", "int64"])))
    symbolic = draw(st.booleans())
    n_value = draw(st.integers(0 if symbolic else 1, 13))
    n = Var("n", idt) if symbolic else IntImm(n_value, idt)
    m = draw(st.integers(1, 6))
    factor = draw(st.integers(1, 5))
    A, B, R = buf("A", (n, IntImm(m, idt))), buf("B", (n, IntImm(m, idt))), buf("R", (n,))
    tmp = buf("tmp", (IntImm(m, idt),))

    def v(name: str) -> Var:
        return Var(name, idt)

    def c(x: int) -> IntImm:
        return IntImm(x, idt)

    io, ii, j, vi, vj = v("io"), v("ii"), v("j"), v("vi"), v("vj")
    row = io * c(factor) + ii
    value = E.maximum(A.vload(vi, vj) * FloatImm(draw(st.sampled_from([0.5, 2.0, -1.0]))),
                      FloatImm(0.0)) + E.cast("float32", vj)
    ew = block("ew", [(vi, n, "S"), (vj, c(m), "S")], [row, j],
               BufferStore(B, value, (vi, vj)), predicate=row < n)
    outer = (n + c(factor - 1)) // c(factor)
    ew_nest = loop(io, outer, loop(ii, c(factor), loop(j, c(m), ew, draw(KINDS)), draw(KINDS)),
                   draw(KINDS))
    i, k, ri, rk = v("i"), v("k"), v("ri"), v("rk")
    red = block("sum", [(ri, n, "S"), (rk, c(m), "R")], [i, k],
                BufferStore(R, R.vload(ri) + A.vload(ri, rk), (ri,)),
                init=BufferStore(R, FloatImm(0.0), (ri,)))
    red_nest = loop(i, n, loop(k, c(m), red, draw(KINDS)), draw(KINDS))
    s, t, si, tj = v("s"), v("t"), v("si"), v("tj")
    stage = block("stage", [(si, n, "S")], [s], seq(
        loop(t, c(m), BufferStore(tmp, A.vload(si, t) * FloatImm(3.0), (t,)), draw(KINDS)),
        loop(tj, c(m), BufferStore(B, B.vload(si, tj) + tmp.vload(tj), (si, tj)), draw(KINDS))),
        alloc_buffers=(tmp,))
    stage_nest = loop(s, n, stage, draw(st.sampled_from([ForKind.SERIAL, ForKind.PARALLEL])))
    handles = [Var(x, dtype("handle")) for x in ("a", "b", "r")]
    func = PrimFunc("sched", tuple(handles), dict(zip(handles, (A, B, R))),
                    seq(ew_nest, red_nest, stage_nest))
    return module(func), {"n": n_value}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scheduled_funcs())
def test_scheduled_nests_keep_their_results_through_the_lowering_chain(case) -> None:
    mod, sizes = case
    assert_chain_keeps_results(mod, "sched", sizes)


SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.tir"))
PIPELINE = ("lower-init", "lower-blocks", "flatten-buffers", "simplify", "vectorize", "unroll",
            "simplify", "storage-rewrite")


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_samples_keep_their_results_through_the_lowering_pipeline(path: Path) -> None:
    before = parse_file(str(path))
    ctx = PassContext()
    mod = before
    for name in PIPELINE:
        mod = get_pass(name)(mod, ctx)
        problems = verify_module(IRModule(mod.prim_funcs()))
        assert not problems, f"after {name}: " + "\n".join(d.render() for d in problems)
    for name, func in before.prim_funcs().items():
        sizes = {v.name: 2 for b in func.buffer_map.values() for v in used_vars(b.shape)}
        args = random_args(func, sizes, seed=0)
        expected = interpret(before, name, args)
        got = interpret(mod, name, args)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5, equal_nan=True)
