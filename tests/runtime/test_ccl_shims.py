"""The collective shims: both implement every function of runtime/ccl/tirc_ccl.h; the MPI one
builds with the installed MPI's compiler, the NCCL one with NCCL's headers and library (the
nvidia-nccl wheel of `tirc[nccl]`) and the CUDA runtime; a program for the CUDA target calls
its collectives as device-memory steps of its launch plan."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tirc.runtime.ccl_shim import (
    SOURCE_DIR,
    build_mpi_shim,
    find_cuda,
    find_mpicc,
    find_nccl,
    nccl_compile_command,
)

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "distributed"


def _interface() -> set[str]:
    header = (SOURCE_DIR / "tirc_ccl.h").read_text()
    return set(re.findall(r"\b(tirc_ccl_\w+)\(", header))


def _defined(lib: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if "tirc_ccl_" in line}


def test_the_interface_and_the_python_contract_agree() -> None:
    from tirc.ir.dist.collective import COLLECTIVES, REDUCE_CODES

    names = _interface()
    assert {c.symbol for c in COLLECTIVES.values()} <= names
    header = (SOURCE_DIR / "tirc_ccl.h").read_text()
    for op, code in REDUCE_CODES.items():
        assert f"TIRC_CCL_{op.upper()} = {code}" in header


@pytest.mark.skipif(find_mpicc() is None, reason="no MPI installed (pip install 'tirc[mpi]')")
def test_mpi_shim_defines_the_interface() -> None:
    assert _interface() <= _defined(build_mpi_shim())


@pytest.mark.skipif(find_nccl() is None or find_cuda() is None or shutil.which("cc") is None,
                    reason="NCCL headers (pip install 'tirc[nccl]') or CUDA headers not found")
def test_nccl_shim_compiles_and_defines_the_interface(tmp_path: Path) -> None:
    out = tmp_path / "libtirc_ccl_nccl.so"
    cmd = nccl_compile_command(out) + ["-Wall", "-Wextra", "-Werror"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert _interface() | {"tirc_ccl_nccl_unique_id", "tirc_ccl_nccl_init_rank"} <= \
        _defined(out)
