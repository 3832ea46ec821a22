"""Apache TVM 0.27's best hand schedules of the softmax and elementwise benchmarks, run in TVM's
own environment (never a tirc dependency): benchmarks/softmax.py and benchmarks/elementwise.py
start this script with that environment's Python (through benchmarks/peers.py) and read one
JSON line per kernel.

The schedules are the ones a TVM user writes for a memory-bound row kernel on a multicore CPU:
rows in parallel, every stage of a row computed at the row (the row stays in L1), 16-lane
vectors for the elementwise stages, and the two row reductions split by `rfactor` into 16
vector lanes. Softmax is timed with `te.exp` and with `topi.fast_exp` (TVM's polynomial exp),
the elementwise chain y = relu(x * w + b) * 0.5 + x as one parallel, vectorized loop. Each
call is timed on its own (median of RUNS after a warm-up), as the tirc benchmarks time theirs.
Environment and TVM_NUM_THREADS: see benchmarks/tune_tvm.py.

    python benchmarks/peers_tvm.py RUNS softmax ROWS COLS
    python benchmarks/peers_tvm.py RUNS elementwise N
"""

from __future__ import annotations

import json
import os
import sys
import time

FFI = os.environ.get("TVM_FFI_PATH", "/work/scratch/tune/tvm-ffi-0.1.14")
sys.path.insert(0, FFI)
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
import tvm  # noqa: E402
from tvm import (  # noqa: E402
    s_tir,  # noqa: E402
    te,
    topi,
)

LANES = 16


def target() -> tvm.target.Target:
    return tvm.target.Target({"kind": "llvm", "mcpu": os.environ.get("TVM_MCPU", "native"),
                              "num-cores": os.cpu_count() or 1})


def softmax_func(rows: int, cols: int, fast: bool) -> tuple[tvm.tirx.PrimFunc, str]:
    """Softmax as TE stages (row max, exponentials, row sum, scale) and the exponential's
    block name."""
    a = te.placeholder((rows, cols), name="A")
    k1 = te.reduce_axis((0, cols), name="k1")
    mx = te.compute((rows,), lambda i: te.max(a[i, k1], axis=k1), name="mx")
    if fast:  # topi's fast_exp takes a tensor: the difference is inlined by the schedule
        d = te.compute((rows, cols), lambda i, j: a[i, j] - mx[i], name="d")
        e = topi.fast_exp(d)
    else:
        e = te.compute((rows, cols), lambda i, j: te.exp(a[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis((0, cols), name="k2")
    s = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    out = te.compute((rows, cols), lambda i, j: e[i, j] * (1.0 / s[i]), name="out")
    return te.create_prim_func([a, out]).with_attr("global_symbol", "main"), e.op.name


def _row_reduction_lanes(sch: s_tir.Schedule, name: str) -> s_tir.SBlockRV:
    """The row reduction `name` split by rfactor into 16 partial results (one per vector lane):
    returns the block computing the partials."""
    *_, k = sch.get_loops(sch.get_sblock(name))
    _, ki = sch.split(k, [None, LANES])
    return sch.rfactor(ki, factor_axis=0)


def schedule_softmax(func: tvm.tirx.PrimFunc, exp_block: str) -> tvm.IRModule:
    sch = s_tir.Schedule(func)
    if exp_block != "e":
        sch.compute_inline(sch.get_sblock("d"))
    partials = [_row_reduction_lanes(sch, "mx"), _row_reduction_lanes(sch, "s")]
    out = sch.get_sblock("out")
    i, j = sch.get_loops(out)
    sch.parallel(i)
    _, ji = sch.split(j, [None, LANES])
    sch.vectorize(ji)
    for name in ("s", "s_rf", exp_block, "mx", "mx_rf"):
        sch.compute_at(sch.get_sblock(name), i)
    _, ej = sch.get_loops(sch.get_sblock(exp_block))
    _, eji = sch.split(ej, [None, LANES])
    sch.vectorize(eji)
    for rf in partials:  # at the row: the lanes loop (extent 16) innermost, as a vector
        first, second = sch.get_loops(rf)[-2:]
        lanes, outer = (first, second) if int(sch.get(first).extent) == LANES else (second, first)
        sch.reorder(outer, lanes)
        sch.vectorize(lanes)
    return sch.mod


def elementwise_func(n: int) -> tvm.tirx.PrimFunc:
    x, w, b = (te.placeholder((n,), name=name) for name in "XWB")
    y = te.compute((n,), lambda i: te.max(x[i] * w[i] + b[i], 0.0) * 0.5 + x[i], name="Y")
    return te.create_prim_func([x, w, b, y]).with_attr("global_symbol", "main")


def schedule_elementwise(func: tvm.tirx.PrimFunc) -> tvm.IRModule:
    sch = s_tir.Schedule(func)
    (i,) = sch.get_loops(sch.get_sblock("Y"))
    outer, inner, lanes = sch.split(i, [256, None, LANES])
    sch.parallel(outer)
    sch.vectorize(lanes)
    return sch.mod


def time_median(mod: tvm.IRModule, args: list[np.ndarray], runs: int
                ) -> tuple[float, list[np.ndarray]]:
    """Median seconds of `runs` timed calls after a warm-up call, each call timed on its own
    as the tirc benchmarks time theirs, and the outputs."""
    lib = tvm.compile(mod, target=target()).jit()
    dev = tvm.cpu()
    tensors = [tvm.runtime.tensor(arg, dev) for arg in args]
    fn = lib["main"]
    fn(*tensors)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(*tensors)
        dev.sync()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), [t.numpy() for t in tensors]


def main() -> None:
    runs, kind = int(sys.argv[1]), sys.argv[2]
    rng = np.random.default_rng(0)
    if kind == "softmax":
        rows, cols = int(sys.argv[3]), int(sys.argv[4])
        a = rng.standard_normal((rows, cols), dtype=np.float32)
        ref = np.exp(a - a.max(axis=1, keepdims=True))
        ref /= ref.sum(axis=1, keepdims=True)
        for fast in (False, True):
            mod = schedule_softmax(*softmax_func(rows, cols, fast))
            seconds, (_, out) = time_median(mod, [a, np.zeros_like(a)], runs)
            error = float(np.max(np.abs(out - ref)))
            print(json.dumps({"kernel": "fast_exp" if fast else "exp", "seconds": seconds,
                              "max_abs_error": error}), flush=True)
    elif kind == "elementwise":
        n = int(sys.argv[3])
        x, w, b = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
        ref = np.maximum(x * w + b, 0) * np.float32(0.5) + x
        seconds, outs = time_median(schedule_elementwise(elementwise_func(n)),
                                    [x, w, b, np.zeros_like(x)], runs)
        print(json.dumps({"kernel": "fused_chain", "seconds": seconds,
                          "max_abs_error": float(np.max(np.abs(outs[3] - ref)))}), flush=True)
    else:
        raise SystemExit(f"unknown kernel {kind!r}: softmax or elementwise")


if __name__ == "__main__":
    main()
