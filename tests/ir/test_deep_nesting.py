"""IR nested far deeper than Python's default recursion limit (2000 scopes, as make-entry and
the megakernel runtime build for many parameters) goes through the printer, the parser, the
pass pipeline and the LLVM backend: every library entry point runs on a big-stack thread."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from tirc.backends import build, emit
from tirc.frontend import parse
from tirc.ir import IntImm, IRModule, PrimFunc, Var, make_buffer, structural_equal
from tirc.ir.deep_call import deep_call
from tirc.ir.dtype import dtype
from tirc.ir.expr import FloatImm
from tirc.ir.interpreter import run_prim_func
from tirc.ir.printer import print_function, print_node
from tirc.ir.stmt import AssertStmt, BufferStore, LetStmt, Stmt
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline
from tirc.runtime import load

DEPTH = 2000  # nested LetStmt/AssertStmt scopes, twice the default recursion limit
F32 = dtype("float32")
I64 = dtype("int64")


def _deep_module() -> IRModule:
    """`Y[0] = X[0] + DEPTH` as DEPTH nested lets `v{k} = v{k-1} + 1`, each odd one followed
    by an assert, built bottom-up without recursion."""
    x = make_buffer("X", (IntImm(1, I64),), "float32")
    y = make_buffer("Y", (IntImm(1, I64),), "float32")
    lets = [Var(f"v{k}", F32) for k in range(DEPTH)]
    body: Stmt = BufferStore(y, lets[-1] + FloatImm(1.0, F32), (IntImm(0, I64),))
    for k in reversed(range(DEPTH)):
        if k % 2:
            body = AssertStmt(lets[k] > x.vload(IntImm(0, I64)), "the chain must grow", body)
        value = x.vload(IntImm(0, I64)) if k == 0 else lets[k - 1] + FloatImm(1.0, F32)
        body = LetStmt(lets[k], value, body)
    handles = (Var("x", dtype("handle")), Var("y", dtype("handle")))
    func = PrimFunc("deep", handles, dict(zip(handles, (x, y))), body,
                    {"global_symbol": "deep"})
    return IRModule({"deep": func})


def _run_so(path: Path) -> float:
    """Y[0] after calling the library's `deep` on X = [0.5]."""
    lib = load(path)
    x = np.array([0.5], "float32")
    y = np.zeros(1, "float32")
    lib.deep(x, y)  # type: ignore[attr-defined]
    return float(y[0])


def test_prints_and_parses_back_equal() -> None:
    mod = _deep_module()
    text = mod.script()
    assert text.count("assert v") == DEPTH // 2 and "v1999: T.float32 = v1998 + " in text
    assert len(print_function(mod["deep"])) > DEPTH and print_node(mod["deep"].body)
    back = parse(text)
    assert deep_call(structural_equal, back, mod)


@pytest.mark.parametrize("opt", [0, 2])
def test_default_pipeline_and_shared_object(tmp_path: Path, opt: int) -> None:
    target = parse_target("llvm")
    mod = run_pipeline(_deep_module(), build_pipeline(default_pipeline(target, opt)),
                       PassContext(opt_level=opt, target=target))
    assert build(mod, tmp_path / "deep.so", target, opt) == tmp_path / "deep.so"
    assert _run_so(tmp_path / "deep.so") == np.float32(0.5) + DEPTH
    assert "define" in emit(mod, "ll", target, opt).decode()


def test_interpreter_agrees_and_the_limit_is_left_alone() -> None:
    limit = sys.getrecursionlimit()
    mod = _deep_module()
    x, y = np.array([0.5], "float32"), np.zeros(1, "float32")
    deep_call(run_prim_func, mod["deep"], [x, y])
    assert y[0] == np.float32(0.5) + DEPTH
    mod.script()
    assert sys.getrecursionlimit() == limit


TEXT_HEAD = ('from tvm.script import tir as T\n\n@T.prim_func\n'
             'def f(A: T.Buffer((8, 8), "float32"), n: T.int32):\n')


def test_text_nested_thousands_deep_parses_and_runs() -> None:
    # Such text was a "nested too deeply" diagnostic under the default recursion limit.
    total = parse(TEXT_HEAD + "    A[0, 0] = " + " + ".join(["T.float32(1)"] * 3000) + "\n")
    a = np.zeros((8, 8), "float32")
    deep_call(run_prim_func, total["f"], [a, 0])
    assert a[0, 0] == 3000
    calls = parse(TEXT_HEAD + "    A[0, 0] = " + "T.sqrt(" * 600 + "A[0, 1]" + ")" * 600 + "\n")
    assert calls.script().count("T.sqrt(") == 600
    ifs = parse(TEXT_HEAD + "".join("    " * (i + 1) + "if n > 0:\n" for i in range(400)) +
                "    " * 401 + "A[0, 0] = T.float32(1)\n")
    assert ifs.script().count("if n > 0:") == 400
