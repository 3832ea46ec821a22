"""Starting N processes on this machine with the installed MPI's launcher (`mpiexec -n N`).

MPICH's launcher (hydra) runs more ranks than cores as they are; Open MPI's refuses unless
told `--oversubscribe`, and refuses to run as root without `--allow-run-as-root`, and passes
only the environment variables it is told to (`-x NAME`). `mpiexec_command` adds what the
installed flavour needs, so tests and `tirc run --ranks` work with either.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache

from tirc.runtime.ccl_shim import find_mpiexec
from tirc.runtime.errors import TircError

FORWARDED = ("TIRC_CACHE_DIR", "TIRC_MPICC", "TIRC_MPIEXEC", "OMP_NUM_THREADS", "PYTHONPATH")


@lru_cache(maxsize=4)
def flavour(mpiexec: str) -> str:
    """"openmpi", "mpich" or "other", from the launcher's `--version`."""
    try:
        proc = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "other"
    text = proc.stdout + proc.stderr
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        return "mpich"
    return "other"


def mpiexec_command(ranks: int, argv: list[str], mpiexec: str | None = None) -> list[str]:
    """The command that runs `argv` as `ranks` processes on this machine."""
    mpiexec = mpiexec or find_mpiexec()
    if mpiexec is None:
        raise TircError("no MPI launcher (mpiexec) found: pip install 'tirc[mpi]' installs "
                        "MPICH, or set TIRC_MPIEXEC")
    cmd = [mpiexec, "-n", str(ranks)]
    if flavour(mpiexec) == "openmpi":
        cmd.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        for name in FORWARDED:
            if name in os.environ:
                cmd += ["-x", name]
    return cmd + list(argv)
