"""MetaSchedule (Apache TVM 0.27) on the workloads of benchmarks/tune.py, run in its own
environment: never a tirc dependency. benchmarks/tune.py starts this script with the TVM
environment's Python; it prints one JSON line per result.

The environment (see benchmarks/tune.py --help):
    python3 -m venv /work/scratch/tune/tvm-venv
    /work/scratch/tune/tvm-venv/bin/pip install apache-tvm==0.27.0.post1 cloudpickle psutil xgboost
    /work/scratch/tune/tvm-venv/bin/pip install --target /work/scratch/tune/tvm-ffi-0.1.14 \\
        apache-tvm-ffi==0.1.14.post0
apache-tvm-ffi 0.1.15 segfaults in any IR JSON serialisation, which MetaSchedule's database
does; 0.1.14.post0, put first on sys.path (TVM_FFI_PATH), works. TVM's thread pool uses one
thread on a 2-core machine unless TVM_NUM_THREADS is set before `import tvm`.

    python benchmarks/tune_tvm.py tune WORKLOAD SECONDS WORKDIR   # MetaSchedule for SECONDS
    python benchmarks/tune_tvm.py best WORKLOAD WORKDIR           # build the best, time it

`tune` runs MetaSchedule with an unbounded trial count and is stopped by its parent after the
time; `best` compiles the best record in WORKDIR's database and prints its median time.
"""

from __future__ import annotations

import json
import os
import sys
import time

FFI = os.environ.get("TVM_FFI_PATH", "/work/scratch/tune/tvm-ffi-0.1.14")
sys.path.insert(0, FFI)
# MetaSchedule's builders and runners are child processes: they need the same tvm-ffi first
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (FFI, os.environ.get("PYTHONPATH")) if p)
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
import tvm  # noqa: E402
from tvm import te, tirx  # noqa: E402
from tvm.s_tir import meta_schedule as ms  # noqa: E402


def matmul(m: int, n: int, k: int, batch: int = 0):
    shape_a = (batch, m, k) if batch else (m, k)
    shape_b = (batch, k, n) if batch else (k, n)
    a = te.placeholder(shape_a, name="A")
    b = te.placeholder(shape_b, name="B")
    r = te.reduce_axis((0, k), name="k")
    if batch:
        c = te.compute((batch, m, n), lambda q, i, j: te.sum(a[q, i, r] * b[q, r, j], axis=r),
                       name="C")
    else:
        c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return [a, b, c]


def conv2d(n: int, c: int, f: int, hw: int):
    x = te.placeholder((n, c, hw, hw), name="X")
    w = te.placeholder((f, c, 3, 3), name="W")
    pad = te.compute((n, c, hw + 2, hw + 2), lambda b, ch, h, v: tirx.if_then_else(
        tirx.all(h >= 1, h <= hw, v >= 1, v <= hw), x[b, ch, h - 1, v - 1], 0.0), name="pad")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    y = te.compute((n, f, hw, hw), lambda b, o, h, v: te.sum(
        pad[b, rc, h + ry, v + rx] * w[o, rc, ry, rx], axis=[rc, ry, rx]), name="Y")
    return [x, w, y]


