"""Every loop-level sample's PTX (samples/gpu, scheduled for cuda; samples/*.tir,
samples/schedules (whose schedules are for llvm) and samples/megakernel without megakernel
mode, given the default GPU schedule), for sm_80 and sm_90, is accepted by ptxas; the
registers, stack and spills ptxas reports are written to out/ptxas_usage.txt and shown in
pytest's summary. The graph samples are test_graph_ptxas.py's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gpu_support import GRAPH_SAMPLES, ROOT, SAMPLE_REFS, SAMPLES, require_ptxas
from tirc.backends.nvptx.ptxas import KernelUsage, parse_usage
from tirc.driver import compile_ptx
from tirc.frontend import parse_file

ARCHS = ("sm_80", "sm_90")
REPORT = ROOT / "out" / "ptxas_usage.txt"
_ROWS: dict[tuple[str, str, int], list[KernelUsage]] = {}
SAMPLE_DIRS = ("", "schedules", "gpu", "megakernel")
# The graph samples, which test_graph_ptxas.py compiles (mlp_dps, with a C function between
# its kernels, with its library).
NOT_HERE = {s.path.relative_to(ROOT / "samples").with_suffix("").as_posix()
            for s in SAMPLE_REFS.GRAPH_SAMPLES}
LOOP_FILES = sorted(p.relative_to(ROOT / "samples").with_suffix("").as_posix()
                    for d in SAMPLE_DIRS for p in (ROOT / "samples" / d).glob("*.tir")
                    if p.relative_to(ROOT / "samples").with_suffix("").as_posix() not in NOT_HERE)
# -O0 too for these: hand-scheduled, the default schedule's fallback, the event tensors.
AT_O0 = {f"gpu/{s.name}" for s in SAMPLES} | {"dense_tiled", "gelu_fp16", "gemm_packed_layout",
                                               "conv2d_nchw", "megakernel/moe_topk"}
CASES = [pytest.param(name, arch, opt, id=f"{name}-{arch}-O{opt}")
         for name in LOOP_FILES for arch in ARCHS
         for opt in ((0, 2) if name in AT_O0 else (2,))]


def _write_report() -> None:
    lines = [f"{'sample':<26} {'arch':<6} {'-O':>2} {'kernel':<26} {'regs':>4} {'stack':>5} "
             f"{'spill st':>8} {'spill ld':>8} {'smem':>6}"]
    for (name, arch, opt), usages in sorted(_ROWS.items()):
        for u in usages:
            lines.append(f"{name:<26} {arch:<6} {opt:>2} {u.kernel:<26} {u.registers:>4} "
                         f"{u.stack:>5} {u.spill_stores:>8} {u.spill_loads:>8} {u.shared:>6}")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module", autouse=True)
def _show_report(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the module: the table in the terminal (no `-s` needed) and where it is."""
    yield
    plugins = request.config.pluginmanager
    reporter = plugins.get_plugin("terminalreporter")
    capture = plugins.get_plugin("capturemanager")
    if not _ROWS or reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():  # teardown output is captured otherwise
        reporter.write_line("")
        reporter.write_line(f"ptxas -v usage ({REPORT.relative_to(ROOT)}):")
        for line in REPORT.read_text().splitlines():
            reporter.write_line(line)


@pytest.mark.parametrize("name,arch,opt_level", CASES)
def test_sample_ptx_passes_ptxas(name: str, arch: str, opt_level: int) -> None:
    require_ptxas()
    mod = parse_file(str(ROOT / "samples" / f"{name}.tir"))
    result = compile_ptx(mod, f"cuda -arch={arch}", opt_level)
    assert f".target {arch}" in result.ptx
    usages = result.usage()
    kernels = [k["name"] for k in result.metadata["kernels"]]
    assert sorted(u.kernel for u in usages) == sorted(kernels)
    assert all(u.arch == arch and u.registers > 0 for u in usages)
    if opt_level == 2:
        assert all(u.spill_stores == 0 and u.spill_loads == 0 for u in usages)
    _ROWS[(name, arch, opt_level)] = usages
    _write_report()


def test_every_sample_file_is_covered() -> None:
    files = {p.relative_to(ROOT / "samples").with_suffix("").as_posix()
             for d in SAMPLE_DIRS for p in (ROOT / "samples" / d).glob("*.tir")}
    assert {p.stem for p in (ROOT / "samples" / "gpu").glob("*.tir")} == {s.name for s in SAMPLES}
    graph = {s.name for s in GRAPH_SAMPLES}
    assert files == set(LOOP_FILES) | NOT_HERE and NOT_HERE - graph == {"mlp_dps"}
    assert len(LOOP_FILES) >= 25 and {"dense_tiled", "schedules/sgemm", "gpu/add_scheduled",
                                      "megakernel/moe_topk"} <= set(LOOP_FILES)


def test_usage_report_parsing() -> None:
    report = Path(__file__).with_name("ptxas_v_example.txt").read_text()
    (u,) = parse_usage(report)
    assert u == KernelUsage("row_sum_kernel", "sm_90", 10, 0, 0, 0, 1024)
