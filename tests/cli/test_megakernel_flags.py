"""`-fmegakernel=static|dynamic` and `-fmegakernel-watchdog=SECONDS`: they reach the megakernel
passes (as the pass-config keys `megakernel` and `megakernel.watchdog`), and bad values are
`tirc: error:` messages with exit status 1."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def mlp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """samples/mlp.tir copied into a fresh working directory."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "mlp.tir", "mlp.tir")
    return "mlp.tir"


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_flag_turns_the_graph_function_into_a_task_graph(invoke, mlp: str, mode: str) -> None:
    r = invoke(mlp, f"-fmegakernel={mode}", "--print-after=megakernel", "--emit", "ll",
               "-o", "mlp.ll")
    assert r.exit_code == 0, r.output
    dump = r.stderr
    assert dump.startswith("# IR after megakernel\n")
    assert f'"megakernel": "{mode}"' in dump
    assert "T.event_tensor(" in dump and "T.event_wait(E_" in dump
    assert re.search(r'annotations=\{"task": "bias_relu"\}', dump)
    llvm = Path("mlp.ll").read_text()
    assert "GOMP_barrier" in llvm and "atomicrmw sub" in llvm


def test_without_the_flag_there_is_no_megakernel(invoke, mlp: str) -> None:
    r = invoke(mlp, "--print-after=megakernel", "--emit", "ll", "-o", "mlp.ll")
    assert r.exit_code == 0, r.output
    assert "event_tensor" not in r.stderr
    assert "GOMP_barrier" not in Path("mlp.ll").read_text()


def test_flag_with_a_space_and_the_watchdog(invoke, mlp: str) -> None:
    r = invoke(mlp, "-fmegakernel", "dynamic", "-fmegakernel-watchdog=7", "--emit", "ll",
               "-o", "mlp.ll")
    assert r.exit_code == 0, r.output
    llvm = Path("mlp.ll").read_text()
    assert "megakernel watchdog: task " in llvm and "waited more than %lld s" in llvm
    assert "i64 7" in llvm


def test_no_watchdog_code_without_the_flag(invoke, mlp: str) -> None:
    r = invoke(mlp, "-fmegakernel=static", "--emit", "ll", "-o", "mlp.ll")
    assert r.exit_code == 0, r.output
    assert "megakernel watchdog" not in Path("mlp.ll").read_text()


@pytest.mark.parametrize("args,message", [
    (["-fmegakernel=fast"], "tirc: error: -fmegakernel wants 'static' or 'dynamic', got 'fast'"),
    (["-fmegakernel="], "tirc: error: -fmegakernel wants 'static' or 'dynamic', got ''"),
    (["-fmegakernel=static", "-fmegakernel-watchdog=soon"],
     "tirc: error: -fmegakernel-watchdog wants a positive whole number of seconds, got 'soon'"),
    (["-fmegakernel=static", "-fmegakernel-watchdog=0"],
     "tirc: error: -fmegakernel-watchdog wants a positive whole number of seconds, got '0'"),
    (["-fmegakernel=static", "-fmegakernel-watchdog=-3"],
     "tirc: error: -fmegakernel-watchdog wants a positive whole number of seconds, got '-3'"),
])
def test_bad_values_are_errors(invoke, mlp: str, args: list[str], message: str) -> None:
    r = invoke(mlp, *args, "--emit", "ll", "-o", "mlp.ll")
    assert r.exit_code == 1, r.output
    assert r.stderr.strip() == message
    assert "Traceback" not in r.output
    assert not Path("mlp.ll").exists()


def test_missing_value_is_a_usage_error(invoke, mlp: str) -> None:
    r = invoke(mlp, "-fmegakernel")
    assert r.exit_code == 2
    assert "-fmegakernel" in r.stderr and "requires an argument" in r.stderr


def test_flags_are_in_the_help(invoke) -> None:
    r = invoke("--help")
    assert r.exit_code == 0
    assert "-fmegakernel static|dynamic" in r.stdout
    assert "-fmegakernel-watchdog SECONDS" in r.stdout
