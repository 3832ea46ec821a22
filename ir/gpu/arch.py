"""What tirc knows about each CUDA architecture: the PTX version to emit and the launch limits.

`-arch=sm_XX` of a cuda target picks a row; without one the default is sm_80. Shared memory
is the most a block may use (the per-SM capacity less the 1 KiB the hardware keeps per block):
227 KiB on sm_90 and sm_100, 163 KiB on sm_80/sm_87, 99 KiB on sm_86/sm_89/sm_120, 64 KiB on
sm_75. More than 48 KiB per block needs dynamic shared memory, which the NVPTX backend then
uses (and the runtime opts in to).
"""

from __future__ import annotations

from typing import Any

from tirc.ir.diagnostics import CompileError
from tirc.ir.lean_dataclass import dataclass

DEFAULT_ARCH = "sm_80"
KIB = 1024
STATIC_SHARED_LIMIT = 48 * KIB


@dataclass(frozen=True)
class GPUArch:
    """One CUDA architecture."""

    name: str
    ptx: str  # LLVM feature of the PTX ISA version, "+ptx80"
    max_shared: int  # bytes of shared memory one block may use
    max_threads: int = 1024
    max_block: tuple[int, int, int] = (1024, 1024, 64)
    max_grid: tuple[int, int, int] = (2**31 - 1, 65535, 65535)

    @property
    def sm(self) -> int:
        return int("".join(c for c in self.name[3:] if c.isdigit()))


ARCHS: dict[str, GPUArch] = {a.name: a for a in (
    GPUArch("sm_70", "+ptx80", 96 * KIB),
    GPUArch("sm_72", "+ptx80", 96 * KIB),
    GPUArch("sm_75", "+ptx80", 64 * KIB),
    GPUArch("sm_80", "+ptx80", 163 * KIB),
    GPUArch("sm_86", "+ptx80", 99 * KIB),
    GPUArch("sm_87", "+ptx80", 163 * KIB),
    GPUArch("sm_89", "+ptx80", 99 * KIB),
    GPUArch("sm_90", "+ptx80", 227 * KIB),
    GPUArch("sm_90a", "+ptx80", 227 * KIB),
    GPUArch("sm_100", "+ptx86", 227 * KIB),
    GPUArch("sm_100a", "+ptx86", 227 * KIB),
    GPUArch("sm_103", "+ptx88", 227 * KIB),
    GPUArch("sm_120", "+ptx87", 99 * KIB),
    GPUArch("sm_120a", "+ptx87", 99 * KIB),
)}


def gpu_arch(target: Any) -> GPUArch:
    """The architecture of a cuda target (its `-arch`, or sm_80); a clear error if unknown."""
    name = getattr(target, "arch", "") or DEFAULT_ARCH
    arch = ARCHS.get(name)
    if arch is None:
        raise CompileError(f"unknown CUDA architecture '{name}' (tirc knows: "
                           f"{', '.join(ARCHS)})")
    return arch
