"""NVIDIA's PTX assembler: checking PTX, making a cubin, and reading its resource report.

`ptxas` is looked up on PATH (or `$TIRC_PTXAS`); without it, making a cubin is a clear
CompileError and `find_ptxas()` returns None, so tests can skip with a reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tirc.ir.diagnostics import CompileError
from tirc.ir.lean_dataclass import dataclass

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


@dataclass(frozen=True)
class KernelUsage:
    """What ptxas reports for one kernel."""

    kernel: str
    arch: str
    registers: int
    stack: int
    spill_stores: int
    spill_loads: int
    shared: int


def find_ptxas() -> str | None:
    """The ptxas executable, or None."""
    explicit = os.environ.get("TIRC_PTXAS")
    if explicit:
        return explicit if Path(explicit).exists() else None
    return shutil.which("ptxas")


def run_ptxas(ptx: str, arch: str, verbose: bool = False) -> tuple[bytes, str]:
    """Assemble `ptx` for `arch`; returns the cubin and ptxas's report (stderr and stdout)."""
    exe = find_ptxas()
    if exe is None:
        raise CompileError("cannot make a cubin: ptxas (from the CUDA toolkit) is not on PATH; "
                           "install the CUDA toolkit, set TIRC_PTXAS, or emit PTX instead "
                           "(--emit ptx)")
    with tempfile.TemporaryDirectory(prefix="tirc-ptxas-") as tmp:
        src = Path(tmp) / "module.ptx"
        out = Path(tmp) / "module.cubin"
        src.write_text(ptx)
        cmd = [exe, f"-arch={arch}", str(src), "-o", str(out)] + (["-v"] if verbose else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except OSError as exc:
            raise CompileError(f"cannot run ptxas ({exe}): {exc}") from None
        report = proc.stderr + proc.stdout
        if proc.returncode != 0:
            raise CompileError(f"ptxas rejected the PTX for {arch}:\n{report.strip()}")
        return out.read_bytes(), report


def parse_usage(report: str) -> list[KernelUsage]:
    """The per-kernel registers, stack, spills and shared memory of a `ptxas -v` report."""
    usages: list[KernelUsage] = []
    current: dict[str, object] = {}
    for line in report.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = {"kernel": m.group(1), "arch": m.group(2)}
            continue
        m = _SPILLS.search(line)
        if m and current:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                           spill_loads=int(m.group(3)))
            continue
        m = _USED.search(line)
        if m and current:
            smem = _SMEM.search(line)
            usages.append(KernelUsage(
                str(current["kernel"]), str(current["arch"]), int(m.group(1)),
                int(current.get("stack", 0)), int(current.get("spill_stores", 0)),  # type: ignore[call-overload]
                int(current.get("spill_loads", 0)),  # type: ignore[call-overload]
                int(smem.group(1)) if smem else 0))
            current = {}
    return usages
