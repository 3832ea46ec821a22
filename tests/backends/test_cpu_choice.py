"""Targets: a portable default (x86-64-v3), -mcpu=native, CPU and feature names checked against
LLVM's lists with suggestions, the needed features in the metadata, and the runtime's refusal
to load a library on a CPU without them."""

from __future__ import annotations

import json
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from backend_support import elementwise, emit
from tirc.backends.llvm.cpu import DEFAULT_X86_CPU, choose_cpu, llvm_choices
from tirc.ir import IRModule
from tirc.ir.diagnostics import CompileError
from tirc.ir.target import parse_target
from tirc.runtime import TircError, cpu_check, load

HOST = llvm.get_process_triple()
MOD = IRModule({"vadd": elementwise("vadd", ["float32", "float32"], "float32",
                                    lambda x, y: x + y, 4096)})
X86 = HOST.startswith("x86_64")


def _metadata_target(path: Path) -> dict:
    lib = load(path)
    return lib.metadata["target"]


@pytest.mark.skipif(not X86, reason="the portable default is an x86-64 level")
def test_default_is_x86_64_v3_and_uses_no_avx512(tmp_path: Path) -> None:
    asm = emit(MOD, "asm", None, 3).decode()
    assert "ymm" in asm and "zmm" not in asm
    emit(MOD, "so", None, 2, tmp_path / "v.so")
    target = _metadata_target(tmp_path / "v.so")
    assert target["cpu"] == DEFAULT_X86_CPU == "x86-64-v3"
    assert {"avx2", "fma", "bmi2"} <= set(target["needs"])
    assert "avx512f" not in target["needs"]


def test_native_is_the_host_cpu(tmp_path: Path) -> None:
    emit(MOD, "so", parse_target("llvm -mcpu=native"), 2, tmp_path / "n.so")
    target = _metadata_target(tmp_path / "n.so")
    assert target["cpu"] == llvm.get_host_cpu_name()
    a = np.arange(4096, dtype=np.float32)
    np.testing.assert_array_equal(load(tmp_path / "n.so").vadd(a, a), a + a)


def test_mattr_adds_and_removes_needs() -> None:
    choice = choose_cpu(HOST, "x86-64-v3", ("+avx512f", "-fma"), host=True)
    assert "avx512f" in choice.needs and "fma" not in choice.needs
    assert choice.features == "+avx512f,-fma"


@pytest.mark.parametrize("target, message", [
    ("llvm -mcpu=skylake-avx51", "unknown CPU 'skylake-avx51' for .*did you mean "
                                 "'skylake-avx512'"),
    ("llvm -mcpu=znver9", "unknown CPU 'znver9' .*did you mean 'znver[1-5]'"),
    ("llvm -mattr=+avx513f", "unknown CPU feature 'avx513f' .*did you mean 'avx512f'"),
    ("llvm -mattr=avx2", "-mattr wants \\+feature or -feature, got 'avx2'"),
])
def test_unknown_cpu_or_feature_is_a_diagnostic(target: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        emit(MOD, "obj", parse_target(target), 2)


def test_lists_come_from_llvm() -> None:
    cpus, features = llvm_choices(HOST)
    assert "x86-64-v3" in cpus and "znver5" in cpus and "avx512f" in features


def test_cli_diagnostic_and_march(invoke, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("k.tir").write_text('@T.prim_func\ndef k(A: T.Buffer((8,), "float32")):\n'
                             '    for i in range(8):\n        A[i] = T.float32(1)\n')
    r = invoke("k.tir", "-o", "k.so", "--target", "llvm -mcpu=haswel")
    assert r.exit_code == 1
    assert r.stderr.startswith("tirc: error: unknown CPU 'haswel' for ")
    assert "did you mean 'haswell'" in r.stderr
    r = invoke("k.tir", "-o", "k.so", "-march=native")
    assert r.exit_code == 0, r.output
    assert load(tmp_path / "k.so").metadata["target"]["cpu"] == llvm.get_host_cpu_name()
    r = invoke("k.tir", "-o", "k.ptx", "--target", "cuda -arch=sm_90", "-march=native")
    assert (r.exit_code, r.stderr) == (1, "tirc: error: -march=native names a CPU, but the "
                                          "target is 'cuda -arch=sm_90'\n")


def test_runtime_refuses_a_cpu_without_the_features(tmp_path: Path, monkeypatch) -> None:
    emit(MOD, "so", parse_target("llvm -mcpu=x86-64-v4"), 2, tmp_path / "v4.so")
    meta = json.loads(json.dumps(load(tmp_path / "v4.so").metadata))
    old_cpu = frozenset({"sse", "sse2", "avx", "avx2", "fma"})
    with pytest.raises(TircError, match="compiled for CPU 'x86-64-v4' and uses .*avx512f.*, "
                                        "which this CPU does not have"):
        cpu_check.check_cpu("v4.so", meta, old_cpu)
    monkeypatch.setattr(cpu_check, "cpu_flags", lambda: old_cpu)
    if X86:
        with pytest.raises(TircError, match="avx512bw"):
            load(tmp_path / "v4.so")
    cpu_check.check_cpu("old.so", {"tirc_abi": 1}, old_cpu)  # no target recorded: no check
