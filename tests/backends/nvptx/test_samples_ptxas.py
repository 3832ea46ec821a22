"""Every GPU sample's PTX, for sm_80 and sm_90, is accepted by ptxas; the registers, stack and
spills ptxas reports are written to out/ptxas_usage.txt (and printed, see `pytest -s`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_support import ROOT, SAMPLE_IDS, SAMPLES, require_ptxas, sample_module
from tirc.backends.nvptx import compile_ptx
from tirc.backends.nvptx.ptxas import KernelUsage, parse_usage

ARCHS = ("sm_80", "sm_90")
REPORT = ROOT / "out" / "ptxas_usage.txt"
_ROWS: dict[tuple[str, str, int], list[KernelUsage]] = {}


def _write_report() -> None:
    lines = [f"{'sample':<18} {'arch':<6} {'-O':>2} {'kernel':<26} {'regs':>4} {'stack':>5} "
             f"{'spill st':>8} {'spill ld':>8} {'smem':>6}"]
    for (name, arch, opt), usages in sorted(_ROWS.items()):
        for u in usages:
            lines.append(f"{name:<18} {arch:<6} {opt:>2} {u.kernel:<26} {u.registers:>4} "
                         f"{u.stack:>5} {u.spill_stores:>8} {u.spill_loads:>8} {u.shared:>6}")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    if len(_ROWS) == len(SAMPLES) * len(ARCHS) * 2:
        print("\n" + "\n".join(lines))


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("sample", SAMPLES, ids=SAMPLE_IDS)
def test_sample_ptx_passes_ptxas(sample, arch: str, opt_level: int) -> None:
    require_ptxas()
    result = compile_ptx(sample_module(sample.name), f"cuda -arch={arch}", opt_level)
    assert f".target {arch}" in result.ptx
    usages = result.usage()
    kernels = [k["name"] for k in result.metadata["kernels"]]
    assert sorted(u.kernel for u in usages) == sorted(kernels)
    assert all(u.arch == arch and u.registers > 0 for u in usages)
    if opt_level == 2:
        assert all(u.spill_stores == 0 and u.spill_loads == 0 for u in usages)
    _ROWS[(sample.name, arch, opt_level)] = usages
    _write_report()


def test_usage_report_parsing() -> None:
    report = Path(__file__).with_name("ptxas_v_example.txt").read_text()
    (u,) = parse_usage(report)
    assert u == KernelUsage("row_sum_kernel", "sm_90", 10, 0, 0, 0, 1024)
