"""Linking object code into a shared object with the system C compiler, and atomic writes.

`cc -shared` (or `$CC`, which may hold extra words such as `ccache gcc`) links the object,
through the gold linker when `$CC` is not set and the system has one (a quarter faster than
the default linker on a small library; the default linker is used when gold refuses);
`-fopenmp` adds the OpenMP runtime (libgomp with gcc) when a parallel loop needs it. Libraries
of external functions (`-l NAME -L DIR`) are linked with DIR as a run path, so the library finds
them when loaded; each external function the code calls must be defined by one of them
(`--require-defined`), or linking fails with a message naming it. The result is written to a
temporary file in the destination folder and renamed into place, so a reader never sees a
half-written library.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from tirc.ir.diagnostics import CompileError


def c_compiler() -> list[str]:
    """The C compiler command: `$CC` split into words, or `cc`."""
    return shlex.split(os.environ.get("CC", "") or "cc")


@cache
def _gold_available() -> bool:
    """Whether the system has the gold linker (looked up once per process)."""
    return shutil.which("ld.gold") is not None


def _faster_linker(externs: tuple[str, ...]) -> list[str]:
    """`-fuse-ld=gold` when tirc chooses the C compiler (no `$CC`) and gold can do the link
    (it lacks `--require-defined`, which external functions need); else nothing."""
    if os.environ.get("CC") or externs or not _gold_available():
        return []
    return ["-fuse-ld=gold"]


def write_atomic(path: str | Path, data: bytes, executable: bool = False) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename, with
    the permissions a new file gets (the umask applied; `executable` adds the x bits). A path
    that exists and is not a regular file (`/dev/null`, a named pipe) is written in place:
    renaming over it would replace the device."""
    path = Path(path)
    if path.exists() and not path.is_file():
        with open(path, "wb") as special:
            special.write(data)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, (0o777 if executable else 0o666) & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _link_problem(stderr: str, externs: tuple[str, ...], libs: tuple[str, ...],
                  dirs: list[str]) -> str | None:
    """A clear message for a library that is not found or an external function that no
    library defines; None for other linker failures."""
    absent = re.findall(r"cannot find -l(\S+?):? ", stderr)
    if absent:
        searched = " ".join(f"-L{d}" for d in dirs) if dirs else "no -L folder"
        return (f"library {', '.join(f'-l{a}' for a in absent)} not found (searched "
                f"{searched} and the system's folders)")
    missing = [s for s in externs
               if re.search(rf"required symbol [`'\"]?{re.escape(s)}\b", stderr)]
    if not missing:
        return None
    names = ", ".join(f"'{s}'" for s in missing)
    what = f"external function{'s' if len(missing) > 1 else ''} {names} (R.call_dps_packed)"
    if not libs:
        return (f"{what}: no library defines it; link the library that does with "
                "-l NAME -L DIR")
    return f"{what}: not defined by {' '.join(f'-l{lib}' for lib in libs)}"


def link_shared(obj: bytes, out_path: str | Path | None = None, openmp: bool = False,
                libs: tuple[str, ...] = (), lib_dirs: tuple[str, ...] = (),
                externs: tuple[str, ...] = ()) -> bytes:
    """Link one object file into a shared object; returns its bytes, and writes them to
    `out_path` (atomically) when given. `libs`/`lib_dirs` are `-l`/`-L` (each dir also a run
    path); `externs` are the external functions the object calls, which they must define."""
    cc = c_compiler()
    with tempfile.TemporaryDirectory(prefix="tirc-link-") as tmp:
        obj_path = Path(tmp) / "module.o"
        obj_path.write_bytes(obj)
        so_path = Path(tmp) / "module.so"
        # -Bsymbolic: the library's references to its own exports bind within it, never to a
        # same-named function of another tirc library loaded first.
        cmd = [*cc, "-shared", "-Wl,-Bsymbolic", "-o", str(so_path), str(obj_path)]
        dirs = [str(Path(d).resolve()) for d in lib_dirs]
        cmd += [f"-L{d}" for d in dirs] + [f"-Wl,-rpath,{d}" for d in dirs]
        cmd += [f"-l{lib}" for lib in libs]
        cmd += [f"-Wl,--require-defined={s}" for s in externs]
        if openmp:
            cmd.append("-fopenmp")
        cmd.append("-lm")
        faster = _faster_linker(externs)
        try:
            proc = subprocess.run([*cmd, *faster], capture_output=True, text=True, check=False)
            if proc.returncode != 0 and faster:
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise CompileError(f"cannot run the C compiler '{cc[0]}' to link: {exc.strerror} "
                               "(set $CC to a C compiler)") from None
        if proc.returncode != 0:
            clear = _link_problem(proc.stderr, externs, libs, dirs)
            if clear is not None:
                raise CompileError(f"linking failed: {clear}")
            raise CompileError(f"linking failed: {shlex.join(cmd)}\n{proc.stderr.strip()}")
        data = so_path.read_bytes()
    if out_path is not None:
        write_atomic(out_path, data, executable=True)
    return data
