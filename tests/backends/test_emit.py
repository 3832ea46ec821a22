"""`emit` of each kind: valid LLVM IR (llvmlite parses it), assembly that assembles, objects
that link, shared objects that load, headers that compile; -O levels and targets."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
import numpy as np
import pytest
from backend_support import elementwise, emit
from tirc import driver
from tirc.backends import NotLoweredError, kind_for_path, metadata
from tirc.backends.link import c_compiler, link_shared
from tirc.ir import ForKind, IRModule, Var
from tirc.ir.diagnostics import CompileError
from tirc.ir.dtype import dtype
from tirc.ir.target import parse_target
from tirc.passes.make_entry import MakeEntry
from tirc.runtime import load


def _module() -> IRModule:
    n = Var("n", dtype("int64"))
    f = elementwise("axpy", ["float32", "float32"], "float32", lambda x, y: x * 2.0 + y, n,
                    kind=ForKind.SERIAL)
    return IRModule({"axpy": f})


MOD = _module()


def test_ll_parses_and_declares_the_abi() -> None:
    text = emit(MOD, "ll", None, 0).decode()
    module = llvm.parse_assembly(text)
    module.verify()
    assert "define i32 @axpy(ptr %args, i32 %num_args)" in text
    for helper in ("module_last_error", "module_metadata", "tirc_last_error", "tirc_metadata"):
        assert f"define ptr @{helper}()" in text
    assert "internal thread_local global [1024 x i8]" in text
    compute = text[text.index("define internal i32 @axpy.compute("):].split("\n")[0]
    assert compute.count("noalias nonnull align 4") == 3


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_every_opt_level_emits_valid_ir(level: int) -> None:
    llvm.parse_assembly(emit(MOD, "ll", None, level).decode()).verify()


def test_asm_assembles(tmp_path: Path) -> None:
    asm = emit(MOD, "asm", None, 2).decode()
    assert "axpy:" in asm and ".globl\taxpy" in asm
    (tmp_path / "m.s").write_text(asm)
    subprocess.run([*c_compiler(), "-c", "m.s", "-o", "m.o"], cwd=tmp_path, check=True)
    assert (tmp_path / "m.o").read_bytes()[:4] == b"\x7fELF"


def test_obj_links_into_a_working_library(tmp_path: Path) -> None:
    obj = emit(MOD, "obj", None, 2, tmp_path / "m.o")
    assert obj[:4] == b"\x7fELF" and (tmp_path / "m.o").read_bytes() == obj
    link_shared(obj, tmp_path / "m.so")
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    np.testing.assert_array_equal(load(tmp_path / "m.so").axpy(x, y), x * 2 + 1)


def test_so_without_a_path_returns_the_bytes(tmp_path: Path) -> None:
    data = emit(MOD, "so", None, 1)
    assert data[:4] == b"\x7fELF"
    (tmp_path / "x.so").write_bytes(data)
    assert "axpy" in load(tmp_path / "x.so")


def test_header_compiles_and_declares_everything(tmp_path: Path) -> None:
    text = emit(MOD, "h", None, 2, tmp_path / "axpy.h").decode()
    assert "int32_t axpy(DLTensor **args, int32_t num_args);" in text
    assert "const char *axpy_last_error(void);" in text
    assert "const char *axpy_metadata(void);" in text
    assert "tirc_last_error" not in text and "tirc_metadata" not in text
    assert "args[2] Out: float32[n], output" in text
    assert "symbolic sizes: n = X0.shape[0]" in text
    (tmp_path / "use.c").write_text('#include "axpy.h"\nint main(void) { return 0; }\n')
    subprocess.run([*c_compiler(), "-Wall", "-Werror", "-fsyntax-only", "use.c"], cwd=tmp_path,
                   check=True)


def test_build_picks_kind_from_suffix_and_leaves_no_temporaries(tmp_path: Path) -> None:
    for suffix in (".ll", ".s", ".o", ".so", ".h"):
        out = driver.build(MOD, tmp_path / f"m{suffix}", passes=["make-entry"])
        assert out.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.h", "m.ll", "m.o", "m.s", "m.so"]
    assert kind_for_path("a/b.so") == "so" and kind_for_path("x.txt") is None
    with pytest.raises(CompileError, match="cannot tell the output kind"):
        driver.build(MOD, tmp_path / "m.bin")


def test_target_cpu_changes_the_code() -> None:
    f = elementwise("vadd", ["float32", "float32"], "float32", lambda x, y: x + y, 4096)
    mod = IRModule({"vadd": f})
    baseline = emit(mod, "asm", parse_target("llvm -mcpu=x86-64"), 3).decode()
    avx512 = emit(mod, "asm", parse_target("llvm -mcpu=skylake-avx512"), 3).decode()
    assert "xmm" in baseline and "ymm" not in baseline and "zmm" not in baseline
    assert "ymm" in avx512 or "zmm" in avx512


def test_non_llvm_target_is_an_error() -> None:
    with pytest.raises(CompileError, match="cannot compile for target 'cuda"):
        emit(MOD, "obj", parse_target("cuda -arch=sm_90"), 2)


def test_unknown_kind_is_an_error() -> None:
    with pytest.raises(CompileError, match="unknown output kind 'exe'"):
        emit(MOD, "exe", None, 2)


def test_metadata_json() -> None:
    meta: dict[str, Any] = json.loads(metadata(MakeEntry()(MOD)))
    assert meta == {
        "tirc_abi": 2, "module": "Module", "library": "module",
        "symbols": {"last_error": "module_last_error", "metadata": "module_metadata"},
        "functions": [{
            "name": "axpy", "kind": "prim_func",
            "params": [
                {"name": "X0", "kind": "buffer", "buffer": "X0", "dtype": "float32",
                 "shape": ["n"], "input": True, "output": False},
                {"name": "X1", "kind": "buffer", "buffer": "X1", "dtype": "float32",
                 "shape": ["n"], "input": True, "output": False},
                {"name": "Out", "kind": "buffer", "buffer": "Out", "dtype": "float32",
                 "shape": ["n"], "input": False, "output": True},
            ],
            "vars": {"n": {"dtype": "int64", "from": "X0.shape[0]"}},
            "symbol": "axpy", "flops": "n * 2",
        }],
    }


def test_backend_given_ir_that_is_not_lowered_names_the_missing_step() -> None:
    from tirc.backends import emit as render
    from tirc.frontend import parse

    with pytest.raises(NotLoweredError, match=r"function 'axpy' is not an entry point "
                       r"\(missing step: make-entry\)"):
        render(MOD, "ll")
    with pytest.raises(NotLoweredError, match=r"function 'axpy' is not an entry point"):
        metadata(MOD)
    graph = parse("""
@R.function
def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    return x
""")
    with pytest.raises(NotLoweredError, match=r"'main' is still a graph function \(missing "
                       r"step: lower-graph\)"):
        render(graph, "so")
    with pytest.raises(NotLoweredError, match=r"function 'axpy' is neither a kernel nor a host "
                       r"function \(missing step: gpu-split-host-device\)"):
        render(MOD, "ptx", "cuda -arch=sm_90")
