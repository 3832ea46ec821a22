"""Which CPU a library is compiled for, checked against LLVM's own lists, and what it needs.

With no `-mcpu`, an x86-64 library is built for `x86-64-v3` (any x86-64 with AVX2, FMA and BMI2:
Haswell and Zen 1 onwards), so a `.so` built on one machine runs on another, as clang's generic
default does; `-mcpu=native` (or `tirc -march=native`) opts into the build machine's CPU and every
feature it has. A CPU or `-mattr` feature LLVM does not know is a CompileError naming close
names (LLVM itself would warn, then abort in code generation). The features a library needs are
recorded in its metadata as Linux `/proc/cpuinfo` flags, which `tirc.runtime` checks on load.
"""

from __future__ import annotations

import os
import tempfile
import threading
from functools import cache
from typing import Any

import llvmlite.binding as llvm
from tirc.ir.diagnostics import CompileError, did_you_mean
from tirc.ir.lean_dataclass import dataclass

DEFAULT_X86_CPU = "x86-64-v3"
NATIVE = "native"

# The x86-64 psABI micro-architecture levels, as LLVM names their features.
_BASE = ("cmov", "cx8", "fxsr", "mmx", "sse", "sse2")
_V2 = _BASE + ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3")
_V3 = _V2 + ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = _V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_LEVELS = {"x86-64": _BASE, "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4}

# Named CPUs by the psABI level they reach (what the runtime can check for them).
_CPU_LEVEL = {
    **dict.fromkeys(("nehalem", "westmere", "corei7", "sandybridge", "corei7-avx", "ivybridge",
                     "core-avx-i", "silvermont", "slm", "goldmont", "goldmont-plus", "tremont",
                     "btver2", "bdver1", "bdver2", "bdver3"), "x86-64-v2"),
    **dict.fromkeys(("haswell", "core-avx2", "broadwell", "skylake", "alderlake", "raptorlake",
                     "meteorlake", "arrowlake", "arrowlake-s", "lunarlake", "pantherlake",
                     "gracemont", "sierraforest", "grandridge", "clearwaterforest", "znver1",
                     "znver2", "znver3", "bdver4"), "x86-64-v3"),
    **dict.fromkeys(("skylake-avx512", "cascadelake", "cooperlake", "cannonlake",
                     "icelake-client", "icelake-server", "tigerlake", "rocketlake",
                     "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d",
                     "diamondrapids", "znver4", "znver5"), "x86-64-v4"),
}

# LLVM feature -> /proc/cpuinfo flag, where they differ; others are the same with '.' -> '_'.
_CPUINFO_FLAG = {
    "sse3": "pni", "bmi": "bmi1", "lzcnt": "abm", "sahf": "lahf_lm", "pclmul": "pclmulqdq",
    "sha": "sha_ni", "rdrnd": "rdrand", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
    "avx512vbmi2": "avx512_vbmi2", "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq", "avx512fp16": "avx512_fp16", "avxvnni": "avx_vnni",
    "amx-tile": "amx_tile", "amx-int8": "amx_int8", "amx-bf16": "amx_bf16",
}
# The features the runtime checks: those code generation may use for tirc's programs.
_CHECKED = set(_V4) | set(_CPUINFO_FLAG) | {"avx512vbmi", "avx512ifma", "gfni", "vaes",
                                            "vpclmulqdq", "aes", "adx"}

_lists_lock = threading.Lock()


def cpuinfo_flag(feature: str) -> str:
    """The `/proc/cpuinfo` flag of an LLVM x86 feature name."""
    return _CPUINFO_FLAG.get(feature, feature.replace(".", "_"))


@cache
def initialise_llvm() -> bool:
    for init in ("initialize_all_targets", "initialize_all_asmprinters"):
        getattr(llvm, init)()
    return True


@cache
def llvm_choices(triple: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The CPU and feature names LLVM knows for `triple` (its `-mcpu=help` lists, read from
    the standard error LLVM prints them to)."""
    initialise_llvm()
    target = llvm.Target.from_triple(triple)
    with _lists_lock, tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            target.create_target_machine(cpu="help", features="")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        text = sink.read().decode("utf-8", "replace")
    cpus: list[str] = []
    features: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            current = cpus
        elif line.startswith("Available features"):
            current = features
        elif current is not None and line.startswith("  ") and " - " in line:
            current.append(line.split()[0])
        elif line.startswith("Use +feature"):
            current = None
    return tuple(cpus), tuple(features)


@dataclass(frozen=True)
class CPUChoice:
    """The LLVM CPU and feature string a library is compiled with, and what it needs."""

    triple: str
    cpu: str
    features: str
    needs: tuple[str, ...]  # /proc/cpuinfo flags the code may use (x86 only)

    def metadata(self) -> dict[str, Any]:
        """The library metadata's `target` entry."""
        return {"triple": self.triple, "cpu": self.cpu, "needs": list(self.needs)}


def _is_x86(triple: str) -> bool:
    return triple.split("-")[0] in ("x86_64", "amd64")


def choose_cpu(triple: str, mcpu: str, mattr: tuple[str, ...], host: bool) -> CPUChoice:
    """Resolve `-mcpu`/`-mattr` for `triple` (see the module docstring); `host` says whether
    `triple` is the machine tirc runs on (for `native` and the default)."""
    cpus, known_features = llvm_choices(triple)
    features = list(mattr)
    if mcpu == NATIVE:
        if not host:
            raise CompileError(f"-mcpu=native needs the host's triple, not '{triple}'")
        mcpu = llvm.get_host_cpu_name()
        if not features:
            features = [f for f in llvm.get_host_cpu_features().flatten().split(",") if f]
    elif not mcpu:
        mcpu = DEFAULT_X86_CPU if _is_x86(triple) else "generic"
    if cpus and mcpu not in cpus and mcpu != "generic":
        raise CompileError(f"unknown CPU '{mcpu}' for {triple}{did_you_mean(mcpu, cpus)} "
                           "(or -mcpu=native for this machine's)")
    for flag in features:
        name = flag.lstrip("+-")
        if flag[:1] not in "+-" or not name:
            raise CompileError(f"-mattr wants +feature or -feature, got '{flag}'")
        if known_features and name not in known_features:
            raise CompileError(f"unknown CPU feature '{name}' for {triple}"
                               f"{did_you_mean(name, known_features, 4)}")
    needs: tuple[str, ...] = ()
    if _is_x86(triple):
        wanted = set(_LEVELS.get(mcpu) or _LEVELS.get(_CPU_LEVEL.get(mcpu, ""), ()))
        for flag in features:
            name = flag.lstrip("+-")
            (wanted.add if flag.startswith("+") else wanted.discard)(name)
        needs = tuple(sorted(cpuinfo_flag(f) for f in wanted if f in _CHECKED))
    return CPUChoice(triple, mcpu, ",".join(features), needs)
