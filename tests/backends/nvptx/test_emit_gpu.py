"""`--emit ptx` / `--emit cubin` for cuda targets, through tirc.driver.emit and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_support import GPU_SAMPLES_DIR, require_ptxas, sample_module
from tirc.backends import kind_for_path
from tirc.backends.nvptx.ptx_metadata import END, read_block
from tirc.driver import emit
from tirc.ir.diagnostics import CompileError
from tirc.ir.target import parse_target

CUDA90 = parse_target("cuda -arch=sm_90")


def test_ptx_suffix_means_ptx() -> None:
    assert kind_for_path("k.ptx") == "ptx" and kind_for_path("k.cubin") == "cubin"


def test_emit_ptx_starts_with_the_metadata_block(tmp_path: Path) -> None:
    out = tmp_path / "k.ptx"
    data = emit(sample_module("row_sum_shared"), "ptx", CUDA90, 2, out)
    text = data.decode()
    assert out.read_bytes() == data
    head = text.splitlines()[:3]
    assert head == [
        "// tirc module Module for cuda -arch=sm_90",
        "// function row_sum_shared(a: float32[m, n], b: float32[m] (output))",
        "//   launch row_sum_shared_kernel grid (m, 1, 1) block (128, 1, 1) shared 0"]
    assert END in text and text.index(END) < text.index(".version")
    meta = read_block(text)
    assert meta is not None and meta["arch"] == "sm_90"
    assert [f["name"] for f in meta["functions"]] == ["row_sum_shared"]


def test_emit_cubin(tmp_path: Path) -> None:
    require_ptxas()
    data = emit(sample_module("silu_bias_2d"), "cubin", CUDA90, 2, tmp_path / "k.cubin")
    assert data[:4] == b"\x7fELF"


def test_cubin_without_ptxas_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("TIRC_PTXAS", str(tmp_path / "no-ptxas"))
    with pytest.raises(CompileError) as info:
        emit(sample_module("silu_bias_2d"), "cubin", CUDA90, 2)
    assert str(info.value) == (
        "tirc: error: cannot make a cubin: ptxas (from the CUDA toolkit) is not on PATH; "
        "install the CUDA toolkit, set TIRC_PTXAS, or emit PTX instead (--emit ptx)")


def test_ptx_for_a_cpu_target_is_an_error() -> None:
    with pytest.raises(CompileError, match="PTX and cubin are made for cuda targets, not "
                       "'llvm'"):
        emit(sample_module("silu_bias_2d"), "ptx", parse_target("llvm"), 2)


def test_cuda_target_cannot_make_a_shared_object() -> None:
    with pytest.raises(CompileError, match="cannot compile for target 'cuda -arch=sm_90'"):
        emit(sample_module("silu_bias_2d"), "so", CUDA90, 2)


def test_emit_nvptx_llvm_ir_and_asm() -> None:
    ll = emit(sample_module("silu_bias_2d"), "ll", CUDA90, 2).decode()
    assert 'target triple = "nvptx64-nvidia-cuda"' in ll
    asm = emit(sample_module("silu_bias_2d"), "asm", CUDA90, 2).decode()
    assert ".visible .entry silu_bias_2d_kernel(" in asm


def test_cli_writes_ptx(invoke, tmp_path: Path) -> None:
    out = tmp_path / "r.ptx"
    result = invoke(GPU_SAMPLES_DIR / "row_sum_shared.tir", "--target", "cuda -arch=sm_80",
                    "-o", out)
    assert result.exit_code == 0, result.output
    assert ".target sm_80" in out.read_text()


def test_cli_partly_bound_function_is_a_diagnostic(invoke, tmp_path: Path) -> None:
    # (a function with no bindings at all gets the default GPU schedule; one with some is
    # its author's, and a store left outside the kernels cannot run; a serial loop around
    # the kernels can, on the host)
    sample = tmp_path / "partly.tir"
    sample.write_text("""@T.prim_func
def partly(a: T.Buffer((4, 32), "float32")):
    for i in range(4):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            a[i, tx] = T.float32(1)
        a[i, 0] = T.float32(2)
""")
    result = invoke(sample, "--target", "cuda", "-o", tmp_path / "r.ptx")
    assert result.exit_code == 1
    assert "partly.tir:6:9: error: gpu-split-host-device: partly: a store to 'a' is outside " \
        "every thread-bound loop" in result.output


def test_cli_emits_a_cubin_for_the_requested_arch(invoke, tmp_path: Path) -> None:
    require_ptxas()
    out = tmp_path / "r.cubin"
    result = invoke(GPU_SAMPLES_DIR / "row_sum_shared.tir", "--target", "cuda -arch=sm_80",
                    "-o", out)
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    assert data[:4] == b"\x7fELF" and b"row_sum_shared_kernel" in data


def test_cli_cubin_without_ptxas_on_path_is_a_diagnostic(invoke, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIRC_PTXAS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ptxas anywhere
    out = tmp_path / "r.cubin"
    result = invoke(GPU_SAMPLES_DIR / "row_sum_shared.tir", "--target", "cuda", "-o", out)
    assert result.exit_code == 1
    assert "error: cannot make a cubin: ptxas (from the CUDA toolkit) is not on PATH" in \
        result.output
    assert "Traceback" not in result.output and not out.exists()
