"""Fix-its: close-name suggestions for names, operators, blocks, passes, options, functions and
CPUs, and carets on the offending argument of a call_tir."""

from __future__ import annotations

from pathlib import Path

import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError, did_you_mean

ROOT = Path(__file__).resolve().parents[2]


def _error(text: str) -> str:
    with pytest.raises(CompileError) as err:
        parse(text, "f.tir")
    return err.value.render()


def test_did_you_mean() -> None:
    assert did_you_mean("matmu", ["matmul", "softmax"]) == "; did you mean 'matmul'?"
    assert did_you_mean("zzz", ["matmul"]) == ""


def test_misspelt_name() -> None:
    text = ('@T.prim_func\ndef f(Input: T.Buffer((8,), "float32")):\n'
            '    for i in range(8):\n        Input[i] = Inptu[i]\n')
    assert "f.tir:4:20: error: unknown name 'Inptu'; did you mean 'Input'?" in _error(text)


def test_unknown_operator_lists_its_namespace(invoke, tmp_path: Path) -> None:
    (tmp_path / "g.tir").write_text(
        '@R.function\ndef main(x: R.Tensor((8,), "float32")):\n    with R.dataflow():\n'
        '        y = R.nn.gelu_erf(x)\n        R.output(y)\n    return y\n')
    r = invoke(tmp_path / "g.tir", "-o", tmp_path / "g.so")
    assert "unknown operator R.nn.gelu_erf; did you mean R.nn.gelu" in r.stderr
    assert "(R.nn has: adaptive_avg_pool1d, " in r.stderr and ", gelu, " in r.stderr


def test_unknown_block_and_pass_and_option(invoke, tmp_path: Path) -> None:
    (tmp_path / "s.tir").write_text(
        '@T.prim_func\ndef add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):\n'
        '    for i in range(16):\n        with T.block("B_add"):\n'
        '            vi = T.axis.remap("S", [i])\n            B[vi] = A[vi]\n\n\n'
        '@S.schedule("add")\ndef _(sch):\n    b = sch.get_block("B_ad")\n')
    r = invoke(tmp_path / "s.tir", "-o", tmp_path / "s.so")
    assert "unknown block \"B_ad\" in function \"add\"; did you mean 'B_add'?" in r.stderr
    r = invoke(tmp_path / "s.tir", "--passes=lower-blcks")
    assert "unknown pass 'lower-blcks'; did you mean 'lower-blocks'?" in r.stderr
    r = invoke(tmp_path / "s.tir", "--verfy-each")
    assert "Did you mean '--verify-each'?" in r.stderr


def test_call_tir_argument_caret(invoke, tmp_path: Path) -> None:
    text = (ROOT / "samples" / "mlp.tir").read_text().replace("(lv0, b1)", "(lv0, w1)")
    (tmp_path / "bad.tir").write_text(text)
    r = invoke(tmp_path / "bad.tir", "-o", tmp_path / "bad.so")
    lines = r.stderr.splitlines()
    assert "error: R.call_tir: argument 1 of bias_relu (b): expected rank 1, got 2" in lines[0]
    col = lines[1].index("(lv0, w1)") + len("(lv0, ")
    assert lines[2] == " " * col + "^~"
