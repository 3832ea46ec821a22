"""tirc.driver: compile a module the way `tirc` does, from Python.

    build(mod, "m.so")                              # default pipeline at -O2, then the backend
    emit(mod, "ptx", target="cuda -arch=sm_90")     # bytes of any --emit kind
    compile_ptx(mod, "cuda -arch=sm_90").ptx        # the NVPTX backend's result object
    lowered = lower(mod, "llvm", opt_level=3)       # the IR the backend gets (dumps, tests)

`lower` runs the default pipeline of the target and -O level (tirc.passes.pipeline), or the
passes given, through the one pass manager with the context's config and instruments; `emit`
and `build` lower, then render with tirc.backends, which only renders IR that is lowered. The
command line goes through `lower` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.module import IRModule
from tirc.ir.target import Target, parse_target

GPU_ONLY_KINDS = ("ptx", "cubin")


def resolve_target(target: Any, kind: str | None = None) -> Target:
    """`target` as a Target: None is the host, or cuda with the default architecture when
    `kind` is a GPU-only output."""
    if target is None and kind in GPU_ONLY_KINDS:
        from tirc.ir.gpu.arch import DEFAULT_ARCH

        return Target("cuda", arch=DEFAULT_ARCH)
    return parse_target(target)


def lower(mod: IRModule, target: Any = None, opt_level: int = 2, *,
          passes: Sequence[str] | None = None, megakernel: str | None = None,
          config: dict[str, str] | None = None, instruments: Iterable[Any] = (),
          disabled: Iterable[str] = ()) -> IRModule:
    """`mod` through the default pipeline of `target` (a Target, text or None for the host) at
    `opt_level`, or through `passes` (names with options, as `--passes`) instead; `megakernel`
    is `-fmegakernel` (static or dynamic), `config` the `--pass-config` entries, `disabled`
    passes to leave out."""
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pass_base import PassContext
    from tirc.passes.pipeline import build_pipeline, default_pipeline

    t = resolve_target(target)
    specs = list(passes) if passes is not None else default_pipeline(t, opt_level, megakernel)
    off = list(disabled)
    settings = dict(config or {})
    if megakernel is not None:
        settings["megakernel"] = megakernel
    ctx = PassContext(opt_level=opt_level, target=t, config=settings,
                      instruments=list(instruments), disabled=set(off))
    return run_pipeline(mod, build_pipeline(specs, off), ctx)


def emit(mod: IRModule, kind: str, target: Any = None, opt_level: int = 2,
         out_path: str | Path | None = None, libs: tuple[str, ...] = (),
         lib_dirs: tuple[str, ...] = (), **lowering: Any) -> bytes:
    """`mod` lowered (`lower`, with the `lowering` keywords) and rendered as `kind` (ll, asm,
    obj, so, h, ptx, cubin); written to `out_path` too when given. `libs`/`lib_dirs` are the
    `-l`/`-L` libraries of the module's external functions."""
    import tirc.backends as backends

    t = resolve_target(target, kind)
    lowered = lower(mod, t, opt_level, **lowering)
    return backends.emit(lowered, kind, t, opt_level, out_path, tuple(libs), tuple(lib_dirs))


def build(mod: IRModule, out_path: str | Path, target: Any = None, opt_level: int = 2,
          kind: str | None = None, libs: tuple[str, ...] = (), lib_dirs: tuple[str, ...] = (),
          **lowering: Any) -> Path:
    """`mod` lowered and written to the file `out_path`, its kind taken from the suffix unless
    given (`.so`, `.o`, `.ll`, `.s`, `.h`, `.ptx`, `.cubin`)."""
    import tirc.backends as backends

    kind = kind or backends.kind_for_path(out_path)
    if kind is None:
        raise CompileError(f"cannot tell the output kind from '{out_path}'; use a suffix "
                           f"({', '.join(backends.SUFFIX_KINDS)}) or --emit")
    emit(mod, kind, target, opt_level, out_path, libs, lib_dirs, **lowering)
    return Path(out_path)


def compile_ptx(mod: IRModule, target: Any = None, opt_level: int = 2,
                libs: tuple[str, ...] = (), lib_dirs: tuple[str, ...] = (),
                **lowering: Any) -> Any:
    """`mod` lowered for a cuda target (None: the default architecture) and rendered by the
    NVPTX backend: its PTXResult (PTX text, metadata, ptxas for a cubin)."""
    from tirc.backends.nvptx import compile_ptx as render_ptx

    t = resolve_target(target, "ptx")
    return render_ptx(lower(mod, t, opt_level, **lowering), t, opt_level, libs, lib_dirs)


__all__ = ["build", "compile_ptx", "emit", "lower", "resolve_target"]
