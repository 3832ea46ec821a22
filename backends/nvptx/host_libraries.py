"""The C libraries a GPU launch plan's host steps call (`R.call_dps_packed`): `-l`/`-L` as
recorded in the PTX metadata, checked at compile time by a trial link that must find every
external function in them (the runtime loads them itself: tirc.runtime.cuda)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tirc.backends.link import _link_problem, c_compiler
from tirc.ir.diagnostics import CompileError


def library_metadata(symbols: list[str], libs: tuple[str, ...],
                     lib_dirs: tuple[str, ...]) -> dict[str, Any]:
    """`{"names": [...], "dirs": [...]}` (absolute folders), after checking with the C linker
    that the libraries exist and define every symbol in `symbols`."""
    dirs = [str(Path(d).resolve()) for d in lib_dirs]
    if symbols:
        check_symbols(symbols, libs, dirs)
    return {"names": list(libs), "dirs": dirs}


def check_symbols(symbols: list[str], libs: tuple[str, ...], dirs: list[str]) -> None:
    """A CompileError unless linking `-l` libs from `dirs` defines every symbol."""
    if not libs:
        names = ", ".join(f"'{s}'" for s in symbols)
        raise CompileError(f"external function {names} (R.call_dps_packed) runs on the host "
                           "between the kernels: no library defines it; give the library "
                           "that does with -l NAME -L DIR")
    cc = c_compiler()
    with tempfile.TemporaryDirectory(prefix="tirc-libcheck-") as tmp:
        cmd = [*cc, "-shared", "-o", str(Path(tmp) / "check.so"), *(f"-L{d}" for d in dirs),
               "-Wl,--no-as-needed", *(f"-l{lib}" for lib in libs),
               *(f"-Wl,--require-defined={s}" for s in symbols)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise CompileError(f"cannot run the C compiler '{cc[0]}' to check the libraries: "
                               f"{exc.strerror} (set $CC to a C compiler)") from None
    if proc.returncode != 0:
        clear = _link_problem(proc.stderr, tuple(symbols), libs, dirs)
        raise CompileError(f"checking the host libraries failed: "
                           f"{clear or proc.stderr.strip()}")
