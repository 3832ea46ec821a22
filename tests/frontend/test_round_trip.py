"""parse(print(m)) equals m and print(parse(print(m))) == print(m), for the samples and for
modules that use every construct the frontend accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from tirc.frontend import parse, parse_file
from tirc.ir import IRModule, structural_equal
from tirc.ir.node import Node
from tirc.ir.printer import print_module

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.tir"))

KITCHEN_SINK = '''
from tvm.script import tir as T


@T.prim_func
def kitchen(a: T.handle, B: T.Buffer((16, 16), "float32", strides=(32, 1), offset_factor=4),
            n: T.int32, s: T.float32):
    T.func_attr({"global_symbol": "kitchen", "tir.noalias": True})
    m = T.int64()
    A = T.match_buffer(a, (m, 16), "float32", align=128)
    L = T.alloc_buffer((16,), "float16", scope="local")
    for i in T.serial(0, 16, annotations={"pragma_unroll": 4}):
        for j in T.parallel(2, 16):
            with T.block("b"):
                vi = T.axis.spatial(16, i)
                vj = T.axis.reduce((2, 16), j)
                T.where(vi < 8 and not (vj == 3) or vi > 100)
                T.block_attr({"meta": "x", "k": [1, 2]})
                T.reads(A[vi, 0:16], B[vi, vj])
                T.writes(B[vi, vj])
                tmp = T.alloc_buffer((4,), "float32")
                with T.init():
                    B[vi, vj] = 0.0
                tmp[0] = T.exp(A[vi, vj]) + T.log(s) * T.sqrt(2.0)
                B[vi, vj] = B[vi, vj] + tmp[0]
    for k in T.vectorized(4):
        B[0, k] = T.if_then_else(k < 2, T.Cast("float32", k), T.cast(n, "float32"))
    for k in T.unroll(4):
        x: T.float32 = B[0, k] * 2.0
        y = T.float32(1) + x
        B[1, k] = T.Select(x > y, T.max(x, y), T.min(x, y))
    for tx in T.thread_binding(0, 32, thread="threadIdx.x"):
        B[2, tx % 16] = T.float32(tx // 2) + T.float32(T.truncdiv(tx, 3) + T.truncmod(tx, 5))
    if n > 4:
        B[3, 0] = -B[3, 1]
    else:
        B[3, 1] = T.max_value("float32") + T.min_value("float32")
    while n < 10:
        T.evaluate(0)
    D = T.decl_buffer((8,), "int32", scope="shared")
    D[0] = 1
    E = T.event_tensor((16,), init=n * 2)
    T.event_wait(E[0])
    T.event_notify(E[1], 2)
    T.tvm_storage_sync("shared")
    T.assume(n > 0)
    B[4, 0] = T.float32(m) + T.pow(s, 2.0) + T.float32(n % 3) + T.float32(-n)
    assert n > 1, "n must be big"
    with T.attr(n, "pragma_x", 1):
        B[5, 5] = T.float32("inf")
    A[T.int64(0), 0] = T.Let(q + q, where={q: s})
    for v in range(T.int64(3)):
        A[v, T.Ramp(0, 1, 4)] = T.Broadcast(s, 4) + A[v, T.Ramp(4, 1, 4)]
    for w in range(n, n + 8):
        B[6, w % 16] = T.float32(T.call_intrin("int32", "popcount", w))
'''

WITH_SCHEDULE_AND_LAYOUTS = '''
from tvm.script import tir as T


@T.prim_func
def f(A: T.Buffer((8, 16), "float32",
                  layout=T.TileLayout(T.S[(8, 4, 2):(4 @ Axis.laneid, 1 @ Axis.laneid, 1)])),
      B: T.Buffer((64,), "float32", layout="S[64:1]")):
    S = T.alloc_buffer((8, 64), "float16", scope="shared",
                       layout=T.ComposeLayout(T.SwizzleLayout(3, 3, 3),
                                              T.TileLayout(T.S[(8, 64):(64, 1)])))
    for i, j in T.grid(8, 16):
        with T.block("copy"):
            vi, vj = T.axis.remap("SS", [i, j])
            A[vi, vj] = B[vi * 8 + vj % 8]


@S.schedule("f", target="llvm -mcpu=znver5")
def sched(sch):
    b0 = sch.get_block("copy")
    i, j = sch.get_loops(b0)
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(io, j, ii)
    l, = sch.get_loops(b0)
    v = sch.sample_perfect_tile(j, n=2, max_innermost_factor=16, decision=[4, 4])
    sch.transform_layout(b0, ("write", 0), lambda i, j: (i // 4, j, i % 4))
    sch.annotate(io, ann_key="pragma", ann_val=-1.5)
    sch.storage_align(b0, 0, axis=0, factor=16, offset=-1)
    sch.parallel(io)
'''

# `if`/`else` in a graph function, in both spellings: branches with several bindings, a
# kernel call, a dataflow block, a nested `elif`, a condition computed by a binding.
GRAPH_IF = '''
from tvm.script import ir as I
from tvm.script import tir as T
from tvm.script import relax as R


@I.ir_module
class Module:
    @T.prim_func
    def scale(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(3)

    @R.function
    def main(x: R.Tensor(("n",), "float32"), k: R.Tensor((4,), "float32"),
             c: R.Prim("bool")) -> R.Tensor((4,), "float32"):
        n = T.int64()
        big = R.prim_value(n > 2)
        if c:
            with R.dataflow():
                a = R.call_tir(Module.scale, (k,), out_sinfo=R.Tensor((4,), "float32"))
                e = R.add(a, k)
                R.output(e)
            y = R.multiply(e, k)
        elif big:
            y = k
        else:
            t = R.call_tir(Module.scale, (k,), out_sinfo=R.Tensor((4,), "float32"))
            y = R.exp(t)
        return y
'''
GRAPH_IF_TIRX = GRAPH_IF.replace("import tir as T", "import tirx as T").replace(
    "T.block(", "T.sblock(")


def _round_trip(mod: IRModule) -> None:
    text = print_module(mod)
    again = parse(text, "printed.tir")
    assert structural_equal(again, mod), text
    assert print_module(again) == text


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_round_trip(path: Path) -> None:
    mod = parse_file(path)
    assert mod.sources == (str(path),)
    _round_trip(mod.replace(sources=()))  # type: ignore[arg-type]


@pytest.mark.parametrize("text", [KITCHEN_SINK, WITH_SCHEDULE_AND_LAYOUTS, GRAPH_IF,
                                  GRAPH_IF_TIRX],
                         ids=["kitchen_sink", "schedule_layouts", "graph_if", "graph_if_tirx"])
def test_every_construct_round_trips(text: str) -> None:
    _round_trip(parse(text, "constructs.tir"))


@pytest.mark.parametrize("text", [GRAPH_IF, GRAPH_IF_TIRX], ids=["classic", "tirx"])
def test_graph_if_round_trips_after_normalize(text: str) -> None:
    """The branches print back with their inferred struct info (each branch's last binding
    is the assignment of the if's variable)."""
    from tirc.passes.graph.normalize import Normalize

    mod = Normalize()(parse(text, "if.tir"))
    assert "        if c:\n" in print_module(mod) and "        else:\n" in print_module(mod)
    _round_trip(mod)


def _missing_spans(node: object, path: str, out: list[str]) -> None:
    if isinstance(node, Node):
        if node.span is None:
            out.append(f"{path}: {type(node).__name__}")
        for name, value in node.node_fields():
            _missing_spans(value, f"{path}.{name}", out)
    elif isinstance(node, (tuple, list)):
        for i, v in enumerate(node):
            _missing_spans(v, f"{path}[{i}]", out)
    elif isinstance(node, dict):
        for k, v in node.items():
            _missing_spans(k, f"{path}.key", out)
            _missing_spans(v, f"{path}[{k}]", out)


@pytest.mark.parametrize("text", [KITCHEN_SINK, WITH_SCHEDULE_AND_LAYOUTS, GRAPH_IF],
                         ids=["kitchen_sink", "schedule_layouts", "graph_if"])
def test_every_node_has_a_span(text: str) -> None:
    mod = parse(text, "spans.tir")
    missing: list[str] = []
    for name, func in mod.functions.items():
        _missing_spans(func, name, missing)
    for sch in mod.schedules:
        _missing_spans(sch, sch.name, missing)
    assert missing == []


def test_spans_point_at_the_source() -> None:
    mod = parse(KITCHEN_SINK, "spans.tir")
    f = mod["kitchen"]
    assert (f.span.line, f.span.col) == (5, 1)  # the decorator line starts the function
    a = f.buffers[0]
    assert a.name == "A" and (a.span.line, a.span.col) == (10, 9)


def test_a_block_iter_over_another_extent_keeps_its_domain() -> None:
    """A block iter bound to a loop of extent `n` but declared over `m` is not printed as
    `T.axis.remap` (which would give it the loop's extent): symbolic extents are compared as
    the same variables, not as equal up to renaming."""
    text = '''
from tvm.script import tir as T

@T.prim_func
def f(a: T.handle, b: T.handle):
    n = T.int32()
    m = T.int32()
    A = T.match_buffer(a, (m,), "float32")
    B = T.match_buffer(b, (m,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(m, i)
            B[vi] = A[vi] + T.float32(1)
'''
    mod = parse(text)
    printed = print_module(mod)
    assert "vi = T.axis.spatial(m, i)" in printed
    assert structural_equal(parse(printed), mod)
