"""The PTX of every graph sample, for sm_80 and sm_90, passes ptxas with no spills at -O2 (a
sample calling a C function between its kernels is compiled with its library, built here); the
registers and shared memory ptxas reports go to out/ptxas_graph_usage.txt."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_support import ROOT, SAMPLE_REFS, build_extern_library, require_ptxas
from tirc.backends.nvptx.ptxas import KernelUsage
from tirc.driver import compile_ptx
from tirc.frontend import parse_file

ARCHS = ("sm_80", "sm_90")
REPORT = ROOT / "out" / "ptxas_graph_usage.txt"
_ROWS: dict[tuple[str, str, int], list[KernelUsage]] = {}
ALL_GRAPH_SAMPLES = SAMPLE_REFS.GRAPH_SAMPLES


def _write_report() -> None:
    lines = [f"{'sample':<18} {'arch':<6} {'-O':>2} {'kernel':<16} {'regs':>4} {'stack':>5} "
             f"{'spill st':>8} {'spill ld':>8} {'smem':>6}"]
    for (name, arch, opt), usages in sorted(_ROWS.items()):
        for u in sorted(usages, key=lambda u: int(u.kernel.rpartition("kernel")[2] or 0)):
            lines.append(f"{name:<18} {arch:<6} {opt:>2} {u.kernel:<16} {u.registers:>4} "
                         f"{u.stack:>5} {u.spill_stores:>8} {u.spill_loads:>8} {u.shared:>6}")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("sample", ALL_GRAPH_SAMPLES, ids=[s.name for s in ALL_GRAPH_SAMPLES])
def test_graph_sample_ptx_passes_ptxas(sample, arch: str, opt_level: int,
                                       tmp_path: Path) -> None:
    require_ptxas()
    libs, dirs = build_extern_library(sample, tmp_path)
    result = compile_ptx(parse_file(str(sample.path)), f"cuda -arch={arch}", opt_level, libs,
                         dirs)
    assert f".target {arch}" in result.ptx
    (host,) = result.metadata["functions"]
    assert host["name"] == sample.func and host["launches"]
    assert [p["name"] for p in host["params"] if p["output"]] != []
    usages = result.usage()
    kernels = [k["name"] for k in result.metadata["kernels"]]
    assert sorted(u.kernel for u in usages) == sorted(kernels)
    assert {launch["kernel"] for launch in host["launches"]} == set(kernels)
    assert all(u.arch == arch and u.registers > 0 for u in usages)
    if opt_level == 2:
        assert all(u.spill_stores == 0 and u.spill_loads == 0 for u in usages)
    assert [c["symbol"] for c in host["host_calls"]] == list(sample.externs)
    _ROWS[(sample.name, arch, opt_level)] = usages
    _write_report()
