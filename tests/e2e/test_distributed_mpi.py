"""Multi-device programs on real MPI processes (MPICH from `tirc[mpi]`, over shared memory):
every sample compiled for meshes of 1, 2 and 4 devices, run by `mpiexec -n N` (4 ranks
oversubscribe the machine), equals the single-process build and NumPy. Each run is under a
timeout, so a hang is a failure. A 2x2 mesh and an uneven split (3 devices) run too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from script_modules import distributed_sample_references, load_script
from tirc.cli.compile_cmd import CompileOptions, compile_file
from tirc.runtime.ccl_shim import build_mpi_shim, find_mpicc, find_mpiexec
from tirc.runtime.launch import mpiexec_command

REFS = distributed_sample_references()
WORKER = Path(__file__).with_name("mpi_worker.py")
bfloat16 = load_script("tirc_mpi_worker", WORKER).bfloat16
TIMEOUT = 240
OPT = {"mlp_tp": 1, "sequence_softmax": 1, "transformer_block_tp": 0}
MESHES = {"mlp_tp": (1, 2, 4), "sequence_softmax": (1, 2, 3), "transformer_block_tp": (2, 4)}
GRID = '''# A 2x2 mesh: rows split over d0, columns over d1; the row sums reduce over d1 only.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    I.module_global_infos({"mesh": [R.device_mesh((2, 2), I.Range(0, 4))]})

    @R.function
    def main(x: R.DTensor((6, 10), "float32", "mesh[0]", "S[0], S[1]"),
             w: R.DTensor((10, 4), "float32", "mesh[0]", "R, S[0]")):
        with R.dataflow():
            y = R.matmul(x, w)
            t = R.permute_dims(x, axes=[1, 0])
            s = R.nn.softmax(t, axis=0)
            R.output(y, s)
        return (y, s)
'''

DATA_PARALLEL = '''# Data parallelism over a symbolic batch: rows of x split (5 rows: 3 + 2),
# w whole; the column sums are partial sums completed by an all-reduce.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})

    @R.function
    def main(x: R.DTensor(("n", 8), "float32", "mesh[0]", "S[0]"), w: R.Tensor((8, 3), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            s = R.sum(y, axis=[0])
            R.output(y, s)
        return (y, s)
'''

HALF = '''# float16 and bfloat16 partial sums: MPI has no such types; the shim reduces them
# with its own operations.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    I.module_global_infos({"mesh": [R.device_mesh((2,), I.Range(0, 2))]})

    @R.function
    def main(x: R.DTensor((4, 6), "float16", "mesh[0]", "S[1]"),
             w: R.DTensor((6, 3), "float16", "mesh[0]", "S[0]"),
             b: R.DTensor((4, 6), "bfloat16", "mesh[0]", "S[1]")):
        with R.dataflow():
            y = R.matmul(x, w)
            s = R.sum(b, axis=[1])
            R.output(y, s)
        return (y, s)
'''

pytestmark = pytest.mark.skipif(find_mpicc() is None or find_mpiexec() is None,
                                reason="no MPI installed (pip install 'tirc[mpi]')")


def _grid_reference(x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    t = x.T.astype(np.float64)
    e = np.exp(t - t.max(axis=0, keepdims=True))
    return [(x.astype(np.float64) @ w).astype(np.float32),
            (e / e.sum(axis=0, keepdims=True)).astype(np.float32)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every library, its inputs and NumPy's outputs; the shim built once."""
    tmp = tmp_path_factory.mktemp("dist")
    build_mpi_shim()
    cases: dict[str, Any] = {}
    for name, sizes in MESHES.items():
        sample = REFS.BY_NAME[name]
        inputs = sample.make_inputs(sample.sizes, np.random.default_rng(0))
        np.savez(tmp / f"{name}.in.npz", *inputs)
        for n in sizes:
            lib = tmp / f"{name}_{n}.so"
            compile_file(CompileOptions(file=str(sample.path), output=str(lib), mesh=str(n),
                                        opt_level=OPT[name]))
            cases[f"{name}_{n}"] = {"lib": lib, "func": sample.func, "ranks": n,
                                    "inputs": tmp / f"{name}.in.npz",
                                    "want": sample.reference(*inputs)}
    dp = tmp / "dp.tir"
    dp.write_text(DATA_PARALLEL)
    rng = np.random.default_rng(2)
    xd, wd = rng.standard_normal((5, 8)).astype("float32"), rng.standard_normal((8, 3)).astype(
        "float32")
    np.savez(tmp / "dp.in.npz", xd, wd)
    compile_file(CompileOptions(file=str(dp), output=str(tmp / "dp.so"), opt_level=1))
    yd = np.maximum(xd.astype(np.float64) @ wd, 0)
    cases["dp"] = {"lib": tmp / "dp.so", "func": "main", "ranks": 2, "inputs": tmp / "dp.in.npz",
                   "want": [yd.astype(np.float32), yd.sum(axis=0).astype(np.float32)]}
    half = tmp / "half.tir"
    half.write_text(HALF)
    import ml_dtypes

    xh = rng.uniform(-1, 1, (4, 6)).astype(np.float16)
    wh = rng.uniform(-1, 1, (6, 3)).astype(np.float16)
    bh = rng.uniform(-1, 1, (4, 6)).astype(ml_dtypes.bfloat16)
    np.savez(tmp / "half.in.npz", xh, wh, bh)
    compile_file(CompileOptions(file=str(half), output=str(tmp / "half.so"), opt_level=1))
    cases["half"] = {"lib": tmp / "half.so", "func": "main", "ranks": 2,
                     "inputs": tmp / "half.in.npz", "tolerance": 2e-2,
                     "want": [(xh.astype(np.float32) @ wh.astype(np.float32)).astype(np.float16),
                              bh.astype(np.float32).sum(axis=1).astype(ml_dtypes.bfloat16)]}
    grid = tmp / "grid.tir"
    grid.write_text(GRID)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((6, 10)).astype("float32"), rng.standard_normal((10, 4)).astype(
        "float32")
    np.savez(tmp / "grid.in.npz", x, w)
    compile_file(CompileOptions(file=str(grid), output=str(tmp / "grid.so"), opt_level=1))
    cases["grid"] = {"lib": tmp / "grid.so", "func": "main", "ranks": 4,
                     "inputs": tmp / "grid.in.npz", "want": _grid_reference(x, w)}
    return {"tmp": tmp, "cases": cases}


