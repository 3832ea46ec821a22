"""Shared by the GPU tests (passes/gpu, backends/nvptx, runtime/cuda): lowering with the GPU
pipeline, the GPU samples and their NumPy references, the ptxas skip reason, and a fake CUDA
driver that runs kernels in the GPU interpreter."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from script_modules import gpu_sample_references, sample_references
from tirc.frontend import parse, parse_file
from tirc.ir.interpreter import np_dtype
from tirc.ir.interpreter.gpu import GPUInterpreter
from tirc.ir.module import IRModule
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline

ROOT = Path(__file__).resolve().parent.parent
GPU_SAMPLES_DIR = ROOT / "samples" / "gpu"


REFS = gpu_sample_references()
SAMPLES = REFS.GPU_SAMPLES
SAMPLE_IDS = [s.name for s in SAMPLES]


SAMPLE_REFS = sample_references()
# Graph samples that run on a GPU: all but those calling a C function on the host.
GRAPH_SAMPLES = [s for s in SAMPLE_REFS.GRAPH_SAMPLES if not s.externs]
GRAPH_SAMPLE_IDS = [s.name for s in GRAPH_SAMPLES]


def build_extern_library(sample: Any, out_dir: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Build `samples/<name>_extern.c` (the C functions of a sample with externs) into
    `out_dir/lib<name>_extern.so`; the `-l`/`-L` to compile the sample with."""
    import subprocess

    from tirc.backends.link import c_compiler

    if not sample.externs:
        return (), ()
    name = f"{sample.path.stem}_extern"
    lib = out_dir / f"lib{name}.so"
    if not lib.exists():
        subprocess.run([*c_compiler(), "-shared", "-fPIC", "-O2", "-o", str(lib),
                        str(sample.path.with_name(f"{name}.c"))], check=True)
    return (name,), (str(out_dir),)


def lower(mod: IRModule | str, opt_level: int = 2, arch: str = "sm_80",
          skip: Iterable[str] = ()) -> IRModule:
    """`mod` (or .tir text) through the GPU pipeline, leaving out the `skip` passes."""
    if isinstance(mod, str):
        mod = parse(mod)
    left_out = set(skip)
    target = parse_target(f"cuda -arch={arch}")
    names = [n for n in default_pipeline(target, opt_level) if n not in left_out]
    ctx = PassContext(opt_level=opt_level, target=target)
    return run_pipeline(mod, build_pipeline(names), ctx)


def sample_module(name: str) -> IRModule:
    return parse_file(str(GPU_SAMPLES_DIR / f"{name}.tir"))


class FakeDriver:
    """Device memory as numpy bytes; kernels run in the GPU interpreter on the lowered IR."""

    name = "fake"

    def __init__(self, *lowered: IRModule) -> None:
        self.modules = list(lowered)
        self.memory: dict[int, np.ndarray] = {}
        self.next = 1 << 20
        self.launches: list[tuple[str, tuple[int, ...], tuple[int, ...], int]] = []
        self.dynamic: dict[str, int] = {}
        self.copies = 0

    def load_module(self, image: bytes) -> Any:
        """The lowered module with exactly the PTX's kernels (several samples may all have a
        `main_kernel0`), or None to look kernels up by name."""
        assert image.startswith(b"// tirc module")
        from tirc.ir.attrs import KERNEL
        from tirc.runtime.cuda import read_metadata

        kernels = {k["name"] for k in read_metadata(image.decode(), "fake")["kernels"]}
        return next((m for m in self.modules if kernels == {
            n for n, f in m.functions.items() if f.attrs.get(KERNEL)}), None)

    def add(self, lowered: IRModule) -> None:
        self.modules.append(lowered)

    def _module_of(self, kernel: str) -> IRModule:
        return next(m for m in self.modules if kernel in m.functions)

    def get_function(self, module: Any, name: str) -> Any:
        lowered = module if module is not None else self._module_of(name)
        assert name in lowered.functions
        return (lowered, name)

    def set_max_dynamic_shared(self, fn: Any, nbytes: int) -> None:
        self.dynamic[fn[1]] = nbytes

    def alloc(self, nbytes: int) -> int:
        ptr = self.next
        self.memory[ptr] = np.zeros(max(1, nbytes), np.uint8)
        self.next += -(-max(1, nbytes) // 256) * 256 + 256
        return ptr

    def free(self, ptr: int) -> None:
        del self.memory[ptr]

    def _bytes(self, ptr: int, nbytes: int) -> np.ndarray:
        """The `nbytes` bytes at device address `ptr` (an allocation's start or inside one)."""
        base = max(b for b in self.memory if b <= ptr)
        start = ptr - base
        assert start + nbytes <= self.memory[base].nbytes, "copy past the end"
        return self.memory[base][start:start + nbytes]

    def to_device(self, ptr: int, array: np.ndarray) -> None:
        self.copies += 1
        self._bytes(ptr, array.nbytes)[:] = \
            np.ascontiguousarray(array).reshape(-1).view(np.uint8)

    def to_host(self, array: np.ndarray, ptr: int) -> None:
        self.copies += 1
        array.reshape(-1).view(np.uint8)[:] = self._bytes(ptr, array.nbytes)

    def _view(self, ptr: int, buf: Any, sizes: dict[str, int]) -> np.ndarray:
        """The buffer at device address `ptr` (an allocation's start, or a workspace inside
        one), as an array of its dtype and size."""
        from tirc.ir.analysis.entry_signature import shape_text
        from tirc.runtime.shape_expr import evaluate

        base = max(b for b in self.memory if b <= ptr)
        count = int(np.prod([evaluate(shape_text(d), sizes) for d in buf.shape], dtype=np.int64))
        dt = np_dtype(buf.dtype)
        start = ptr - base
        assert start + count * dt.itemsize <= self.memory[base].nbytes, "access past the end"
        return self.memory[base][start:start + count * dt.itemsize].view(dt)

    def launch(self, fn: Any, grid: Any, block: Any, shared: int, args: list[Any]) -> None:
        lowered, fn = fn
        kernel = lowered[fn]
        sizes = {p.name: a.value for p, a in zip(kernel.params, args)
                 if p not in kernel.buffer_map}
        values = []
        for p, a in zip(kernel.params, args):
            buf = kernel.buffer_map.get(p)
            if buf is None:
                values.append(a.value)
                continue
            assert isinstance(a, ctypes.c_uint64)
            values.append(self._view(a.value, buf, sizes))
        self.launches.append((fn, tuple(grid), tuple(block), shared))
        GPUInterpreter(lowered).launch(fn, grid, block, *values)

    def synchronize(self) -> None:
        pass

    def compute_capability(self) -> tuple[int, int]:
        return (9, 0)

    def sm_count(self) -> int:
        return 132

    def event(self) -> list[float]:
        return [0.0]

    def record(self, ev: list[float]) -> None:
        ev[0] = time.perf_counter()

    def elapsed_ms(self, start: list[float], end: list[float]) -> float:
        return (end[0] - start[0]) * 1e3


def require_ptxas() -> str:
    """The ptxas path, or skip the test with the reason shown."""
    from tirc.backends.nvptx.ptxas import find_ptxas

    exe = find_ptxas()
    if exe is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH: PTX is not assembled")
    return exe
