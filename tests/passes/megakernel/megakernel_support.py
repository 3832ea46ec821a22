"""Shared by the megakernel tests: the graph samples through the megakernel pass, and built."""

from __future__ import annotations

from pathlib import Path

from tirc.backends import build
from tirc.frontend import parse_file
from tirc.ir import IRModule
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline

SAMPLES = Path(__file__).resolve().parents[3] / "samples"


def task_graph(sample: str, mode: str = "static", tile: int = 1) -> IRModule:
    """`sample` through the graph steps up to the `megakernel` pass: the task-graph form."""
    steps = cpu_steps()
    steps = steps[: steps.index("megakernel") + 1]
    ctx = PassContext(config={"megakernel": mode, "megakernel.tile": str(tile)})
    return run_pipeline(parse_file(SAMPLES / sample), build_pipeline(steps), ctx)


def cpu_steps() -> list[str]:
    """The default CPU pipeline; its megakernel passes act only when the config asks."""
    return default_pipeline(parse_target("llvm"), 2)


def build_sample(sample: str, out: Path, mode: str | None) -> Path:
    """`sample` compiled to a shared library, as a megakernel (`mode`) or kernel by kernel."""
    ctx = PassContext(config={"megakernel": mode} if mode else {})
    mod = run_pipeline(parse_file(SAMPLES / sample), build_pipeline(cpu_steps()), ctx)
    build(mod, out, parse_target("llvm"), 2)
    return out
