"""One rank of a multi-process test (run under mpiexec by test_distributed_mpi.py).

Reads a JSON list of jobs: {"lib", "func", "inputs" (.npz of global arrays), "out" (a path
prefix), "mode"}. Mode "all": every rank passes the global arrays (scatter) and gets global
results (gather); "root": only rank 0 passes them, the others pass None; "local": each rank
cuts its own shards with numpy's array_split and keeps its local results. Results are saved
as OUT.rank<R>.npz.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import tirc.runtime.distributed as dist


def bfloat16(a: np.ndarray) -> np.ndarray:
    """.npz files keep bfloat16 arrays as 2-byte voids: view them as bfloat16 again."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        import ml_dtypes

        return a.view(ml_dtypes.bfloat16)
    return a


def local_part(array: np.ndarray, placement: str, mesh: list[int], coords: tuple[int, ...],
               ) -> np.ndarray:
    for axis, item in enumerate(p.strip() for p in placement.split(",")):
        if item.startswith("S["):
            d = int(item[2:-1])
            array = np.array_split(array, mesh[axis], axis=d)[coords[axis]]
    return np.ascontiguousarray(array)


def main() -> None:
    jobs = json.loads(open(sys.argv[1]).read())
    for job in jobs:
        lib = dist.load(job["lib"])
        fn = lib[job["func"]]
        data = np.load(job["inputs"])
        args = [bfloat16(data[f"arr_{k}"]) for k in range(len(data.files))]
        if job["mode"] == "local":
            view = fn.view
            args = [local_part(a, p, view["mesh"], fn.mesh.coords)
                    for a, p in zip(args, view["params"])]
            out = fn(*args)
        else:
            if job["mode"] == "root" and lib.rank != 0:
                args = [None] * len(args)
            out = fn(*args, scatter=True, gather=True)
        outs = out if isinstance(out, tuple) else (out,)
        np.savez(f"{job['out']}.rank{lib.rank}.npz", *outs)


if __name__ == "__main__":
    main()