def softmax(m: int, n: int):
    a = te.placeholder((m, n), name="A")
    k1 = te.reduce_axis((0, n), name="k1")
    mx = te.compute((m,), lambda i: te.max(a[i, k1], axis=k1), name="mx")
    e = te.compute((m, n), lambda i, j: te.exp(a[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis((0, n), name="k2")
    s = te.compute((m,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    out = te.compute((m, n), lambda i, j: e[i, j] / s[i], name="out")
    return [a, out]


def layer_norm(m: int, n: int):
    x = te.placeholder((m, n), name="X")
    g = te.placeholder((n,), name="gamma")
    b = te.placeholder((n,), name="beta")
    k1 = te.reduce_axis((0, n), name="k1")  # a reduction must be a compute's whole value
    total = te.compute((m,), lambda i: te.sum(x[i, k1], axis=k1), name="total")
    k2 = te.reduce_axis((0, n), name="k2")
    sq = te.compute((m,), lambda i: te.sum((x[i, k2] - total[i] / n) * (x[i, k2] - total[i] / n),
                                           axis=k2), name="sq")
    out = te.compute((m, n), lambda i, j: (x[i, j] - total[i] / n) / te.sqrt(sq[i] / n + 1e-5)
                     * g[j] + b[j], name="out")
    return [x, g, b, out]


def mlp(m: int, d: int, h: int):
    x = te.placeholder((m, d), name="x")
    w1 = te.placeholder((d, h), name="w1")
    b1 = te.placeholder((h,), name="b1")
    w2 = te.placeholder((h, d), name="w2")
    b2 = te.placeholder((d,), name="b2")
    k1 = te.reduce_axis((0, d), name="k1")
    mm1 = te.compute((m, h), lambda i, j: te.sum(x[i, k1] * w1[k1, j], axis=k1), name="mm1")
    act = te.compute((m, h), lambda i, j: te.max(mm1[i, j] + b1[j], 0.0), name="act")
    k2 = te.reduce_axis((0, h), name="k2")
    mm2 = te.compute((m, d), lambda i, j: te.sum(act[i, k2] * w2[k2, j], axis=k2), name="mm2")
    out = te.compute((m, d), lambda i, j: mm2[i, j] + b2[j], name="out")
    return [x, w1, b1, w2, b2, out]


def workload(name: str, spec: dict) -> tuple[tvm.IRModule, list[tuple[int, ...]]]:
    """The workload as a module with one PrimFunc "main", and its parameters' shapes."""
    builders = {"matmul": matmul, "conv2d": conv2d, "softmax": softmax,
                "layer_norm": layer_norm, "mlp": mlp}
    tensors = builders[spec["kind"]](**spec["args"])
    func = te.create_prim_func(tensors).with_attr("global_symbol", "main")
    return tvm.IRModule({"main": func}), [tuple(int(d) for d in t.shape) for t in tensors]


def target() -> tvm.target.Target:
    return tvm.target.Target({"kind": "llvm", "mcpu": os.environ.get("TVM_MCPU", "native"),
                              "num-cores": os.cpu_count() or 1})


def _import_intrinsics() -> None:
    """Each builder process imports TVM's tensor intrinsics once, when it starts: the default
    build function imports them on its first job, which takes longer than the build timeout
    on a loaded 2-core machine (the worker is killed and starts over, and no build finishes)."""
    import tvm.s_tir.tensor_intrin  # noqa: F401


def tune(spec: dict, workdir: str) -> None:
    mod, _ = workload(spec["name"], spec)
    builder = ms.builder.LocalBuilder(timeout_sec=120.0, initializer=_import_intrinsics)
    ms.tune_tir(mod, target(), workdir, max_trials_global=100000, num_trials_per_iter=16,
                builder=builder, cost_model="xgb")


def best(spec: dict, workdir: str) -> None:
    mod, shapes = workload(spec["name"], spec)
    database = ms.database.JSONDatabase(work_dir=workdir)
    sch = ms.tir_integration.compile_tir(database, mod, target())
    if sch is None:
        print(json.dumps({"status": "no record"}))
        return
    lib = tvm.compile(sch.mod, target=target()).jit()
    dev = tvm.cpu()
    rng = np.random.default_rng(0)
    args = [tvm.runtime.tensor(rng.uniform(-1, 1, shape).astype("float32"), dev)
            for shape in shapes]
    timer = lib.time_evaluator("main", dev, number=1, repeat=1, min_repeat_ms=50)
    times = [timer(*args).mean for _ in range(7)]
    print(json.dumps({"status": "ok", "seconds": float(np.median(times)),
                      "trials": len(database)}))


def main() -> None:
    op, spec_text = sys.argv[1], sys.argv[2]
    spec = json.loads(spec_text)
    if op == "tune":
        start = time.time()
        tune(spec, sys.argv[3])
        print(json.dumps({"status": "finished", "seconds": time.time() - start}))
    else:
        best(spec, sys.argv[3])


if __name__ == "__main__":
    main()
