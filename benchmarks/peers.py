"""Apache TVM as a peer in the benchmarks: runs benchmarks/peers_tvm.py with the Python of TVM's
environment (never a tirc dependency; set up as benchmarks/tune.py --help says) and returns its
medians. Without that environment the caller prints why the TVM rows are absent."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
TVM_PYTHON = os.environ.get("TIRC_BENCH_TVM_PYTHON", "/work/scratch/tune/tvm-venv/bin/python")
TVM_FFI = os.environ.get("TIRC_BENCH_TVM_FFI", "/work/scratch/tune/tvm-ffi-0.1.14")


def tvm_env(ffi: str) -> dict[str, str]:
    """The environment TVM runs in: its tvm-ffi first, a thread per core (TVM's pool uses one
    on a 2-core machine otherwise) and the CPU the benchmarks compile tirc for."""
    import llvmlite.binding as llvm

    return {**os.environ, "TVM_FFI_PATH": ffi, "TVM_NUM_THREADS": str(os.cpu_count() or 1),
            "TVM_MCPU": llvm.get_host_cpu_name()}


def tvm_peer(args: list[str]) -> tuple[dict[str, float], str]:
    """Seconds per call of each kernel peers_tvm.py times for `args`, and "" or why there are
    none (no environment, TVM failed, or a result differs from numpy's)."""
    if not Path(TVM_PYTHON).exists():
        return {}, f"no TVM environment at {TVM_PYTHON} (TIRC_BENCH_TVM_PYTHON)"
    done = subprocess.run([TVM_PYTHON, str(HERE / "peers_tvm.py"), *args], env=tvm_env(TVM_FFI),
                          capture_output=True, text=True)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not results:
        return {}, f"TVM failed (status {done.returncode}): {done.stderr.strip()[-300:]}"
    wrong = [r["kernel"] for r in results if r["max_abs_error"] > 1e-4]
    if wrong:
        return {}, f"TVM's {', '.join(wrong)} differs from numpy"
    return {r["kernel"]: r["seconds"] for r in results}, ""
