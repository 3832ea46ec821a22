"""What tirc refuses of TVMScript, and how: GPU-only intrinsics in a CPU build, Python that
would have to run, TVM runtime registry calls; and random edits of the constructs issue 14
added never crash (hypothesis)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tirc.cli.compile_cmd import CompileOptions, compile_file
from tirc.frontend import parse
from tirc.frontend.context import NO_PYTHON
from tirc.ir import structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.printer import print_module

HERE = Path(__file__).resolve().parent / "tvmscript"
GPU_ONLY = '''from tvm.script import tirx as T


@T.prim_func
def f(A: T.Buffer((8,), "float16"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        T.evaluate(T.tvm_mma_sync(C.data, 0, A.data, 0, A.data, 0, C.data, 0, dtype="handle"))
        C[i] = T.Cast("float32", A[i])
'''


def test_gpu_only_intrinsic_round_trips_but_a_cpu_build_refuses_it(tmp_path: Path) -> None:
    mod = parse(GPU_ONLY, "gpu.tir")
    text = print_module(mod)
    assert "T.tvm_mma_sync(C.data, 0, A.data, 0, A.data, 0, C.data, 0)" in text
    assert structural_equal(parse(text, "again.tir"), mod)
    src = tmp_path / "gpu.tir"
    src.write_text(GPU_ONLY)
    with pytest.raises(CompileError) as info:
        compile_file(CompileOptions(file=str(src), output=str(tmp_path / "gpu.so")))
    d = info.value.diagnostics[0]
    assert (d.span.line, d.span.col) == (7, 20)
    assert d.message.startswith("T.tvm_mma_sync is a GPU intrinsic: it has no meaning in a CPU")


@pytest.mark.parametrize("text, where, message", [
    ('@T.prim_func\ndef f(A: T.Buffer((8,), "float32")):\n    for i in range(8):\n'
     '        A[i] = T.ptx.ld(A.data, dtype="float32")\n', None, None),
    ('@T.prim_func\ndef f(A: T.Buffer((8,), "float32")):\n    for i in T.vectorized(8):\n'
     '        A[i] = T.Cast("float32", T.vscale())\n', (4, 34), "T.vscale needs a scalable"),
])
def test_cpu_build_refusals(text: str, where: tuple[int, int] | None, message: str | None,
                            tmp_path: Path) -> None:
    src = tmp_path / "f.tir"
    src.write_text(text)
    with pytest.raises(CompileError) as info:
        compile_file(CompileOptions(file=str(src), output=str(tmp_path / "f.so")))
    d = info.value.diagnostics[0]
    if where is not None:
        assert (d.span.line, d.span.col) == where and d.message.startswith(message)
    else:
        assert "GPU intrinsic" in d.message and d.span is not None


def _error(text: str) -> tuple[int, int, str, tuple[str, ...]]:
    with pytest.raises(CompileError) as info:
        parse(text, "x.tir")
    d = info.value.diagnostics[0]
    return d.span.line, d.span.col, d.message, tuple(n.message for n in d.notes)


def test_a_closure_over_a_python_variable_says_what_to_write() -> None:
    text = ('@T.prim_func\ndef f(n: T.int32):\n    for i in range(n):\n'
            '        A = T.alloc_buffer((200,), scope=scope_tb)\n        A[i] = 1.0\n')
    assert _error(text) == (4, 42, "unknown name 'scope_tb'", (NO_PYTHON,))


@pytest.mark.parametrize("call, col, what", [
    ("R.emit_te(topi.add, x, x)", 9, "unsupported: R.emit_te (it runs a Python function"),
    ('R.call_packed("f", x, sinfo_args=R.Tensor((4,), "float32"))', 9,
     "unsupported: R.call_packed (a function of TVM's runtime registry)"),
])
def test_graph_calls_that_need_python_or_a_registry(call: str, col: int, what: str) -> None:
    text = ('@R.function\ndef main(x: R.Tensor((4,), "float32")):\n'
            f'    y = {call}\n    return y\n')
    line, c, message, _ = _error(text)
    assert (line, c) == (3, col) and message.startswith(what)


def test_a_negative_rank_is_refused_at_ndim() -> None:
    """TVM's parser test `dim is expected to be non-negative int or -1 for unknown`."""
    text = '@R.function\ndef f(x: R.Tensor(dtype="float32", ndim=-2)):\n    return x\n'
    assert _error(text)[:3] == (
        2, 41, "ndim=-2: a rank is a non-negative integer, or -1 for unknown")


# ---- random edits of the new constructs -----------------------------------------------------

SEEDS = sorted(p.read_text() for p in HERE.glob("*.tir"))
TOKEN = re.compile(r"\s+|\w+|\"[^\"\n]*\"|.")
NEW_TOKENS = [
    "T.sblock", "T.block", "T.sblock_alloc_buffer", "s_tir=True", "private=True", "T.allocate",
    "T.allocate_const", "T.decl_buffer", "data=", "T.device_entry()", "T.let", "T.let[T.int32]",
    "T.handle(\"float32\")", ".view(", ".vload(", ".vstore(", "T.meta_var", "*", "*A.shape",
    "<<", ">>", "&", "|", "^", "~", "T.fabs", "T.q_multiply_shift", "T.call_extern",
    "T.call_llvm_pure_intrin", "T.ptx.mov.b64", "T.tvm_mma_sync", "T.vscale()", "dtype=",
    "annotations={}", "axis_separators=[1]", "T.reinterpret", "T.vectorlow", "T.assume",
    "T.attr", "cls.square_sum", "Module.add", ".struct_info", "R.Prim(value=2)", "a, b =",
    "T.Broadcast", "T.ramp", "[0:8]", "T.Cast", "(", ")", "[", "]", ",", ":", "=", "\n", "    ",
]


def _mutate(rng: random.Random, text: str) -> str:
    toks = TOKEN.findall(text)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(toks))
        kind = rng.randrange(3)
        if kind == 0:
            del toks[i]
        elif kind == 1:
            toks.insert(i, rng.choice(NEW_TOKENS))
        else:
            toks[i] = rng.choice(NEW_TOKENS)
    return "".join(toks)


def _round_trip_or_diagnostic(text: str) -> None:
    try:
        mod = parse(text, "mutated.tir")
    except CompileError:
        return
    for syntax in ("classic", "tirx"):
        printed = print_module(mod, syntax=syntax)
        again = parse(printed, "printed.tir")
        assert print_module(again, syntax=syntax) == printed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SEEDS) - 1), st.randoms(use_true_random=False))
def test_mutated_constructs_give_diagnostics_not_tracebacks(index: int,
                                                            rng: random.Random) -> None:
    _round_trip_or_diagnostic(_mutate(rng, SEEDS[index]))


def test_mutation_vocabulary_is_parsed_somewhere() -> None:
    """Each new construct appears in a seed program, so mutations move real uses around."""
    joined = "\n".join(SEEDS)
    for tok in ("T.sblock", "T.allocate", "T.device_entry()", ".view(", "T.meta_var", "<<",
                "T.fabs", "T.q_multiply_shift", "T.call_extern", ".vload(", "cls.", "a, b ="):
        assert tok in joined, tok


