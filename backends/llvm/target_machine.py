"""The LLVM target machine from a tirc Target, and the optimisation pipeline at -O0..-O3.

An empty triple means the host's. The CPU and features come from `tirc.backends.llvm.cpu`: by
default a portable x86-64-v3, `-mcpu=native` for the host's own, names checked against LLVM's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import llvmlite.binding as llvm
from tirc.backends import check_cpu_target
from tirc.backends.llvm.cpu import CPUChoice, choose_cpu, initialise_llvm
from tirc.ir.diagnostics import CompileError


def host_triple() -> str:
    return llvm.get_process_triple()


def target_triple(target: Any) -> str:
    return getattr(target, "triple", "") or host_triple()


@cache
def _machine(triple: str, cpu: str, features: str, opt: int) -> llvm.TargetMachine:
    initialise_llvm()
    try:
        t = llvm.Target.from_triple(triple)
    except RuntimeError as exc:
        raise CompileError(f"unknown target triple '{triple}': {exc}") from None
    return t.create_target_machine(cpu=cpu, features=features, opt=opt, reloc="pic",
                                   codemodel="default")


def cpu_choice(target: Any) -> CPUChoice:
    """The checked CPU, features and needs of `target` (a tirc Target, or None)."""
    check_cpu_target(target)
    triple = target_triple(target)
    cpu = getattr(target, "mcpu", "") if target is not None else ""
    mattr = getattr(target, "mattr", ()) if target is not None else ()
    flags = tuple(a for a in mattr.split(",") if a) if isinstance(mattr, str) else tuple(mattr)
    initialise_llvm()
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError as exc:
        raise CompileError(f"unknown target triple '{triple}': {exc}") from None
    return choose_cpu(triple, cpu, flags, host=triple == host_triple())


def create_target_machine(target: Any, opt_level: int,
                          choice: CPUChoice | None = None) -> llvm.TargetMachine:
    """A target machine for `target` (a tirc Target, or None for the default) at `opt_level`."""
    choice = choice or cpu_choice(target)
    return _machine(choice.triple, choice.cpu, choice.features, max(0, min(3, opt_level)))


def optimize(module: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int) -> None:
    """Run LLVM's default module pipeline for `opt_level` (O0 runs only what is mandatory)."""
    level = max(0, min(3, opt_level))
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = level >= 2
    pto.slp_vectorization = level >= 2
    pto.loop_unrolling = level >= 1
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(module, pb)


def parse_and_verify(text: str) -> llvm.ModuleRef:
    """Parse textual LLVM IR and check it (an error here is a bug in tirc's codegen)."""
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as exc:
        raise CompileError(f"internal error: invalid LLVM IR generated: {exc}") from None
    return module
