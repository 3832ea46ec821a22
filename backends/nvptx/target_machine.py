"""LLVM's NVPTX target machine for a cuda target, and PTX text from an LLVM module."""

from __future__ import annotations

from functools import cache
from typing import Any

import llvmlite.binding as llvm
from tirc.ir.gpu.arch import GPUArch, gpu_arch

TRIPLE = "nvptx64-nvidia-cuda"


@cache
def _machine(cpu: str, features: str, opt: int) -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=cpu, features=features, opt=opt)


def nvptx_machine(target: Any, opt_level: int) -> tuple[llvm.TargetMachine, GPUArch]:
    """The NVPTX target machine for `target`'s architecture (default sm_80) at `opt_level`."""
    arch = gpu_arch(target)
    return _machine(arch.name, arch.ptx, max(0, min(3, opt_level))), arch
