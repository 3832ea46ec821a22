"""What `--emit` can produce, and the adapter to the backends for everything but `.tir` text."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.module import IRModule

# Output kind -> file suffix; `-o` with one of these suffixes chooses the kind.
EMIT_SUFFIXES = {
    "tir": ".tir",
    "ll": ".ll",
    "asm": ".s",
    "obj": ".o",
    "so": ".so",
    "h": ".h",
    "ptx": ".ptx",
    "cubin": ".cubin",
}
BINARY_KINDS = ("obj", "so", "cubin")


def kind_from_output(output: str | None) -> str | None:
    """The emit kind a `-o` path implies by its suffix (None when it implies none)."""
    if output is None or output == "-":
        return None
    suffix = Path(output).suffix
    for kind, known in EMIT_SUFFIXES.items():
        if suffix == known:
            return kind
    return None


def emit(mod: IRModule, kind: str, target: Any, opt_level: int,
         output: str | None = None, libs: tuple[str, ...] = (),
         lib_dirs: tuple[str, ...] = (), names: Any = None, phases: Any = None) -> str | bytes:
    """The module as `kind`: printed `.tir` here, everything else from tirc.backends.emit.

    `output` (None for stdout) is passed on as `out_path` when the backend takes it: it names
    things after the output file (a header's guard), and the backend may write it too.
    `libs`/`lib_dirs` (`-l`/`-L`) go to the linker of a shared object; `names` (an
    ExportNames) chooses the exported C names.
    """
    if kind == "tir":
        from tirc.ir.printer import print_module  # a compile to a library does not print

        return print_module(mod)
    import tirc.backends as backends

    backend_emit = getattr(backends, "emit", None)
    if backend_emit is None:
        raise CompileError(f"--emit {kind} is not supported yet")
    extra: dict[str, Any] = {}
    if output is not None and "out_path" in inspect.signature(backend_emit).parameters:
        extra["out_path"] = output
    if libs or lib_dirs:
        extra.update(libs=tuple(libs), lib_dirs=tuple(lib_dirs))
    taken = inspect.signature(backend_emit).parameters
    if names is not None and "names" in taken:
        extra["names"] = names
    if phases is not None and "phases" in taken:
        extra["phases"] = phases
    if "write" in taken:
        extra["write"] = False  # the command writes the output itself (cli/output_file.py)
    try:
        return backend_emit(mod, kind, target, opt_level, **extra)
    except NotImplementedError as exc:
        detail = f" ({exc})" if str(exc) else ""
        raise CompileError(f"--emit {kind} is not supported yet{detail}") from None
