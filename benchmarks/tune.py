"""`tirc tune` against numpy and Apache TVM 0.27's MetaSchedule, best GFLOP/s or GB/s against
tuning seconds (all overhead counted: the wall time of the whole `tirc tune` process, and of
MetaSchedule's run until it is stopped).

Workloads (none has a hand schedule; the default schedule rules' decisions are searched):
sgemm 1024^3; matmul M=512, K=768, N=3072; batch matmul 16 x 256^3; conv2d NCHW 1x64x56x56,
64 filters 3x3, padding 1; softmax 4096x1024; layer norm 4096x1024; the MLP
relu(x @ w1 + b1) @ w2 + b2 with x 128x768, w1 768x3072, w2 3072x768 (a graph function; its
fused kernels are the tasks). For each: numpy, tirc's untuned default rules, `tirc tune` at each
budget (a fresh record file per budget, then built with `--tuned`), and MetaSchedule at each of
its budgets (stopped after the time, then its best record built). Every library is timed the
same way: the median of 7 runs of at least 50 ms each.

MetaSchedule runs in its own environment (never a tirc dependency):

    python3 -m venv /work/scratch/tune/tvm-venv
    /work/scratch/tune/tvm-venv/bin/pip install apache-tvm==0.27.0.post1 cloudpickle psutil \\
        xgboost
    /work/scratch/tune/tvm-venv/bin/pip install --target /work/scratch/tune/tvm-ffi-0.1.14 \\
        apache-tvm-ffi==0.1.14.post0

(apache-tvm-ffi 0.1.15 segfaults in any IR JSON serialisation, which kills MetaSchedule's
database; 0.1.14.post0 first on sys.path works; TVM_NUM_THREADS is set to the core count, since
TVM's pool uses one thread on a 2-core machine otherwise). Other places: --tvm-python and
--tvm-ffi. Without that environment the MetaSchedule columns say "absent".

    .venv/bin/python benchmarks/tune.py                 # everything: about 2 hours
    .venv/bin/python benchmarks/tune.py --quick         # budgets 10 s and 20 s, MetaSchedule 30 s
    .venv/bin/python benchmarks/tune.py --workloads sgemm,softmax --budgets 60 --ms-budgets 60
    .venv/bin/python benchmarks/tune.py --keep runs/a && \
        .venv/bin/python benchmarks/tune.py --retime runs/a --rounds 3

A library's time moves by up to 2x within minutes on a shared machine (the same library, timed
twice in one run), so one run's columns, timed minutes apart, can disagree by that much;
`--retime` times everything a `--keep` run built again, side by side in interleaved rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from peers import TVM_FFI, TVM_PYTHON, tvm_env

HERE = Path(__file__).resolve().parent
# Tuning is for one machine: tirc compiles for this machine's CPU (its default target is the
# portable x86-64-v3, AVX2 only) and MetaSchedule for the same CPU, by LLVM's name for it.
HOST_TARGET = "llvm -mcpu=native"

MATMUL = '''
@T.prim_func
def {name}(A: T.Buffer(({m}, {k}), "float32"), B: T.Buffer(({k}, {n}), "float32"),
           C: T.Buffer(({m}, {n}), "float32")):
    T.func_attr({{"global_symbol": "{name}", "tir.noalias": True}})
    for i, j, k in T.grid({m}, {n}, {k}):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''

BATCH_MATMUL = '''
@T.prim_func
def {name}(A: T.Buffer(({batch}, {m}, {k}), "float32"),
           B: T.Buffer(({batch}, {k}, {n}), "float32"),
           C: T.Buffer(({batch}, {m}, {n}), "float32")):
    T.func_attr({{"global_symbol": "{name}", "tir.noalias": True}})
    for q, i, j, k in T.grid({batch}, {m}, {n}, {k}):
        with T.block("C"):
            vq, vi, vj, vk = T.axis.remap("SSSR", [q, i, j, k])
            with T.init():
                C[vq, vi, vj] = T.float32(0)
            C[vq, vi, vj] = C[vq, vi, vj] + A[vq, vi, vk] * B[vq, vk, vj]
'''

CONV2D = '''
@T.prim_func
def {name}(X: T.Buffer(({n}, {c}, {hw}, {hw}), "float32"),
           W: T.Buffer(({f}, {c}, 3, 3), "float32"),
           Y: T.Buffer(({n}, {f}, {hw}, {hw}), "float32")):
    T.func_attr({{"global_symbol": "{name}", "tir.noalias": True}})
    pad = T.alloc_buffer(({n}, {c}, {hwp}, {hwp}), "float32")
    for b, ch, h, w in T.grid({n}, {c}, {hwp}, {hwp}):
        with T.block("pad"):
            vb, vc, vh, vw = T.axis.remap("SSSS", [b, ch, h, w])
            pad[vb, vc, vh, vw] = T.if_then_else(
                1 <= vh and vh <= {hw} and 1 <= vw and vw <= {hw},
                X[vb, vc, vh - 1, vw - 1], T.float32(0))
    for b, o, h, w, rc, ry, rx in T.grid({n}, {f}, {hw}, {hw}, {c}, 3, 3):
        with T.block("Y"):
            vb, vo, vh, vw, vc, vy, vx = T.axis.remap("SSSSRRR", [b, o, h, w, rc, ry, rx])
            with T.init():
                Y[vb, vo, vh, vw] = T.float32(0)
            Y[vb, vo, vh, vw] = Y[vb, vo, vh, vw] + pad[vb, vc, vh + vy, vw + vx] * \\
                W[vo, vc, vy, vx]
'''

SOFTMAX = '''
@T.prim_func
def {name}(A: T.Buffer(({m}, {n}), "float32"), Out: T.Buffer(({m}, {n}), "float32")):
    T.func_attr({{"global_symbol": "{name}", "tir.noalias": True}})
    mx = T.alloc_buffer(({m},), "float32")
    e = T.alloc_buffer(({m}, {n}), "float32")
    s = T.alloc_buffer(({m},), "float32")
    for i, k in T.grid({m}, {n}):
        with T.block("mx"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                mx[vi] = T.float32(-3.4028234663852886e38)
            mx[vi] = T.max(mx[vi], A[vi, vk])
    for i, j in T.grid({m}, {n}):
        with T.block("e"):
            vi, vj = T.axis.remap("SS", [i, j])
            e[vi, vj] = T.exp(A[vi, vj] - mx[vi])
    for i, k in T.grid({m}, {n}):
        with T.block("s"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                s[vi] = T.float32(0)
            s[vi] = s[vi] + e[vi, vk]
    for i, j in T.grid({m}, {n}):
        with T.block("out"):
            vi, vj = T.axis.remap("SS", [i, j])
            Out[vi, vj] = e[vi, vj] / s[vi]
'''

LAYER_NORM = '''
@T.prim_func
def {name}(X: T.Buffer(({m}, {n}), "float32"), gamma: T.Buffer(({n},), "float32"),
           beta: T.Buffer(({n},), "float32"), Out: T.Buffer(({m}, {n}), "float32")):
    T.func_attr({{"global_symbol": "{name}", "tir.noalias": True}})
    mean = T.alloc_buffer(({m},), "float32")
    var = T.alloc_buffer(({m},), "float32")
    for i, k in T.grid({m}, {n}):
        with T.block("mean"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                mean[vi] = T.float32(0)
            mean[vi] = mean[vi] + X[vi, vk] * T.float32({inv_n})
    for i, k in T.grid({m}, {n}):
        with T.block("var"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                var[vi] = T.float32(0)
            var[vi] = var[vi] + (X[vi, vk] - mean[vi]) * (X[vi, vk] - mean[vi]) * \\
                T.float32({inv_n})
    for i, j in T.grid({m}, {n}):
        with T.block("out"):
            vi, vj = T.axis.remap("SS", [i, j])
            Out[vi, vj] = (X[vi, vj] - mean[vi]) * T.rsqrt(var[vi] + T.float32(1e-05)) * \\
                gamma[vj] + beta[vj]
'''

MLP = '''
@R.function
def {name}(x: R.Tensor(({m}, {d}), "float32"), w1: R.Tensor(({d}, {h}), "float32"),
           b1: R.Tensor(({h},), "float32"), w2: R.Tensor(({h}, {d}), "float32"),
           b2: R.Tensor(({d},), "float32")) -> R.Tensor(({m}, {d}), "float32"):
    with R.dataflow():
        h1 = R.matmul(x, w1)
        a1 = R.nn.relu(R.add(h1, b1))
        y = R.add(R.matmul(a1, w2), b2)
        R.output(y)
    return y
'''


@dataclass
class Workload:
    """A benchmark workload: tirc source, numpy reference, TVM spec and work."""

    name: str
    kind: str
    args: dict[str, int]
    template: str
    shapes: list[tuple[int, ...]]
    numpy: Callable[..., Any]
    flops: float
    nbytes: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def compute_bound(self) -> bool:
        return self.flops >= 4 * self.nbytes

    def source(self) -> str:
        return self.template.format(name=self.name, **self.args, **self.extra)

    def figure(self, seconds: float | None) -> float | None:
        if seconds is None or seconds <= 0:
            return None
        return (self.flops if self.compute_bound else self.nbytes) / seconds / 1e9

    @property
    def unit(self) -> str:
        return "GFLOP/s" if self.compute_bound else "GB/s"


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


def _conv2d(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n, c, hw, _ = x.shape
    pad = np.zeros((n, c, hw + 2, hw + 2), x.dtype)
    pad[:, :, 1:-1, 1:-1] = x
    cols = np.lib.stride_tricks.sliding_window_view(pad, (3, 3), axis=(2, 3))
    return np.einsum("nchwyx,fcyx->nfhw", cols, w, optimize=True)


def workloads() -> list[Workload]:
    f32 = 4
    out = [
        Workload("sgemm", "matmul", {"m": 1024, "n": 1024, "k": 1024}, MATMUL,
                 [(1024, 1024), (1024, 1024)], lambda a, b: a @ b, 2 * 1024 ** 3,
                 3 * 1024 * 1024 * f32),
        Workload("matmul_512x768x3072", "matmul", {"m": 512, "n": 3072, "k": 768}, MATMUL,
                 [(512, 768), (768, 3072)], lambda a, b: a @ b, 2 * 512 * 768 * 3072,
                 (512 * 768 + 768 * 3072 + 512 * 3072) * f32),
        Workload("batch_matmul", "matmul", {"batch": 16, "m": 256, "n": 256, "k": 256},
                 BATCH_MATMUL, [(16, 256, 256), (16, 256, 256)], lambda a, b: a @ b,
                 2 * 16 * 256 ** 3, 3 * 16 * 256 * 256 * f32),
        Workload("conv2d", "conv2d", {"n": 1, "c": 64, "f": 64, "hw": 56}, CONV2D,
                 [(1, 64, 56, 56), (64, 64, 3, 3)], _conv2d, 2 * 64 * 64 * 9 * 56 * 56,
                 (2 * 64 * 56 * 56 + 64 * 64 * 9) * f32, {"hwp": 58}),
        Workload("softmax", "softmax", {"m": 4096, "n": 1024}, SOFTMAX, [(4096, 1024)],
                 _softmax, 5 * 4096 * 1024, 2 * 4096 * 1024 * f32),
        Workload("layer_norm", "layer_norm", {"m": 4096, "n": 1024}, LAYER_NORM,
                 [(4096, 1024), (1024,), (1024,)], _layer_norm, 8 * 4096 * 1024,
                 2 * 4096 * 1024 * f32, {"inv_n": repr(1 / 1024)}),
        Workload("mlp", "mlp", {"m": 128, "d": 768, "h": 3072}, MLP,
                 [(128, 768), (768, 3072), (3072,), (3072, 768), (768,)],
                 lambda x, w1, b1, w2, b2: np.maximum(x @ w1 + b1, 0) @ w2 + b2,
                 2 * 2 * 128 * 768 * 3072, (768 * 3072 * 2 + 2 * 128 * 768) * f32),
    ]
    return out


# ---- timing ------------------------------------------------------------------------------


def median_seconds(call: Callable[[], Any], min_ms: float = 50.0, repeats: int = 7) -> float:
    """Median over `repeats` runs of at least `min_ms` each, of the seconds per call."""
    call()
    start = time.perf_counter()
    call()
    one = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(min_ms / 1e3 / one + 0.999))
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            call()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs)


def inputs(w: Workload) -> list[np.ndarray]:
    """The workload's arguments, 64-byte aligned for everyone timed, as MetaSchedule's
    runner aligns its own (numpy puts a large array 16 bytes past a cache line, which splits
    every vector access in two: a layer norm read 48 GB/s so and 66 aligned)."""
    from tirc.runtime import empty_aligned

    rng = np.random.default_rng(0)
    out = []
    for s in w.shapes:
        a = empty_aligned(s, "float32", zero=False)
        a[...] = rng.uniform(-1, 1, s)
        out.append(a)
    return out


def tirc_exe() -> str:
    beside = Path(sys.executable).parent / "tirc"
    return str(beside) if beside.exists() else "tirc"


def time_library(w: Workload, lib_path: Path | None) -> float:
    """Check a built library against numpy and time it (`None`: time numpy itself), in a
    process of its own: OpenBLAS's threads, still spinning after numpy's last call, and
    OpenMP's, after a library's, would otherwise take the cores from whatever is timed next
    (a conv2d library read 120 GFLOP/s after numpy in one process and 155 alone)."""
    done = subprocess.run([sys.executable, __file__, "--time-one", w.name,
                           str(lib_path) if lib_path else "numpy"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"timing {lib_path or 'numpy'} failed: {done.stderr[-300:]}")
    return float(done.stdout.split()[-1])


def time_one(name: str, what: str) -> float:
    """The timing that time_library runs in its own process."""
    w = next(x for x in workloads() if x.name == name)
    args = inputs(w)
    if what == "numpy":
        return median_seconds(lambda: w.numpy(*args))
    import tirc.runtime as rt

    fn = rt.load(what)[w.name]
    got = fn(*args)
    call = fn.prepare(tuple(args), {})
    seconds = median_seconds(lambda: fn.call_prepared(call))
    expect = w.numpy(*args)  # after the timing, for the same reason
    np.testing.assert_allclose(got, expect, rtol=2e-3, atol=2e-3 * max(1.0, float(
        np.abs(expect).max())))
    return seconds


def build(w: Workload, src: Path, out: Path, tuned: Path | None = None) -> None:
    cmd = [tirc_exe(), str(src), "-O3", "--target", HOST_TARGET, "-o", str(out)]
    if tuned is not None:
        cmd += ["--tuned", str(tuned)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def tirc_tune(w: Workload, src: Path, records: Path, budget: float) -> tuple[float, str]:
    """Run `tirc tune`; its wall seconds and its last line."""
    start = time.perf_counter()
    done = subprocess.run([tirc_exe(), "tune", str(src), "-O3", "--target", HOST_TARGET,
                           "-o", str(records),
                           "--budget", f"{budget}s", "--progress", "plain"], capture_output=True,
                          text=True)
    wall = time.perf_counter() - start
    last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0:
        raise RuntimeError(f"tirc tune failed: {last}")
    return wall, last


# ---- MetaSchedule ------------------------------------------------------------------------


def tvm_available(python: str, ffi: str) -> str:
    """"" when the TVM environment works, else why not."""
    if not Path(python).exists():
        return f"no TVM environment at {python} (see --help)"
    probe = subprocess.run([python, "-c", f"import sys; sys.path.insert(0, {ffi!r}); "
                            "import tvm, xgboost; from tvm.s_tir import meta_schedule"],
                           capture_output=True, text=True)
    return "" if probe.returncode == 0 else f"TVM does not import: {probe.stderr[-200:]}"


def metaschedule(w: Workload, budget: float, workdir: Path, python: str, ffi: str
                 ) -> tuple[float | None, float, str]:
    """MetaSchedule for `budget` seconds (then stopped), its best record built and timed:
    (seconds per call or None, wall seconds of the tuning, and why the run ended before its
    budget: "" when it was stopped at the time, else the end of its error output)."""
    spec = json.dumps({"name": w.name, "kind": w.kind, "args": w.args})
    env = tvm_env(ffi)
    script = str(HERE / "tune_tvm.py")
    start = time.perf_counter()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "stderr.txt"
    with open(log, "wb") as err:
        proc = subprocess.Popen([python, script, "tune", spec, str(workdir)], env=env,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        ended_early = ""
        try:
            proc.wait(timeout=budget)
            tail = log.read_text(errors="replace").strip().splitlines()[-1:]
            ended_early = f"exited early, status {proc.returncode}: {' '.join(tail)[-160:]}"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.perf_counter() - start
    return ms_best(w, workdir, python, ffi), wall, ended_early


def ms_best(w: Workload, workdir: Path, python: str, ffi: str) -> float | None:
    """The best record of a MetaSchedule work dir, built and timed: seconds per call, or None
    when it has none that builds and runs."""
    spec = json.dumps({"name": w.name, "kind": w.kind, "args": w.args})
    best = subprocess.run([python, str(HERE / "tune_tvm.py"), "best", spec, str(workdir)],
                          env=tvm_env(ffi), capture_output=True, text=True)
    lines = [ln for ln in best.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return None
    result = json.loads(lines[-1])
    return result["seconds"] if result["status"] == "ok" else None


# ---- the table ---------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--quick", action="store_true",
                        help="budgets of 10 s and 20 s for tirc, 30 s for MetaSchedule")
    parser.add_argument("--workloads", help="comma-separated names (default: all)")
    parser.add_argument("--budgets", default="30,60,300", help="tirc tune budgets, seconds")
    parser.add_argument("--ms-budgets", default="60,300", help="MetaSchedule budgets, seconds")
    parser.add_argument("--no-tvm", action="store_true", help="leave MetaSchedule out")
    parser.add_argument("--tvm-python", default=TVM_PYTHON)
    parser.add_argument("--tvm-ffi", default=TVM_FFI)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--keep", metavar="DIR",
                        help="build and tune in DIR (kept) instead of a temporary folder")
    parser.add_argument("--retime", metavar="DIR",
                        help="tune nothing: time again what a --keep run left in DIR, every "
                             "library of a workload in --rounds interleaved rounds")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --retime")
    parser.add_argument("--time-one", nargs=2, metavar=("WORKLOAD", "LIB"),
                        help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.time_one:
        print(time_one(*opts.time_one))
        return
    if opts.keep and Path(opts.keep).exists() and any(Path(opts.keep).iterdir()):
        parser.error(f"--keep {opts.keep}: not empty (its records would resume, not tune)")
    budgets = [10.0, 20.0] if opts.quick else [float(x) for x in opts.budgets.split(",") if x]
    ms_budgets = [30.0] if opts.quick else [float(x) for x in opts.ms_budgets.split(",") if x]
    chosen = workloads()
    if opts.workloads:
        names = opts.workloads.split(",")
        chosen = [w for w in chosen if w.name in names]
    why_no_tvm = "left out (--no-tvm)" if opts.no_tvm else \
        tvm_available(opts.tvm_python, opts.tvm_ffi)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"tirc tune vs numpy and MetaSchedule ({os.cpu_count()} CPUs, load average {load} "
          f"at the start)")
    if why_no_tvm:
        print(f"MetaSchedule: absent: {why_no_tvm}")
    if opts.retime:
        retime(Path(opts.retime), chosen, opts.rounds, why_no_tvm, opts)
        return
    results = []
    with contextlib.ExitStack() as stack:
        tmp = opts.keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="tune-bench-"))
        for w in chosen:
            d = Path(tmp) / w.name
            d.mkdir(parents=True)
            src = d / f"{w.name}.tir"
            src.write_text(w.source())
            row: dict[str, Any] = {"workload": w.name, "unit": w.unit}
            row["numpy"] = w.figure(time_library(w, None))
            build(w, src, d / "default.so")
            row["default"] = w.figure(time_library(w, d / "default.so"))
            for b in budgets:
                records = d / f"tuned-{b:g}.json"
                try:
                    wall, _ = tirc_tune(w, src, records, b)
                    build(w, src, d / f"tuned-{b:g}.so", records)
                    row[f"tirc@{b:g}"] = w.figure(time_library(w, d / f"tuned-{b:g}.so"))
                    row[f"tirc@{b:g} wall"] = wall
                except (RuntimeError, subprocess.CalledProcessError) as e:
                    row[f"tirc@{b:g}"] = None
                    row[f"tirc@{b:g} error"] = str(e)[:200]
            for b in ms_budgets:
                if why_no_tvm:
                    row[f"MS@{b:g}"] = None
                    continue
                seconds, wall, ended = metaschedule(w, b, d / f"ms-{b:g}", opts.tvm_python,
                                                    opts.tvm_ffi)
                row[f"MS@{b:g}"] = w.figure(seconds)
                row[f"MS@{b:g} wall"] = wall
                if ended:
                    row[f"MS@{b:g} error"] = ended
                    print(f"MetaSchedule on {w.name} {ended}", flush=True)
            results.append(row)
            print_row(row, budgets, ms_budgets, header=len(results) == 1)
            if opts.json:  # after every row, so an interrupted run keeps what it measured
                Path(opts.json).write_text(json.dumps(results, indent=1))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"(load average {load} at the end; tuning walls in seconds are in --json)")


def retime(root: Path, chosen: list[Workload], rounds: int, why_no_tvm: str,
           opts: argparse.Namespace) -> None:
    """Time again the libraries and MetaSchedule records of a --keep run: numpy, the default
    build, each tuned build and each MetaSchedule run's best, one after another in every round,
    and the median over the rounds (the machine's speed drifts within minutes, so only
    figures taken side by side compare)."""
    results = []
    for w in chosen:
        d = root / w.name
        if not (d / "default.so").exists():
            continue
        tuned = sorted(d.glob("tuned-*.so"), key=lambda p: float(p.stem.split("-")[1]))
        ms_dirs = [] if why_no_tvm else sorted(
            (p for p in d.glob("ms-*") if p.is_dir()), key=lambda p: float(p.name[3:]))
        columns: dict[str, Callable[[], float | None]] = {
            "numpy": lambda w=w: time_library(w, None),
            "default": lambda w=w, d=d: time_library(w, d / "default.so")}
        for lib in tuned:
            columns[f"tirc@{lib.stem.split('-')[1]}"] = lambda w=w, lib=lib: time_library(w, lib)
        for ms in ms_dirs:
            columns[f"MS@{ms.name[3:]}"] = lambda w=w, ms=ms: ms_best(
                w, ms, opts.tvm_python, opts.tvm_ffi)
        seen: dict[str, list[float]] = {c: [] for c in columns}
        for _ in range(rounds):
            for c, timer in columns.items():
                seconds = timer()
                if seconds is not None:
                    seen[c].append(seconds)
        row: dict[str, Any] = {"workload": w.name, "unit": w.unit, "rounds": rounds}
        for c, times in seen.items():
            row[c] = w.figure(statistics.median(times)) if times else None
            row[f"{c} rounds"] = [w.figure(t) for t in times]
        results.append(row)
        budgets = [float(c[5:]) for c in columns if c.startswith("tirc@")]
        ms_budgets = [float(c[3:]) for c in columns if c.startswith("MS@")]
        print_row(row, budgets, ms_budgets, header=len(results) == 1)
        if opts.json:
            Path(opts.json).write_text(json.dumps(results, indent=1))


def print_row(row: dict[str, Any], budgets: list[float], ms_budgets: list[float],
              header: bool) -> None:
    cols = ["numpy", "default"] + [f"tirc@{b:g}" for b in budgets] + \
        [f"MS@{b:g}" for b in ms_budgets]
    if header:
        print(f"{'workload':22} {'unit':8} " + " ".join(f"{c:>9}" for c in cols))
    print(f"{row['workload']:22} {row['unit']:8} " +
          " ".join(f"{fmt(row.get(c)):>9}" for c in cols), flush=True)


if __name__ == "__main__":
    main()
