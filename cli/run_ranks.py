"""`tirc run --ranks N LIB FUNC ...`: the same command as N processes under mpiexec.

The parent builds the MPI shim once (so the ranks do not race to), then runs
`mpiexec -n N python -m tirc.cli.main run LIB FUNC ...` (the flags the installed MPI needs
added by tirc.runtime.launch) with TIRC_RANKS=N set, and exits with its status. Each rank
loads the library through tirc.runtime.distributed (its mesh coordinates filled in, its
inputs its own shards); rank 0 prints the signature, the timings (the slowest rank's) and
the outputs of its shard.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import click

RANKS_ENV = "TIRC_RANKS"
MPI_RANK_ENVS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", RANKS_ENV)


def _without_ranks(argv: list[str]) -> list[str]:
    """The command line without its --ranks option."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--ranks":
            skip = True
        elif not a.startswith("--ranks="):
            out.append(a)
    return out


def launch_ranks(ranks: int) -> None:
    """Run this `tirc run` command again as `ranks` processes; exit with their status."""
    from tirc.cli.diagnostics_output import fail
    from tirc.runtime.ccl_shim import build_mpi_shim
    from tirc.runtime.errors import TircError
    from tirc.runtime.launch import mpiexec_command

    try:
        build_mpi_shim()
        cmd = mpiexec_command(ranks, [sys.executable, "-m", "tirc.cli.main",
                                      *_without_ranks(sys.argv[1:])])
    except TircError as exc:
        raise fail(str(exc)) from None
    env = dict(os.environ, **{RANKS_ENV: str(ranks)})
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // ranks)))
    code = subprocess.call(cmd, env=env)
    if code != 0:
        raise click.exceptions.Exit(code)


def under_mpi() -> bool:
    """True in a process started by mpiexec (or by launch_ranks)."""
    return any(name in os.environ for name in MPI_RANK_ENVS)


def load_function(library: str, function: str) -> Any:
    """The function to call: through the distributed runtime under mpiexec, else plainly."""
    import tirc.runtime as rt

    if under_mpi():
        import tirc.runtime.distributed as dist

        return dist.load(library)[function]
    try:
        return rt.load(library)[function]
    except rt.TircError as exc:
        if "undefined symbol: tirc_ccl_" in str(exc):
            raise rt.TircError(f"the library {library} was compiled for several devices: run "
                               "it with --ranks N (or under mpiexec)") from None
        raise


def report_rank(fn: Any) -> bool:
    """Whether this process prints (rank 0, or a plain run)."""
    shim = getattr(fn, "shim", None)
    return shim is None or shim.rank == 0
