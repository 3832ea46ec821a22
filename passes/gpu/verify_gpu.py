"""verify-gpu: a GPU function is one the device can run, as a table of rules.

Checked on every launch region (before or after split-host-device), each rule with its
message:

| rule | message (abridged) |
|---|---|
| no CPU-parallel loop inside a kernel | loop 'i' is parallel ... bind it instead |
| block extents are constants | threadIdx.x extent n is not a constant |
| block extents within the axis limits | threadIdx.z extent 128 exceeds 64 |
| threads per block <= 1024 | 2048 threads per block exceed the limit of 1024 |
| constant grid extents within limits | blockIdx.y extent 70000 exceeds 65535 |
| shared memory within the architecture's limit | 256 KiB of shared memory exceed 227 KiB |
| every thread of a block reaches each barrier | barrier under a condition on threadIdx.x |

and in host code: no parallel loop (a GPU function has no CPU threads). The limits come from
the target's `-arch` (tirc.ir.gpu.arch).
"""

from __future__ import annotations

from typing import Any, ClassVar

from tirc.ir.analysis.entry_signature import shape_text
from tirc.ir.diagnostics import CompileError
from tirc.ir.expr import Var
from tirc.ir.function import PrimFunc
from tirc.ir.gpu.arch import KIB, GPUArch, gpu_arch
from tirc.ir.gpu.launch import alloc_shared_bytes, launch_extents, shared_bytes
from tirc.ir.gpu.threads import (
    BLOCK_TAGS,
    THREAD_TAGS,
    children,
    const_value,
    is_barrier,
    is_block_tag,
    is_thread_loop,
    regions_with_storage,
)
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule
from tirc.ir.rebind import used_vars
from tirc.ir.stmt import Allocate, For, ForKind, IfThenElse, Stmt, While
from tirc.passes.pass_base import PassContext, PrimFuncPass


def _show(e: Any) -> str:
    try:
        return str(shape_text(e))
    except CompileError:
        return type(e).__name__


def _kib(n: int) -> str:
    return f"{n / KIB:g} KiB"


def _fail(func: PrimFunc, node: Any, message: str) -> CompileError:
    return CompileError(f"verify-gpu: {func.name}: {message}",
                        getattr(node, "span", None) or func.span)


def _check_launch(func: PrimFunc, region: For, around: tuple[Allocate, ...],
                  arch: GPUArch) -> None:
    extents = launch_extents(region)
    threads = 1
    for axis, tag in enumerate(THREAD_TAGS):
        if tag not in extents:
            continue
        n = const_value(extents[tag])
        if n is None:
            raise _fail(func, region, f"{tag} extent {_show(extents[tag])} is not a constant; the "
                        "threads of a block are fixed at compile time")
        if n > arch.max_block[axis]:
            raise _fail(func, region, f"{tag} extent {n} exceeds {arch.max_block[axis]}")
        threads *= n
    if threads > arch.max_threads:
        raise _fail(func, region, f"{threads} threads per block exceed the limit of "
                    f"{arch.max_threads}")
    for axis, tag in enumerate(BLOCK_TAGS):
        n = const_value(extents[tag]) if tag in extents else None
        if n is not None and n > arch.max_grid[axis]:
            raise _fail(func, region, f"{tag} extent {n} exceeds {arch.max_grid[axis]}")
    smem = shared_bytes(region) + sum(alloc_shared_bytes(a) for a in around)
    if smem > arch.max_shared:
        raise _fail(func, region, f"{_kib(smem)} of shared memory exceed the "
                    f"{_kib(arch.max_shared)} a block may use on {arch.name}")


def _check_body(func: PrimFunc, region: For) -> None:
    thread_vars: dict[Var, str] = {}

    def walk(s: Stmt, divergent: str | None) -> None:
        if isinstance(s, For) and s.kind == ForKind.PARALLEL:
            raise _fail(func, s, f"loop '{s.loop_var.name}' is parallel inside a kernel; bind "
                        "it to a thread axis (blockIdx/threadIdx) instead")
        if is_barrier(s) and divergent is not None:
            raise _fail(func, s, f"barrier under a condition on {divergent}: not every thread "
                        "of the block reaches it")
        if is_thread_loop(s) and not is_block_tag(s.thread_tag):  # type: ignore[attr-defined]
            thread_vars[s.loop_var] = s.thread_tag  # type: ignore[attr-defined]
        cond = None
        if isinstance(s, IfThenElse | While):
            cond = s.condition
        elif isinstance(s, For):
            cond = s.extent
        if cond is not None and divergent is None:
            hit = [thread_vars[v] for v in used_vars(cond) if v in thread_vars]
            if hit:
                divergent = hit[0]
        for c in children(s):
            walk(c, divergent)

    walk(region, None)


def verify_function(func: PrimFunc, arch: GPUArch) -> None:
    """Raise a CompileError for the first rule `func` breaks."""
    def host(s: Stmt) -> None:
        if is_thread_loop(s):
            return
        if isinstance(s, For) and s.kind == ForKind.PARALLEL:
            raise _fail(func, s, f"loop '{s.loop_var.name}' is parallel outside the kernels; "
                        "a GPU function has no CPU threads")
        for c in children(s):
            host(c)

    host(func.body)
    for region, around in regions_with_storage(func.body):
        _check_body(func, region)
        _check_launch(func, region, around, arch)


@dataclass(frozen=True)
class VerifyGPU(PrimFuncPass):
    """Check that each kernel can run on the target GPU (see the module docstring)."""

    name: ClassVar[str] = "verify-gpu"
    description: ClassVar[str] = ("kernels have no parallel loops, fit the launch and shared "
                                  "memory limits, and reach barriers uniformly")

    def transform(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        verify_function(func, gpu_arch(ctx.target))
        return func

