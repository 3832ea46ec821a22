"""NVPTX address spaces of tirc's storage scopes, and the special registers of thread indices.

Kernel pointer parameters stay generic (address space 0): LLVM's NVPTX backend knows they
point to global memory and emits `ld.global`/`st.global` for them. Shared buffers are
`addrspace(3)` globals, cast to generic pointers where used (InferAddressSpaces turns the
accesses back into `ld.shared`); local buffers are allocas, which NVPTX places in local memory
(address space 5) or registers.
"""

from __future__ import annotations

GENERIC = 0
GLOBAL = 1
SHARED = 3
CONSTANT = 4
LOCAL = 5

SCOPE_ADDRESS_SPACE = {"global": GLOBAL, "shared": SHARED, "shared.dyn": SHARED, "local": LOCAL,
                       "warp": LOCAL}

# Thread axis -> the `llvm.nvvm.read.ptx.sreg.*` register that holds its index.
SPECIAL_REGISTERS = {
    "threadIdx.x": "tid.x", "threadIdx.y": "tid.y", "threadIdx.z": "tid.z",
    "blockIdx.x": "ctaid.x", "blockIdx.y": "ctaid.y", "blockIdx.z": "ctaid.z",
}


def sreg_intrinsic(tag: str) -> str:
    """The intrinsic reading the index of thread axis `tag` (`llvm.nvvm.read.ptx.sreg.tid.x`)."""
    return f"llvm.nvvm.read.ptx.sreg.{SPECIAL_REGISTERS[tag]}"
