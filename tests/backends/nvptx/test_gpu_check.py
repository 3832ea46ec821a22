"""benchmarks/gpu_check.py, the prepared device script: it imports, says clearly that there is
no driver, compiles every sample, and runs end to end against a fake driver (GPU interpreter)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from gpu_support import (
    ROOT,
    SAMPLE_REFS,
    SAMPLES,
    FakeDriver,
    lower,
    require_ptxas,
    sample_module,
)
from tirc.frontend import parse_file
from tirc.runtime import cuda_driver

SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_a_driver_it_exits_2_with_the_reason(tmp_path) -> None:
    try:
        cuda_driver.DriverAPI()
        pytest.skip("this machine has a CUDA driver")
    except cuda_driver.CudaDriverError:
        pass
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gpu_check: no CUDA driver: cannot open libcuda (")


def test_runs_end_to_end_on_a_fake_device(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    fake = FakeDriver(*(lower(sample_module(s.name), opt_level=3, arch="sm_90")
                        for s in SAMPLES),
                      lower(parse_file(str(SAMPLE_REFS.BY_NAME["transpose"].path)), opt_level=3,
                            arch="sm_90"),
                      lower(parse_file(str(SAMPLE_REFS.BY_NAME["mlp"].path)), opt_level=3,
                            arch="sm_90"))
    monkeypatch.setattr(cuda_driver, "_DRIVER", fake)
    status = _load().run(None, repeats=1, compile_only=False, small=True, graph=("mlp",),
                         loops=("transpose",), sparse=False)  # sparse: the test below
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.splitlines()[0] == "device: fake, sm_90, 132 SMs"
    rows = [line.split() for line in out.splitlines()[3:5 + len(SAMPLES)]]
    assert [r[0] for r in rows] == [s.name for s in SAMPLES] + ["transpose", "mlp"]
    assert all(r[3] == "yes" for r in rows)
    assert rows[-1][1] == "n=3"
    # the graph row ran the whole plan (3 kernels) for the checked call, warm-up and timing
    assert [k for k, *_ in fake.launches if k.startswith("main_")] == \
        ["main_kernel0", "main_kernel1", "main_kernel2"] * 3


def test_compile_only_lists_the_graph_samples(capsys) -> None:
    require_ptxas()
    status = _load().run("sm_90", repeats=1, compile_only=True, graph=("mlp",))
    out = capsys.readouterr().out
    assert status == 0, out
    listed = {line.split()[0] for line in out.splitlines()[2:] if "(compiled only)" in line}
    assert {s.name for s in SAMPLE_REFS.LOOP_SAMPLES} <= listed
    (row,) = [line for line in out.splitlines() if line.startswith("mlp ")]
    assert "(compiled only)" in row and row.split()[-1].endswith("max")


def test_sparse_and_attention_run_on_a_fake_device(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path) -> None:
    """The device script's sparse samples and GPU paged attention, small, on the fake driver:
    every row matches SciPy / NumPy."""
    script = _load()
    fake = FakeDriver(*(lower(parse_file(str(path)), opt_level=3, arch="sm_90")
                        for path, _ in script.SPARSE_KERNELS.values()))
    monkeypatch.setattr(cuda_driver, "_DRIVER", fake)
    rows, failures = script.check_sparse_attention("sm_90", 1, False, True, tmp_path)
    assert failures == 0, rows
    assert [r.split()[0] for r in rows] == ["spmm", "sddmm", "paged", "paged"]
    assert all(r.split()[4 if r.startswith("paged") else 3] == "yes" for r in rows), rows
