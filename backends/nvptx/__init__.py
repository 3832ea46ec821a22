"""NVPTX code generation: loop IR with thread bindings to PTX through LLVM (and a cubin via ptxas).

    result = compile_ptx(mod, parse_target("cuda -arch=sm_90"), opt_level=2)
    result.ptx          # PTX text, starting with the metadata comment block
    result.cubin()      # ptxas's output (a CompileError when ptxas is not installed)

The module must be lowered by the GPU pipeline (tirc.driver.lower with a cuda target): each
kernel becomes a `ptx_kernel` function, each host function a launch plan in the metadata
(tirc.backends.nvptx.launch_plan); a function that is neither is a NotLoweredError.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.target_machine import optimize, parse_and_verify
from tirc.backends.nvptx.host_libraries import library_metadata
from tirc.backends.nvptx.kernel import KernelInfo, emit_kernel
from tirc.backends.nvptx.launch_plan import host_plan
from tirc.backends.nvptx.ptx_metadata import render_block
from tirc.backends.nvptx.ptxas import KernelUsage, parse_usage, run_ptxas
from tirc.backends.nvptx.target_machine import TRIPLE, nvptx_machine
from tirc.ir.analysis.narrow_floats import refuse_narrow_floats
from tirc.ir.attrs import GLOBAL_SYMBOL, GPU_HOST, KERNEL
from tirc.ir.diagnostics import CompileError
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.arch import DEFAULT_ARCH
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.packed_call import is_slot_name
from tirc.ir.target import Target, parse_target

ABI_VERSION = 1
BRANCHING_ABI_VERSION = 2  # a launch plan with `steps` (graph-level branches)
# A plan with a `bounds_record` (-fbounds-check), steps or not: a reader of version 2 would
# not pass the record to the kernels.
BOUNDS_ABI_VERSION = 3
GPU_EMIT_KINDS = ("ptx", "cubin", "ll", "asm")


@dataclass
class PTXResult:
    """PTX text for one module, its metadata and the architecture it was made for."""

    ptx: str
    metadata: dict[str, Any]
    arch: str
    kernels: list[KernelInfo] = field(default_factory=list)
    ll: str = ""  # the optimised NVPTX LLVM IR

    def cubin(self) -> bytes:
        return run_ptxas(self.ptx, self.arch)[0]

    def usage(self) -> list[KernelUsage]:
        """Registers, stack, spills and shared memory of each kernel, from `ptxas -v`."""
        return parse_usage(run_ptxas(self.ptx, self.arch, verbose=True)[1])


def cuda_target(target: Any) -> Target:
    """`target` as a cuda Target (None means cuda with the default architecture)."""
    t = parse_target(target) if target is not None else Target("cuda", arch=DEFAULT_ARCH)
    if not t.is_gpu:
        raise CompileError(f"PTX and cubin are made for cuda targets, not '{t}' (use "
                           "--target \"cuda -arch=sm_90\")")
    return t


def check_split(mod: IRModule) -> None:
    """Raise NotLoweredError unless every function of `mod` is a kernel or a host launch plan
    (the GPU pipeline has run through gpu-split-host-device)."""
    from tirc.backends import not_lowered

    for name, func in mod.functions.items():
        split = isinstance(func, PrimFunc) and (func.attrs.get(KERNEL) or func.attrs.get(GPU_HOST))
        if not split:
            raise not_lowered("NVPTX", f"function '{name}' is neither a kernel nor a host "
                              "function", "gpu-split-host-device")


def compile_ptx(mod: IRModule, target: Any = None, opt_level: int = 2,
                libs: tuple[str, ...] = (), lib_dirs: tuple[str, ...] = ()) -> PTXResult:
    """PTX for every kernel of `mod`, with the launch plans of its host functions; `libs`
    and `lib_dirs` (`-l`/`-L`) define the C functions the plans call on the host."""
    t = cuda_target(target)
    check_split(mod)
    for f in mod.prim_funcs().values():
        refuse_narrow_floats(f, "NVPTX")
    tm, arch = nvptx_machine(t, opt_level)
    ctx = ModuleContext(mod.name, TRIPLE, str(tm.target_data))
    kernel_funcs = {str(f.attrs.get(GLOBAL_SYMBOL, f.name)): f
                    for f in mod.prim_funcs().values() if f.attrs.get(KERNEL)}
    kernels = [emit_kernel(ctx, f) for f in kernel_funcs.values()]
    shared = {k.name: k.dynamic_shared for k in kernels}
    functions = [host_plan(f, shared, kernel_funcs) for f in mod.prim_funcs().values()
                 if f.attrs.get(GPU_HOST)]
    kernel_meta = [{"name": k.name, "static_shared": k.static_shared,
                    "dynamic_shared": k.dynamic_shared} for k in kernels]
    version = BOUNDS_ABI_VERSION if any("bounds_record" in f for f in functions) else \
        BRANCHING_ABI_VERSION if any("steps" in f for f in functions) else ABI_VERSION
    meta = {"tirc_abi": version, "module": mod.name, "target": str(t), "arch": arch.name,
            "functions": functions, "kernels": kernel_meta}
    # Collectives come from the runtime's shim, dotted names from Python (tirc.runtime).
    symbols = list(dict.fromkeys(c["symbol"] for f in functions for c in f["host_calls"]
                                 if not c.get("ccl") and not is_slot_name(c["symbol"])))
    if symbols or libs:
        meta["libraries"] = library_metadata(symbols, tuple(libs), tuple(lib_dirs))
    module = parse_and_verify(str(ctx.module))
    optimize(module, tm, opt_level)
    ptx = tm.emit_assembly(module)
    return PTXResult(render_block(meta) + ptx, meta, arch.name, kernels, str(module))


def emit_gpu(mod: IRModule, kind: str, target: Any = None, opt_level: int = 2,
             libs: tuple[str, ...] = (), lib_dirs: tuple[str, ...] = ()) -> bytes:
    """`ptx` text (also `asm`), a `cubin`, or the NVPTX LLVM IR (`ll`) for `mod` (what
    tirc.backends.emit calls for cuda targets)."""
    if kind not in GPU_EMIT_KINDS:
        raise CompileError(f"the cuda target emits {', '.join(GPU_EMIT_KINDS)}, not '{kind}'")
    result = compile_ptx(mod, target, opt_level, libs, lib_dirs)
    if kind == "cubin":
        return result.cubin()
    return (result.ll if kind == "ll" else result.ptx).encode()


__all__ = ["PTXResult", "check_split", "compile_ptx", "cuda_target", "emit_gpu"]
