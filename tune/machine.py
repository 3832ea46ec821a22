"""The machine a measurement was taken on: CPU model, cores, caches, vector width, and the
peak compute and memory figures the roofline estimate and the progress line use.

Read from /proc/cpuinfo and /sys (Linux); fields that cannot be read fall back to plain
defaults. The header of a tuning record file is `header()`; records from a header with another
CPU model are used only when asked (`--tuned-any-cpu`).
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import asdict, field
from pathlib import Path

from tirc.ir.lean_dataclass import dataclass


@dataclass(frozen=True)
class Machine:
    """What the cost model and the records need to know about a CPU."""

    cpu: str = "unknown"
    cores: int = 1
    mhz: float = 2000.0
    vector_bits: int = 128
    fma: bool = False
    caches: dict[str, int] = field(default_factory=dict)  # "L1d", "L2", "L3" -> bytes
    memory_gbps: float = 10.0   # sustained memory bandwidth, all cores (an estimate)

    @property
    def l1(self) -> int:
        return self.caches.get("L1d", 32 * 1024)

    @property
    def l2(self) -> int:
        return self.caches.get("L2", 1024 * 1024)

    def peak_gflops(self, bits: int = 32) -> float:
        """Peak floating-point rate of all cores: lanes x (2 FMA ports x 2 flops) x cycles."""
        lanes = max(self.vector_bits // bits, 1)
        per_cycle = lanes * (4 if self.fma else 2)
        return self.cores * self.mhz * 1e-3 * per_cycle

    def header(self) -> dict[str, object]:
        return asdict(self)


def _cpuinfo() -> dict[str, str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    info: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if info:
                break  # the first processor's block is enough
            continue
        info.setdefault(key.strip(), value.strip())
    return info


def _size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
    digits = text.rstrip("KMG")
    return int(digits) * scale if digits.isdigit() else 0


def _caches() -> dict[str, int]:
    out: dict[str, int] = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = _size((index / "size").read_text())
        except OSError:
            continue
        if kind == "Instruction":
            continue
        name = f"L{level}d" if kind == "Data" else f"L{level}"
        out[name] = size
    return out


@functools.lru_cache(maxsize=1)
def this_machine() -> Machine:
    """The machine this process runs on."""
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    bits = 512 if "avx512f" in flags else 256 if "avx2" in flags or "avx" in flags else 128
    try:
        mhz = float(info.get("cpu MHz", "2000"))
    except ValueError:
        mhz = 2000.0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return Machine(cpu=info.get("model name", platform.processor() or "unknown"),
                   cores=cores, mhz=mhz, vector_bits=bits, fma="fma" in flags,
                   caches=_caches(), memory_gbps=10.0 * max(1, min(cores, 4)))
