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
Takes well under a minute on an H200. Last, the GPU megakernel: the decode-like chain of
benchmarks/megakernel.py compiled as one persistent kernel (static and dynamic schedules) and
kernel by kernel, checked against NumPy and timed (`check_megakernel`).

Then the loop samples of samples/references.py (bound by gpu-default-schedule; GB/s counts
every argument once) and the graph samples that can run on a GPU (mlp, transformer_block:
compiled with no schedule, gpu-default-schedule binds their kernels): one call returning NumPy
arrays checked against the reference, then the whole launch plan (every kernel, intermediates
in the device workspace) timed the same way; GFLOP/s counts the matmuls, GB/s the inputs and
outputs once.

Then the sparse samples (SpMM, SDDMM on a Cora-sized power-law graph) and the GPU forms of
paged attention (decode and causal append over a cache in permuted pages, 17k tokens), each
with its own CUDA schedule, checked against SciPy / NumPy and timed the same way.
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


def _load(name: str, path: Path) -> ModuleType:
    """The module in file `path` (the samples folders are not packages), registered as `name`
    and loaded once."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _references() -> ModuleType:
    """samples/gpu/references.py (the GPU samples' sizes and NumPy references)."""
    return _load("gpu_references", ROOT / "samples" / "gpu" / "references.py")


def _odd_sizes(sizes: dict[str, int]) -> dict[str, int]:
    """The same problem at sizes that are not multiples of any tile (edges exercised)."""
    return {k: max(1, v - 3) for k, v in sizes.items()}


def compile_sample(sample: Any, arch: str, out_dir: Path) -> tuple[Path, list[Any]]:
    return compile_file(Path(sample.path), sample.name, arch, out_dir)


def compile_file(source: Path, name: str, arch: str, out_dir: Path) -> tuple[Path, list[Any]]:
    """`source` compiled to `out_dir/name.ptx` at -O3, and its kernels' ptxas usage (none
    without ptxas)."""
    from tirc.driver import compile_ptx
    from tirc.frontend import parse_file

    result = compile_ptx(parse_file(str(source)), f"cuda -arch={arch}", opt_level=3)
    path = out_dir / f"{name}.ptx"
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


def row(name: str, label: str, err: float, ok: bool, ms: float, nbytes: float,
        flops: float | None, regs: str) -> str:
    """One table row: error, match, milliseconds, GB/s and GFLOP/s ('-' when not counted)."""
    gflops = f"{flops / (ms * 1e-3) / 1e9:>9.1f}" if flops is not None else f"{'-':>9}"
    return (f"{name:<16} {label:<26} {err:>9.2e} {'yes' if ok else 'NO':>3} "
            f"{ms * 1e3:>9.1f} {nbytes / (ms * 1e-3) / 1e9:>8.1f} {gflops} {regs:>5}")


def max_error(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """The largest absolute difference between the outputs and the references."""
    return max(float(np.max(np.abs(g.astype(np.float64) - w), initial=0.0))
               for g, w in zip(got, want))


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
    return row(sample.name, label, err, ok, ms, sample.bytes_moved(sizes), sample.flops(sizes),
               regs)


# ---- graph samples ---------------------------------------------------------------------------

GRAPH_DEVICE_SIZES: dict[str, list[dict[str, int]]] = {
    "mlp": [{"n": 4096}, {"n": 4093}],
    "transformer_block": [{"b": 8, "s": 256}, {"b": 3, "s": 253}],
}
GRAPH_SMALL_SIZES: dict[str, dict[str, int]] = {"mlp": {"n": 3}, "transformer_block":
                                                {"b": 1, "s": 3}}


def _sample_references() -> ModuleType:
    """samples/references.py (the graph samples' inputs and NumPy references)."""
    return _load("tirc_sample_references", ROOT / "samples" / "references.py")


def graph_work(name: str, sizes: dict[str, int], inputs: list[np.ndarray],
               outputs: list[np.ndarray]) -> tuple[float, float]:
    """Floating-point operations (the matmuls) and bytes (inputs and outputs once)."""
    nbytes = float(sum(a.nbytes for a in inputs) + sum(o.nbytes for o in outputs))
    if name == "mlp":
        return 2.0 * sizes["n"] * (64 * 128 + 128 * 64 + 64 * 10), nbytes
    tokens, s = sizes["b"] * sizes["s"], sizes["s"]
    projections = 2.0 * tokens * (4 * 64 * 64 + 3 * 64 * 128)
    attention = 2.0 * 2 * tokens * s * 64  # scores and context, 4 heads of 16
    return projections + attention, nbytes


def check_graph_samples(arch: str, repeats: int, compile_only: bool, small: bool,
                        out_dir: Path, names: tuple[str, ...] | None = None) -> tuple[
                            list[str], int]:
    """Table rows for the graph samples, and how many did not match NumPy."""
    from tirc.runtime import TircError, load

    refs = _sample_references()
    rows: list[str] = []
    failures = 0
    for sample in refs.GRAPH_SAMPLES:
        if sample.externs or (names is not None and sample.name not in names):
            continue  # a C function between kernels cannot run on the GPU
        path, usage = compile_sample(sample, arch, out_dir)
        regs = f"{max((u.registers for u in usage), default=0)}max" if usage else "-"
        if compile_only:
            rows.append(f"{sample.name:<16} {'(compiled only)':<26} {'':>9} {'':>3} "
                        f"{'':>9} {'':>8} {'':>9} {regs:>5}")
            continue
        for sizes in [GRAPH_SMALL_SIZES[sample.name]] if small else \
                GRAPH_DEVICE_SIZES[sample.name]:
            label = ",".join(f"{k}={v}" for k, v in sizes.items())
            try:
                fn = load(path)[sample.func]
                inputs = sample.inputs(sizes)
                want = sample.reference(*inputs)
                got = fn(*inputs)
                got = list(got) if isinstance(got, tuple) else [got]
                problem = refs.mismatch(got, want)
                err = max_error(got, want)
                ms = time_kernels(fn, inputs, repeats)
            except TircError as exc:
                failures += 1
                rows.append(f"{sample.name:<16} {label:<26} ERROR {exc}")
                continue
            flops, nbytes = graph_work(sample.name, sizes, inputs, got)
            failures += problem is not None
            rows.append(row(sample.name, label, err, problem is None, ms, nbytes, flops, regs))
    return rows, failures


def check_loop_samples(arch: str, repeats: int, compile_only: bool, small: bool,
                       out_dir: Path, names: tuple[str, ...] | None = None) -> tuple[
                           list[str], int]:
    """Table rows for the loop samples of samples/references.py (no GPU schedule of their own:
    gpu-default-schedule binds them), and how many did not match NumPy."""
    from tirc.runtime import TircError, load

    refs = _sample_references()
    rows: list[str] = []
    failures = 0
    for sample in refs.LOOP_SAMPLES:
        if names is not None and sample.name not in names:
            continue
        path, usage = compile_sample(sample, arch, out_dir)
        regs = f"{max((u.registers for u in usage), default=0)}max" if usage else "-"
        if compile_only:
            rows.append(f"{sample.name:<16} {'(compiled only)':<26} {'':>9} {'':>3} "
                        f"{'':>9} {'':>8} {'':>9} {regs:>5}")
            continue
        for sizes in [sample.interp_sizes] if small else [sample.compiled_sizes[-1]]:
            label = ",".join(f"{k}={v}" for k, v in sizes.items()) or "static"
            try:
                fn = load(path)[sample.func]
                inputs = sample.inputs(sizes)
                want = sample.expected(inputs)
                args = sample.arguments(inputs, want)
                fn(*args)
                got = sample.output_values(args)
                problem = refs.mismatch(got, want)
                err = max_error(got, want)
                ms = time_kernels(fn, args, repeats)
            except TircError as exc:
                failures += 1
                rows.append(f"{sample.name:<16} {label:<26} ERROR {exc}")
                continue
            failures += problem is not None
            nbytes = float(sum(a.nbytes for a in args))
            rows.append(row(sample.name, label, err, problem is None, ms, nbytes, None, regs))
    return rows, failures


def run(arch: str | None, repeats: int, compile_only: bool, small: bool = False,
        graph: tuple[str, ...] | None = None, loops: tuple[str, ...] | None = None,
        sparse: bool = True) -> int:
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
        from tirc.ir.gpu.arch import ARCHS

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
        loop_rows, loop_failures = check_loop_samples(arch, repeats, compile_only, small,
                                                      Path(tmp), loops)
        rows += loop_rows
        failures += loop_failures
        graph_rows, graph_failures = check_graph_samples(arch, repeats, compile_only, small,
                                                         Path(tmp), graph)
        rows += graph_rows
        failures += graph_failures
        if sparse:
            sparse_rows, sparse_failures = check_sparse_attention(arch, repeats, compile_only,
                                                                  small, Path(tmp))
            rows += sparse_rows
            failures += sparse_failures
    print("\n".join(rows))
    return 1 if failures else 0


# ---- sparse kernels and paged attention -----------------------------------------------------

SPARSE_KERNELS = {  # function: (its file, the table's name for it)
    "spmm": (ROOT / "samples" / "sparse" / "spmm.tir", "spmm"),
    "sddmm": (ROOT / "samples" / "sparse" / "sddmm.tir", "sddmm"),
    "paged_decode_gpu": (ROOT / "samples" / "attention" / "paged_decode_gpu.tir",
                         "paged decode"),
    "paged_append_causal_gpu": (ROOT / "samples" / "attention" / "paged_append_causal_gpu.tir",
                                "paged append"),
}


def _sparse_case(name: str, small: bool) -> tuple[str, list[Any], int, np.ndarray, float,
                                                   float | None, float]:
    """(label, arguments, output index, reference, bytes moved, flops, tolerance) of one
    kernel: SpMM / SDDMM on a power-law graph (Cora-sized; tiny with `small`), paged decode /
    causal append on a cache in permuted pages with ragged lengths (an empty request, a
    one-token last page; benchmarks/attention.py's 17k tokens unless `small`)."""
    rng = np.random.default_rng(0)
    if name in ("spmm", "sddmm"):
        graphs = _load("tirc_bench_sparse", ROOT / "benchmarks" / "sparse.py")
        n, nnz, feat = (60, 240, 8) if small else (2708, 10_800, 64)
        a = graphs.power_law_graph(n, nnz)
        b = rng.uniform(-1, 1, (n, feat)).astype(np.float32)
        label = f"n={n},nnz={a.nnz},f={feat}"
        index_bytes = float(a.indptr.nbytes + a.indices.nbytes)
        if name == "spmm":
            c = np.zeros((n, feat), np.float32)
            want = a.astype(np.float64) @ b.astype(np.float64)
            args = [a.data, b, c, a.indptr, a.indices, n, n, feat, a.nnz]
            return (label, args, 2, np.asarray(want), index_bytes + a.data.nbytes + b.nbytes
                    + c.nbytes, 2.0 * a.nnz * feat, 1e-4)
        x = rng.uniform(-1, 1, (n, feat)).astype(np.float32)
        rows = np.repeat(np.arange(n), np.diff(a.indptr))
        want = np.einsum("ij,ij->i", x[rows].astype(np.float64), b[a.indices])
        args = [x, b, np.zeros(a.nnz, np.float32), a.indptr, a.indices, n, n, feat, a.nnz]
        return (label, args, 2, want, index_bytes + x.nbytes + b.nbytes + 4.0 * a.nnz,
                2.0 * a.nnz * feat, 1e-4)
    ref = _load("paged_attention_reference", ROOT / "samples" / "attention" / "reference.py")
    lens = [3, 17, 0] if small else rng.integers(500, 1600, 16).tolist()
    cache = ref.make_cache(lens, 16, 8, 128, "float16", seed=1)
    table = [cache.k, cache.v, cache.kv_indptr, cache.kv_indices, cache.kv_last_page_len]
    label = f"b={len(lens)},tokens={sum(lens)}"
    kv_bytes = 2.0 * sum(lens) * 8 * 128 * 2
    if name == "paged_decode_gpu":
        q = rng.uniform(-1, 1, (len(lens), 32, 128)).astype(np.float16)
        args = [q, *table, np.zeros(q.shape, np.float16)]
        want = ref.attention(q, cache)
    else:
        n_q = [min(2 if small else 4, n) for n in lens]
        qo = np.concatenate([[0], np.cumsum(n_q)]).astype(np.int32)
        q = rng.uniform(-1, 1, (int(qo[-1]), 32, 128)).astype(np.float16)
        args = [q, *table, qo, np.zeros(q.shape, np.float16)]
        want = ref.attention(q, cache, qo)
        label += f",q={int(qo[-1])}"
    return label, args, len(args) - 1, want, kv_bytes + 2.0 * q.nbytes, None, 5e-3


def check_sparse_attention(arch: str, repeats: int, compile_only: bool, small: bool,
                           out_dir: Path) -> tuple[list[str], int]:
    """Table rows for the sparse samples and the GPU forms of paged attention (their own
    `target="cuda"` schedules), checked against SciPy / NumPy, and how many did not match."""
    from tirc.runtime import TircError, load

    rows: list[str] = []
    failures = 0
    for name, (source, shown) in SPARSE_KERNELS.items():
        path, usage = compile_file(source, name, arch, out_dir)
        regs = f"{max((u.registers for u in usage), default=0)}max" if usage else "-"
        if compile_only:
            rows.append(f"{shown:<16} {'(compiled only)':<26} {'':>9} {'':>3} {'':>9} {'':>8} "
                        f"{'':>9} {regs:>5}")
            continue
        label, args, out, want, nbytes, flops, tol = _sparse_case(name, small)
        try:
            fn = load(path)[name]
            fn(*args)
            got = args[out].astype(np.float64)
            err = float(np.max(np.abs(got - want), initial=0.0))
            ok = bool(np.allclose(got, want, rtol=tol, atol=tol))
            ms = time_kernels(fn, args, repeats)
        except TircError as exc:
            failures += 1
            rows.append(f"{shown:<16} {label:<26} ERROR {exc}")
            continue
        failures += not ok
        rows.append(row(shown, label, err, ok, ms, nbytes, flops, regs))
    return rows, failures


# ---- GPU megakernel vs per-kernel ------------------------------------------------------------

MEGAKERNEL_BATCHES = (1, 4, 16)
DIM = 1024


def chain_source(layers: int, dim: int) -> str:
    """The decode-like chain of benchmarks/megakernel.py: `layers` times (x @ W (dim x dim)
    + b, GELU, RMS norm)."""
    name = "tirc_megakernel_benchmark"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "megakernel.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].source(layers, dim)


def _chain_reference(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    """benchmarks/megakernel.py's chain in float64 NumPy with the exact (erf) GELU."""
    import math

    erf = np.vectorize(math.erf)
    y = x.astype(np.float64)
    for k in range(0, len(weights), 3):
        w, b, g = (a.astype(np.float64) for a in weights[k:k + 3])
        a = y @ w + b
        e = 0.5 * a * (1 + erf(a / math.sqrt(2)))
        y = e / np.sqrt(np.mean(e * e, axis=-1, keepdims=True) + 1e-5) * g
    return y


def _chain_ptx(text: str, arch: str, mode: str | None, out: Path) -> tuple[Path, str]:
    """The chain as a GPU megakernel (`mode`) or kernel by kernel; its PTX path and regs."""
    from tirc.backends.nvptx.ptxas import find_ptxas
    from tirc.driver import compile_ptx
    from tirc.frontend import parse

    result = compile_ptx(parse(text), f"cuda -arch={arch}", 3, megakernel=mode)
    path = out / f"chain_{mode or 'kernels'}.ptx"
    path.write_text(result.ptx)
    usage = result.usage() if find_ptxas() is not None else []
    return path, f"{max((u.registers for u in usage), default=0)}max" if usage else "-"


def _device_arch() -> str:
    """The device's sm_XX when tirc knows it, else sm_90 (for --compile-only, no device)."""
    from tirc.ir.gpu.arch import ARCHS
    from tirc.runtime.cuda_driver import CudaDriverError, driver

    try:
        major, minor = driver().compute_capability()
    except CudaDriverError:
        return "sm_90"
    arch = f"sm_{major}{minor}"
    return arch if arch in ARCHS else ("sm_90" if major >= 9 else "sm_80")


def check_megakernel(arch: str, repeats: int, compile_only: bool, small: bool,
                     out_dir: Path) -> tuple[list[str], int]:
    """The decode-like chain of benchmarks/megakernel.py (8 layers of 1024x1024; 2 with
    --small) as one persistent GPU megakernel (static and dynamic schedules, a block per SM)
    and kernel by kernel: max error against NumPy, median latency of the whole launch plan,
    and per-kernel / megakernel (above 1: the megakernel is faster)."""
    from tirc.ir.diagnostics import CompileError
    from tirc.runtime import TircError, load

    layers = 2 if small else 8
    text = chain_source(layers, DIM)
    rows: list[str] = []
    failures = 0
    builds: dict[str, tuple[Path, str]] = {}
    for mode in ("kernels", "static", "dynamic"):
        try:
            builds[mode] = _chain_ptx(text, arch, None if mode == "kernels" else mode, out_dir)
        except CompileError as exc:
            rows.append(f"{'decode chain':<16} {mode:<26} does not compile: {exc}")
            failures += mode != "kernels"
    if compile_only:
        for mode, (_, regs) in builds.items():
            rows.append(f"{'decode chain':<16} {mode + ' (compiled only)':<26} {'':>9} {'':>3} "
                        f"{'':>9} {'':>8} {'':>9} {regs:>5}")
        return rows, failures
    rng = np.random.default_rng(0)
    weights: list[np.ndarray] = []
    for _ in range(layers):
        weights += [(rng.standard_normal((DIM, DIM)) / np.sqrt(DIM)).astype("float32"),
                    (rng.standard_normal(DIM) * 0.1).astype("float32"),
                    (1 + rng.standard_normal(DIM) * 0.1).astype("float32")]
    for n in (1,) if small else MEGAKERNEL_BATCHES:
        x = rng.standard_normal((n, DIM)).astype("float32")
        want = _chain_reference(x, weights)
        times: dict[str, float] = {}
        for mode, (path, regs) in builds.items():
            try:
                fn = load(path)["main"]
                got = fn(x, *weights)
                err = float(np.max(np.abs(got.astype(np.float64) - want)))
                ok = bool(np.allclose(got, want, rtol=1e-3, atol=1e-3))
                times[mode] = time_kernels(fn, [x, *weights], repeats)
            except TircError as exc:
                failures += 1
                rows.append(f"{'decode chain':<16} {f'{mode} n={n}':<26} ERROR {exc}")
                continue
            failures += not ok
            ratio = f"  x{times['kernels'] / times[mode]:.2f} vs kernels" \
                if mode != "kernels" and "kernels" in times else ""
            rows.append(f"{'decode chain':<16} {f'{mode} n={n}':<26} {err:>9.2e} "
                        f"{'yes' if ok else 'NO':>3} {times[mode] * 1e3:>9.1f} {'':>8} "
                        f"{2.0 * n * DIM * DIM * layers / (times[mode] * 1e-3) / 1e9:>9.1f} "
                        f"{regs:>5}{ratio}")
    return rows, failures


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
    if status != 2:
        with tempfile.TemporaryDirectory(prefix="tirc-gpu-megakernel-") as tmp:
            arch = args.arch or _device_arch()
            rows, failures = check_megakernel(arch, args.repeats, args.compile_only,
                                              args.small, Path(tmp))
        print("\n".join(["GPU megakernel vs per-kernel latency (decode-like chain):", *rows]))
        status = 1 if failures else status
    print(f"gpu_check: {time.perf_counter() - started:.1f} s, exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
