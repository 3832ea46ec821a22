"""The `simplify` pass: exact printed results, and meaning kept (checked by the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from ir_strategies import prim_funcs
from lowering_support import (
    assert_same_results,
    block,
    body_text,
    buf,
    loop,
    module,
    prim_func,
    random_args,
)
from tirc.ir import (
    AssertStmt,
    AttrStmt,
    BufferStore,
    FloatImm,
    IntImm,
    LetStmt,
    Var,
    While,
)
from tirc.ir import expr as E
from tirc.ir.dtype import BOOL, dtype
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.stmt import ForKind, IfThenElse, seq
from tirc.passes.pipeline import make_pass
from tirc.passes.registry import all_passes
from tirc.passes.simplify import Simplify

F32 = dtype("float32")


def f32(v: float) -> FloatImm:
    return FloatImm(v, F32)


def test_registered() -> None:
    assert all_passes()["simplify"] is Simplify
    assert Simplify.description


def test_index_arithmetic_uses_loop_ranges() -> None:
    A, B = buf("A", (4, 4)), buf("B", (16,))
    i, j = Var("i"), Var("j")
    flat = i * 4 + j
    body = loop(i, 4, loop(j, 4, BufferStore(
        B, A.vload(flat // 4, flat % 4) + A.vload(E.minimum(i, 3), E.maximum(j, 0)),
        (flat * 2 - flat,))))
    mod = module(prim_func("f", [A, B], body))
    out = Simplify()(mod)
    assert body_text(out) == (
        "for i, j in T.grid(4, 4):\n"
        "    B[i * 4 + j] = A[i, j] + A[i, j]\n"
    )
    assert_same_results(mod, out, "f")


def test_dead_branches_unit_and_empty_loops() -> None:
    A, C = buf("A", (4,)), buf("C", (4,))
    i, j, u = Var("i"), Var("j"), Var("u")
    body = loop(i, 4, seq(
        loop(u, 1, BufferStore(A, A.vload(i + u) * f32(2.0), (i + u,))),
        IfThenElse(i < 8, BufferStore(C, f32(1.0) + f32(2.0), (i,)),
                   BufferStore(C, f32(0.0), (i,))),
        IfThenElse(i > 5, BufferStore(C, f32(5.0), (i,))),
        loop(j, 0, BufferStore(C, f32(9.0), (j,))),
        While(IntImm(0, BOOL), BufferStore(C, f32(9.0), (i,))),
        AssertStmt(i < 4, "in range", BufferStore(C, C.vload(i) + f32(1.0), (i,))),
    ))
    mod = module(prim_func("f", [A, C], body))
    out = Simplify()(mod)
    assert body_text(out) == (
        "for i in range(4):\n"
        "    A[i] = A[i] * T.float32(2.0)\n"
        "    C[i] = T.float32(3.0)\n"
        "    C[i] = C[i] + T.float32(1.0)\n"
    )
    assert_same_results(mod, out, "f")


def test_unit_loops_can_be_kept() -> None:
    A = buf("A", (4,))
    i, u = Var("i"), Var("u")
    body = loop(i, 4, loop(u, 1, BufferStore(A, f32(1.0), (i + u,))))
    mod = module(prim_func("f", [A], body))
    out = make_pass("simplify{remove-unit-loops=false}")(mod)
    assert body_text(out) == (
        "for i, u in T.grid(4, 1):\n"
        "    A[i + u] = T.float32(1.0)\n"
    )


def test_thread_bindings_and_annotated_loops_stay() -> None:
    A = buf("A", (4,))
    t, u = Var("t"), Var("u")
    body = loop(t, 1, loop(u, 1, BufferStore(A, f32(1.0), (t + u,)),
                           annotations={"pragma_x": 1}),
                ForKind.THREAD_BINDING, thread_tag="threadIdx.x")
    out = Simplify()(module(prim_func("f", [A], body)))
    assert body_text(out) == (
        'for t in T.thread_binding(1, thread="threadIdx.x"):\n'
        '    for u in T.serial(1, annotations={"pragma_x": 1}):\n'
        "        A[t + u] = T.float32(1.0)\n"
    )


def test_branch_conditions_narrow_ranges() -> None:
    A = buf("A", (16,))
    i = Var("i")
    inner = IfThenElse(i < 12, BufferStore(A, f32(1.0), (i,)), BufferStore(A, f32(2.0), (i,)))
    body = loop(i, 16, IfThenElse(i < 8, inner, IfThenElse(
        i >= 4, BufferStore(A, f32(3.0), (i,)))))
    mod = module(prim_func("f", [A], body))
    out = Simplify()(mod)
    assert body_text(out) == (
        "for i in range(16):\n"
        "    if i < 8:\n"
        "        A[i] = T.float32(1.0)\n"
        "    else:\n"
        "        A[i] = T.float32(3.0)\n"
    )
    assert_same_results(mod, out, "f")


def test_symbolic_extent_and_lets() -> None:
    n = Var("n")
    A = buf("A", (n,))
    i, x = Var("i"), Var("x")
    body = loop(i, n, LetStmt(x, i + 1, IfThenElse(
        x <= n, BufferStore(A, E.cast("float32", x - 1), (E.minimum(i, n - 1),)))))
    mod = module(prim_func("f", [A], body))
    out = Simplify()(mod)
    assert body_text(out) == (
        "n = T.int32()\n"
        "A = T.match_buffer(a_h, (n,), \"float32\")\n"
        "for i in range(n):\n"
        "    x: T.int32 = i + 1\n"
        '    A[i] = T.Cast("float32", x - 1)\n'
    )
    assert_same_results(mod, out, "f", sizes={"n": 7})


def test_blocks_bind_iteration_domains() -> None:
    A, B = buf("A", (8, 8)), buf("B", (8, 8))
    i, j, vi, vj = Var("i"), Var("j"), Var("vi"), Var("vj")
    store = BufferStore(B, A.vload(vi, (vj * 3 + vi * 24) // 3 - vi * 8), (vi, vj))
    blk = block("copy", [(vi, 8, "S"), (vj, 8, "S")], [i, j], store,
                predicate=E.logical_and(i < 8, IntImm(1, BOOL)))
    mod = module(prim_func("f", [A, B], loop(i, 8, loop(j, 8, blk))))
    out = Simplify()(mod)
    assert body_text(out) == (
        "for i, j in T.grid(8, 8):\n"
        '    with T.block("copy"):\n'
        '        vi, vj = T.axis.remap("SS", [i, j])\n'
        "        T.reads()\n"
        "        T.writes()\n"
        "        B[vi, vj] = A[vi, vj]\n"
    )
    assert_same_results(mod, out, "f")


def test_false_predicate_removes_block_and_thread_extent_binds() -> None:
    A = buf("A", (4,))
    t, v = Var("t"), Var("v")
    dead = block("dead", [(v, 4, "S")], [t], BufferStore(A, f32(1.0), (v,)), predicate=t > 9)
    live = IfThenElse(t < 4, BufferStore(A, f32(2.0), (t,)))
    body = AttrStmt(t, "thread_extent", IntImm(4), seq(dead, live))
    out = Simplify()(module(prim_func("f", [A], body)))
    assert body_text(out) == (
        'with T.attr(t, "thread_extent", 4):\n'
        "    A[t] = T.float32(2.0)\n"
    )


def test_unchanged_function_is_returned_as_is() -> None:
    A = buf("A", (4,))
    i = Var("i")
    mod = module(prim_func("f", [A], loop(i, 4, BufferStore(A, A.vload(i) * f32(2.0), (i,)))))
    assert Simplify()(mod) is mod


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prim_funcs())
def test_random_functions_keep_meaning(func) -> None:
    mod = module(func)
    out = Simplify()(mod)
    args = random_args(func, {}, seed=0)
    before = [a.copy() for a in args]
    try:
        Interpreter(mod).call(func.name, *before)
    except InterpreterError:
        assume(False)
    after = [a.copy() for a in args]
    Interpreter(out).call(func.name, *after)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


TILES = '''
@T.prim_func
def tiles(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n * 16,), "float32")
    B = T.match_buffer(b, (n, 4, 4), "float32")
    for t in range(n):
        for i, j in T.grid(4, 4):
            for u in range(1):
                if t * 16 + i * 4 + j < n * 16:
                    B[(t * 16 + i * 4 + j) // 16, (i * 4 + j) // 4, (i * 4 + j + u) % 4] = (
                        A[t * 16 + (i * 4 + j)] * (T.float32(1.5) + T.float32(0.5)))
                else:
                    B[t, i, j] = T.float32(0)
            if i == 4:
                B[t, i, 0] = T.float32(1)
'''

TILES_SIMPLIFIED = '''# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def tiles(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n * 16,), "float32")
        B = T.match_buffer(b, (n, 4, 4), "float32")
        for t, i, j in T.grid(n, 4, 4):
            B[t, i, j] = A[t * 16 + i * 4 + j] * T.float32(2.0)
'''


def test_text_in_text_out() -> None:
    from tirc.frontend import parse

    mod = parse(TILES, filename="tiles.tir")
    out = Simplify()(mod)
    assert out.script() == TILES_SIMPLIFIED
    assert Simplify()(parse(out.script())).script() == TILES_SIMPLIFIED
    assert_same_results(mod, out, "tiles", sizes={"n": 3})


def _references():
    """samples/references.py, loaded by path as the sample tests do (it is not a package)."""
    import importlib.util
    import sys
    from pathlib import Path

    name = "tirc_sample_references"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "samples" / "references.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


CHEAP_SAMPLES = ["softmax", "layer_norm", "elementwise_chain", "row_sum", "stencil_5pt",
                 "transpose"]


@pytest.mark.parametrize("pipeline", [
    ["lower-init", "simplify"],
    ["lower-init", "lower-blocks", "flatten-buffers", "simplify"],
])
@pytest.mark.parametrize("name", CHEAP_SAMPLES)
def test_samples_keep_meaning(name: str, pipeline: list[str]) -> None:
    from tirc.frontend import parse_file

    refs = _references()
    sample = refs.BY_NAME[name]
    mod = parse_file(str(sample.path))
    for spec in pipeline:
        mod = make_pass(spec)(mod)
    inputs = sample.inputs(sample.interp_sizes, seed=2)
    expected = sample.expected(inputs)
    args = sample.arguments(inputs, expected)
    Interpreter(mod).call(sample.func, *args)
    assert refs.mismatch(sample.output_values(args), expected) is None
