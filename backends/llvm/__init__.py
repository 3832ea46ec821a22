"""The LLVM CPU backend: lowered loop IR to LLVM IR (llvmlite), optimised, to object code."""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm
from tirc.backends.llvm.codegen import codegen_module
from tirc.backends.llvm.cpu import CPUChoice
from tirc.backends.llvm.target_machine import (
    cpu_choice,
    create_target_machine,
    optimize,
    parse_and_verify,
    target_triple,
)
from tirc.backends.phases import NO_PHASES, Phases
from tirc.backends.symbols import ExportNames
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.module import IRModule


@dataclass
class LLVMResult:
    """An optimised LLVM module with the target machine that compiles it."""

    module: llvm.ModuleRef
    machine: llvm.TargetMachine
    uses_openmp: bool
    phases: Phases = NO_PHASES  # times the code generation of .obj()/.asm()

    def ll(self) -> str:
        return str(self.module)

    def asm(self) -> str:
        with self.phases("llvm-codegen"):
            return self.machine.emit_assembly(self.module)

    def obj(self) -> bytes:
        with self.phases("llvm-codegen"):
            return self.machine.emit_object(self.module)


def fp_contract(target: Any) -> bool:
    """Whether a multiply feeding an add may become one FMA: on unless the target says
    `-fp-contract=off` (bit-exact agreement with separately rounded numpy arithmetic)."""
    options = getattr(target, "options", None) or {}
    return str(options.get("fp-contract", "on")).lower() not in ("off", "false", "0")


def compile_llvm(mod: IRModule, metadata_json: str, target: Any = None,
                 opt_level: int = 2, names: ExportNames | None = None,
                 choice: CPUChoice | None = None, phases: Phases = NO_PHASES) -> LLVMResult:
    """Generate, verify and optimise LLVM IR for a module whose functions are entry points,
    exported under `names`, for the CPU `choice` (default: resolved from `target`); each step
    is timed through `phases`."""
    tm = create_target_machine(target, opt_level, choice)
    with phases("llvm-ir"):
        ctx = codegen_module(mod, metadata_json, target_triple(target), str(tm.target_data),
                             fp_contract=fp_contract(target), names=names)
        module = parse_and_verify(str(ctx.module))
    with phases("llvm-optimize"):
        optimize(module, tm, opt_level)
    return LLVMResult(module, tm, ctx.uses_openmp, phases)


__all__ = ["LLVMResult", "compile_llvm", "cpu_choice", "fp_contract"]
