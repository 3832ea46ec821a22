"""tirc.backends: turn a lowered IRModule into LLVM IR, assembly, objects, shared objects or a
C header (`emit`), choosing the kind from the output file's suffix (`kind_for_path`).

A backend only renders: it takes the IR the default pipeline ends with (tirc.passes.pipeline)
and raises NotLoweredError, naming the missing step, for IR that is not lowered that far.
tirc.driver lowers and renders in one call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tirc.backends.phases import NO_PHASES, Phases
from tirc.backends.symbols import ExportNames, library_name_from_path
from tirc.ir.attrs import ENTRY
from tirc.ir.deep_call import deep
from tirc.ir.diagnostics import CompileError
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.prim_call import INTERNAL
from tirc.ir.visitor import remembered_walks

EMIT_KINDS = ("ll", "asm", "obj", "so", "h", "ptx", "cubin")
SUFFIX_KINDS = {".ll": "ll", ".s": "asm", ".o": "obj", ".so": "so", ".h": "h", ".ptx": "ptx",
                ".cubin": "cubin"}
GPU_KINDS = ("ptx", "cubin")


def kind_for_path(path: str | Path) -> str | None:
    """The emit kind an output file name implies (`.so`, `.o`, `.ll`, `.s`, `.h`), if any."""
    return SUFFIX_KINDS.get(Path(path).suffix)


class NotLoweredError(CompileError):
    """IR given to a backend before the pipeline step that backend needs has run; `what` says
    where (the command line words its own message from it)."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(message)
        self.what = what


def not_lowered(backend: str, what: str, step: str) -> NotLoweredError:
    """The error for IR that lacks pipeline step `step` (`what` says where)."""
    return NotLoweredError(f"the {backend} backend renders lowered IR only: {what} (missing "
                           f"step: {step}); lower the module with the default pipeline first "
                           f"(tirc.driver.lower, or tirc without --passes), or add '{step}' to "
                           f"--passes", what)


def check_cpu_target(target: Any) -> None:
    """Raise CompileError unless `target` is one the LLVM CPU backend compiles for (None is the
    host)."""
    if target is not None and getattr(target, "kind", "llvm") != "llvm":
        raise CompileError(f"the LLVM CPU backend cannot compile for target '{target}'")


def check_entries(mod: IRModule) -> None:
    """Raise NotLoweredError unless every function of `mod` is an exported entry point or the
    internal form of a directly called one (the CPU backend's input: lower-graph and
    make-entry have run). A graph function is reported
    first: it is the earlier missing step."""
    for name, func in mod.functions.items():
        if not isinstance(func, PrimFunc):
            raise not_lowered("CPU", f"'{name}' is still a graph function", "lower-graph")
    for name, func in mod.functions.items():
        if ENTRY not in func.attrs and INTERNAL not in func.attrs:
            raise not_lowered("CPU", f"function '{name}' is not an entry point", "make-entry")


@deep
def emit(mod: IRModule, kind: str, target: Any = None, opt_level: int = 2,
         out_path: str | Path | None = None, libs: tuple[str, ...] = (),
         lib_dirs: tuple[str, ...] = (), names: ExportNames | None = None,
         phases: Phases = NO_PHASES, write: bool = True) -> bytes:
    """Compile `mod` to `kind` (one of EMIT_KINDS) and return the bytes; also write them to
    `out_path` atomically when given (unless `write` is False: a caller that writes them
    itself, such as the CLI, still names things after the file); `phases` times each step
    (LLVM IR, optimisation, code generation, link). A shared object is linked with the
    libraries `libs` (`-l`) found in `lib_dirs` (`-L`), which define the module's external
    functions. `names` chooses the exported C names (default: the library named after
    `out_path`). Runs on a big-stack thread (`tirc.ir.deep_call`), as code generation recurses
    as deep as the IR nests. The analyses of the steps walk the finished functions many times:
    `remembered_walks` walks each once."""
    with remembered_walks():
        data = _emit(mod, kind, target, opt_level, out_path, libs, lib_dirs, names, phases)
    if out_path is not None and write:
        from tirc.backends.link import write_atomic

        write_atomic(out_path, data, executable=kind == "so")
    return data


def _emit(mod: IRModule, kind: str, target: Any, opt_level: int, out_path: str | Path | None,
          libs: tuple[str, ...], lib_dirs: tuple[str, ...], names: ExportNames | None,
          phases: Phases) -> bytes:
    """`emit`'s work (the bytes; `out_path` only names things)."""
    from tirc.backends.metadata import metadata_json, module_metadata

    if kind not in EMIT_KINDS:
        raise CompileError(f"unknown output kind '{kind}' (expected one of: "
                           f"{', '.join(EMIT_KINDS)})")
    if kind in GPU_KINDS or (kind in ("ll", "asm") and getattr(target, "is_gpu", False)):
        from tirc.backends.nvptx import emit_gpu

        with phases("nvptx"):
            return emit_gpu(mod, kind, target, opt_level, tuple(libs), tuple(lib_dirs))
    if kind != "h":
        check_cpu_target(target)
    check_entries(mod)
    names = names or ExportNames(library_name_from_path(out_path))
    if kind == "h":
        from tirc.backends.header import render_header

        name = Path(out_path).stem if out_path else mod.name
        data = render_header(module_metadata(mod, names), name).encode()
    else:
        from tirc.backends.llvm import compile_llvm, cpu_choice

        choice = cpu_choice(target)
        result = compile_llvm(mod, metadata_json(mod, names, choice.metadata()), target,
                              opt_level, names, choice, phases)
        if kind == "so":
            from tirc.backends.link import link_shared
            from tirc.ir.dist.collective import is_ccl_symbol
            from tirc.ir.packed_call import external_symbols

            # The collectives (tirc_ccl_*) resolve when the runtime loads the library, from
            # the MPI or NCCL shim it loaded first.
            obj = result.obj()
            with phases("link"):
                return link_shared(obj, openmp=result.uses_openmp,
                                   libs=tuple(libs), lib_dirs=tuple(lib_dirs),
                                   externs=tuple(s for s in external_symbols(mod)
                                                 if not is_ccl_symbol(s)))
        data = {"ll": lambda: result.ll().encode(), "asm": lambda: result.asm().encode(),
                "obj": result.obj}[kind]()
    return data


def build(mod: IRModule, out_path: str | Path, target: Any = None, opt_level: int = 2,
          kind: str | None = None, libs: tuple[str, ...] = (),
          lib_dirs: tuple[str, ...] = (), names: ExportNames | None = None) -> Path:
    """Compile `mod` to the file `out_path`, its kind taken from the suffix unless given
    (`libs`/`lib_dirs`/`names`: as for `emit`)."""
    kind = kind or kind_for_path(out_path)
    if kind is None:
        raise CompileError(f"cannot tell the output kind from '{out_path}'; use a suffix "
                           f"({', '.join(SUFFIX_KINDS)}) or --emit")
    emit(mod, kind, target, opt_level, out_path, libs, lib_dirs, names)
    return Path(out_path)


@deep
def metadata(mod: IRModule) -> str:
    """The metadata JSON of `mod` (indented), as `tirc_metadata()` of its library returns."""
    from tirc.backends.metadata import module_metadata

    check_entries(mod)
    return json.dumps(module_metadata(mod), indent=2)


__all__ = ["EMIT_KINDS", "SUFFIX_KINDS", "ExportNames", "NotLoweredError", "build",
           "check_entries", "emit", "kind_for_path", "metadata", "not_lowered"]
