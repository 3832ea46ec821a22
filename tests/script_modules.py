"""Python files of the samples and benchmarks folders (not packages), loaded by path once per
session under a fixed name, so that every test sees the same module (and its classes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str, path: Path) -> ModuleType:
    """The module in file `path`, registered as `name` (loaded on first use)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def sample_references() -> ModuleType:
    """samples/references.py: the samples' inputs and NumPy references (samples/demo.py loads
    it under the same name)."""
    return load_script("tirc_sample_references", ROOT / "samples" / "references.py")


def gpu_sample_references() -> ModuleType:
    """samples/gpu/references.py: the GPU samples' sizes and NumPy references."""
    return load_script("gpu_references", ROOT / "samples" / "gpu" / "references.py")


def megakernel_benchmark() -> ModuleType:
    """benchmarks/megakernel.py (its `source` generates the decode-like chain)."""
    return load_script("tirc_megakernel_benchmark", ROOT / "benchmarks" / "megakernel.py")


def distributed_sample_references() -> ModuleType:
    """samples/distributed/references.py: the multi-device samples and their references."""
    return load_script("tirc_distributed_references",
                       ROOT / "samples" / "distributed" / "references.py")
