"""The prepared device check: compile every GPU sample to PTX, run it on the GPU, compare with
NumPy, time the kernels with CUDA events, print a table.

    python benchmarks/gpu_check.py                 # on a machine with an NVIDIA GPU
    python benchmarks/gpu_check.py --compile-only  # anywhere: PTX (and ptxas) only
    python benchmarks/gpu_check.py --repeats 50 --arch sm_90

For each sample of samples/gpu (samples/gpu/references.py) and each of its sizes: PTX for the
device's architecture (or --arch), `tirc.runtime.load`, one checked call against NumPy (max
error, pass/fail), then the kernels alone (inputs already on the device) timed with CUDA events:
the median of `--repeats` runs after a warm-up, with GB/s and GFLOP/s. Exit status: 0 when
every result matches, 1 when one does not, 2 when there is no GPU/driver (with the reason).
Takes well under a minute on an H200. The GPU megakernel comparison is not part of it yet
(graph-level GPU lowering is not implemented).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _references() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_references",
                                                  ROOT / "samples" / "gpu" / "references.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _odd_sizes(sizes: dict[str, int]) -> dict[str, int]:
    """The same problem at sizes that are not multiples of any tile (edges exercised)."""
    return {k: max(1, v - 3) for k, v in sizes.items()}


def compile_sample(sample: Any, arch: str, out_dir: Path) -> tuple[Path, list[Any]]:
    from tirc.backends.nvptx import compile_ptx
    from tirc.frontend import parse_file

    result = compile_ptx(parse_file(str(sample.path)), f"cuda -arch={arch}", opt_level=3)
    path = out_dir / f"{sample.name}.ptx"
    path.write_text(result.ptx)
    usage: list[Any] = []
    from tirc.backends.nvptx.ptxas import find_ptxas

    if find_ptxas() is not None:
        usage = result.usage()
    return path, usage


def time_kernels(fn: Any, args: list[np.ndarray], repeats: int) -> float:
    """Median milliseconds of the function's kernels, inputs and outputs kept on the device."""
    binder, values, _ = fn.prepare(tuple(args), {})
    bound = fn.bind(binder, values)
    drv = fn.module.driver
    try:
        for _ in range(min(3, repeats)):
            bound.launch()
        drv.synchronize()
        start, end = drv.event(), drv.event()
        times = []
        for _ in range(repeats):
            drv.record(start)
            bound.launch()
            drv.record(end)
            times.append(drv.elapsed_ms(start, end))
        return statistics.median(times)
    finally:
        bound.free()


def check_one(sample: Any, module: Any, sizes: dict[str, int], repeats: int, label: str,
              regs: str) -> str:
    """One table row: run once against NumPy, then time the kernels alone."""
    fn = module[sample.func]
    inputs = sample.inputs(sizes)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    fn(*args)
    err = sample.max_error(args, want)
    ok = sample.matches(args, want)
    ms = time_kernels(fn, args, repeats)
    gbs = sample.bytes_moved(sizes) / (ms * 1e-3) / 1e9
    gflops = sample.flops(sizes) / (ms * 1e-3) / 1e9
    return (f"{sample.name:<16} {label:<26} {err:>9.2e} {'yes' if ok else 'NO':>3} "
            f"{ms * 1e3:>9.1f} {gbs:>8.1f} {gflops:>9.1f} {regs:>5}")


def run(arch: str | None, repeats: int, compile_only: bool, small: bool = False) -> int:
    refs = _references()
    from tirc.runtime import TircError, load
    from tirc.runtime.cuda_driver import CudaDriverError, driver

    if arch is None and not compile_only:
        try:
            major, minor = driver().compute_capability()
        except CudaDriverError as exc:
            print(f"gpu_check: {exc}", file=sys.stderr)
            return 2
        arch = f"sm_{major}{minor}"
        print(f"device: {driver().name}, {arch}, {driver().sm_count()} SMs")
        from tirc.passes.gpu.gpu_arch import ARCHS

        if arch not in ARCHS:
            arch = "sm_90" if major >= 9 else "sm_80"
            print(f"gpu_check: tirc does not know this architecture; compiling for {arch}")
    arch = arch or "sm_90"
    failures = 0
    header = (f"{'sample':<16} {'sizes':<26} {'max err':>9} {'ok':>3} {'time us':>9} "
              f"{'GB/s':>8} {'GFLOP/s':>9} {'regs':>5}")
    rows = [header, "-" * len(header)]
    with tempfile.TemporaryDirectory(prefix="tirc-gpu-check-") as tmp:
        for sample in refs.GPU_SAMPLES:
            path, usage = compile_sample(sample, arch, Path(tmp))
            regs = ",".join(str(u.registers) for u in usage) or "-"
            if compile_only:
                rows.append(f"{sample.name:<16} {'(compiled only)':<26} {'':>9} {'':>3} "
                            f"{'':>9} {'':>8} {'':>9} {regs:>5}")
                continue
            sizes_list = [sample.interp_sizes] if small else \
                [sample.device_sizes, _odd_sizes(sample.device_sizes)]
            for sizes in sizes_list:
                label = ",".join(f"{k}={v}" for k, v in sizes.items())
                try:
                    rows.append(check_one(sample, load(path), sizes, repeats, label, regs))
                except TircError as exc:
                    failures += 1
                    rows.append(f"{sample.name:<16} {label:<26} ERROR {exc}")
                    continue
                failures += rows[-1].split()[3] != "yes"
    print("\n".join(rows))
    print("GPU megakernel vs per-kernel latency: not measured (no GPU megakernel yet)")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", help="CUDA architecture (default: the device's)")
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per sample")
    parser.add_argument("--compile-only", action="store_true",
                        help="only make the PTX (and run ptxas when present)")
    parser.add_argument("--small", action="store_true",
                        help="the small sizes of the interpreter tests (a quick smoke run)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    status = run(args.arch, args.repeats, args.compile_only, args.small)
    print(f"gpu_check: {time.perf_counter() - started:.1f} s, exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