def _run(built: dict[str, Any], ranks: int, modes: tuple[str, ...]) -> list[tuple[str, str]]:
    """Run every case for `ranks` ranks in one MPI job; (case, mode) pairs that ran."""
    tmp = built["tmp"]
    jobs, ran = [], []
    for key, case in built["cases"].items():
        if case["ranks"] != ranks:
            continue
        for mode in modes:
            jobs.append({"lib": str(case["lib"]), "func": case["func"],
                         "inputs": str(case["inputs"]), "mode": mode,
                         "out": str(tmp / f"{key}.{mode}")})
            ran.append((key, mode))
    spec = tmp / f"jobs{ranks}.json"
    spec.write_text(json.dumps(jobs))
    cmd = ["timeout", "-k", "10", str(TIMEOUT),
           *mpiexec_command(ranks, [sys.executable, str(WORKER), str(spec)])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT + 30,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n" \
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return ran


def _check(built: dict[str, Any], key: str, mode: str, ranks: int) -> None:
    """Every rank's gathered results equal NumPy's."""
    want = built["cases"][key]["want"]
    tol = built["cases"][key].get("tolerance", 1e-4)
    for r in range(ranks):
        got = np.load(built["tmp"] / f"{key}.{mode}.rank{r}.npz", allow_pickle=False)
        outs = [bfloat16(got[f"arr_{k}"]) for k in range(len(got.files))]
        assert len(outs) == len(want)
        for g, w in zip(outs, want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=tol,
                                       atol=tol, err_msg=f"{key} rank {r}")


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_samples_on_mpi_ranks(built: dict[str, Any], ranks: int) -> None:
    ran = _run(built, ranks, ("all", "root", "local"))
    assert ran
    for key, mode in ran:
        if mode != "local":
            _check(built, key, mode, ranks)
    for key in {k for k, _ in ran}:
        _local_matches_global(built, key, ranks)


def _local_matches_global(built: dict[str, Any], key: str, ranks: int) -> None:
    """Each rank's local results are its parts of the gathered ones."""
    case = built["cases"][key]
    meta = next(f for f in _metadata(case["lib"]) if f["name"] == case["func"])
    view = meta["sharding"]
    for r in range(ranks):
        local = np.load(built["tmp"] / f"{key}.local.rank{r}.npz")
        whole = np.load(built["tmp"] / f"{key}.all.rank{r}.npz")
        coords = np.unravel_index(r, view["mesh"])
        for k, placement in enumerate(view["results"]):
            part = bfloat16(whole[f"arr_{k}"])
            for axis, item in enumerate(p.strip() for p in placement.split(",")):
                if item.startswith("S["):
                    part = np.array_split(part, view["mesh"][axis],
                                          axis=int(item[2:-1]))[coords[axis]]
            np.testing.assert_array_equal(bfloat16(local[f"arr_{k}"]), part)


def _metadata(lib: Path) -> list[dict[str, Any]]:
    """The functions' metadata, read without loading the library's collectives."""
    out = subprocess.run([sys.executable, "-c", "import ctypes, sys; "
                          "from tirc.runtime.ccl_shim import mpi_shim; mpi_shim(); "
                          "l = ctypes.CDLL(sys.argv[1]); f = l.tirc_metadata; "
                          "f.restype = ctypes.c_char_p; print(f().decode())", str(lib)],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)["functions"]


def test_single_process_build_equals_the_ranks(built: dict[str, Any]) -> None:
    """The 1-device build runs without MPI in this process and equals NumPy; the multi-rank
    runs above equal NumPy, so they equal it too."""
    import tirc.runtime as rt

    for case in built["cases"].values():
        if case["ranks"] != 1:
            continue
        lib = rt.load(case["lib"])
        data = np.load(case["inputs"])
        out = lib[case["func"]](*(bfloat16(data[f"arr_{k}"]) for k in range(len(data.files))))
        outs = out if isinstance(out, tuple) else (out,)
        for g, w in zip(outs, case["want"]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_tirc_run_with_ranks(built: dict[str, Any]) -> None:
    lib = str(built["cases"]["mlp_tp_2"]["lib"])
    cmd = ["timeout", "-k", "10", str(TIMEOUT), sys.executable, "-m", "tirc.cli.main", "run",
           "--ranks", "2", lib, "main", "--random", "--dim", "n=3", "--repeat", "2"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT + 30)
    assert proc.returncode == 0, proc.stderr
    assert "on rank 0 of 2 (mesh 2)" in proc.stdout
    assert "2 calls: median" in proc.stdout and "y: float32[3, 256]" in proc.stdout
    alone = subprocess.run([sys.executable, "-m", "tirc.cli.main", "run", lib, "main",
                            "--random", "--dim", "n=3"], capture_output=True, text=True,
                           timeout=TIMEOUT)
    assert alone.returncode == 1
    assert "was compiled for several devices: run it with --ranks N" in alone.stderr
    k = cmd.index("--ranks")
    wrong = subprocess.run(cmd[:k + 1] + ["3"] + cmd[k + 2:], capture_output=True, text=True,
                           timeout=TIMEOUT + 30)
    assert wrong.returncode != 0
    assert "main was compiled for a mesh of 2 devices but runs on 3 processes" in wrong.stderr


DISCO = '''# A per-device program as TVM's disco writes one: collectives over all processes.
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), "float32")):
        with R.dataflow():
            a = R.ccl.allreduce(x, "sum")
            g = R.ccl.allgather(x, num_workers=2)
            b = R.ccl.broadcast_from_worker0(x)
            s = R.ccl.scatter_from_worker0(x, num_workers=2, axis=1)
            R.output(a, g, b, s)
        return (a, g, b, s)
'''

DISCO_WORKER = """
import sys
import numpy as np
import tirc.runtime.distributed as dist
lib = dist.load(sys.argv[1])
x = np.arange(24, dtype="float32").reshape(4, 6) + 100 * lib.rank
out = lib["main"](x)
np.savez(sys.argv[2] + f".rank{lib.rank}.npz", *out)
"""


def test_tvm_disco_collectives_over_every_process(tmp_path: Path) -> None:
    src = tmp_path / "disco.tir"
    src.write_text(DISCO)
    lib = tmp_path / "disco.so"
    compile_file(CompileOptions(file=str(src), output=str(lib), opt_level=1))
    cmd = ["timeout", "-k", "10", str(TIMEOUT), *mpiexec_command(2, [
        sys.executable, "-c", DISCO_WORKER, str(lib), str(tmp_path / "out")])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT + 30)
    assert proc.returncode == 0, proc.stderr[-3000:]
    xs = [np.arange(24, dtype="float32").reshape(4, 6) + 100 * r for r in range(2)]
    for r in range(2):
        got = np.load(tmp_path / f"out.rank{r}.npz")
        a, g, b, s = (got[f"arr_{k}"] for k in range(4))
        np.testing.assert_array_equal(a, xs[0] + xs[1])
        np.testing.assert_array_equal(g, np.concatenate(xs, axis=0))
        np.testing.assert_array_equal(b, xs[0])
        np.testing.assert_array_equal(s, xs[0][:, 3 * r:3 * r + 3])
