"""The CPU megakernel in LLVM IR: one never-inlined function per task kind, its compute in
another with `noalias` pointers, and no `noalias` where threads share memory (the team's
worker, the task functions around waits and notifications); waits back off briefly and yield
only after a long wait."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tirc.backends import emit
from tirc.backends.llvm.events import MAX_BACKOFF, YIELD_AFTER
from tirc.frontend import parse_file
from tirc.ir.target import parse_target
from tirc.passes.manager import run_pipeline
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import build_pipeline, default_pipeline

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _llvm_ir(mode: str, opt_level: int) -> str:
    target = parse_target("llvm")
    ctx = PassContext(opt_level=opt_level, config={"megakernel": mode})
    mod = run_pipeline(parse_file(SAMPLES / "mlp.tir"),
                       build_pipeline(default_pipeline(target, opt_level)), ctx)
    text = emit(mod, "ll", target, opt_level)
    return text if isinstance(text, str) else text.decode()


def _defines(text: str) -> dict[str, str]:
    """Each defined function's name -> its `define` line."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'define .*@"?([\w.]+)"?\(', line)
        if m:
            out[m.group(1)] = line
    return out


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_task_kinds_are_outlined_and_never_inlined(mode: str) -> None:
    text = _llvm_ir(mode, 2)
    defs = _defines(text)
    tasks = {n: d for n, d in defs.items() if ".task." in n and not n.endswith(".compute")}
    computes = {n: d for n, d in defs.items() if ".task." in n and n.endswith(".compute")}
    # mlp.tir: two matmul kinds, the ReLU between them is fused into the first.
    assert len(tasks) >= 2, sorted(defs)
    assert len(computes) >= 2, sorted(defs)
    # Attribute groups hold noinline: every outlined task and compute function refers to one.
    groups = dict(re.findall(r"^attributes (#\d+) = \{([^}]*)\}", text, re.M))
    for name, line in {**tasks, **computes}.items():
        refs = re.findall(r"#\d+", line.split(")")[-1])
        assert any("noinline" in groups.get(r, "") for r in refs), (name, line)
    for name, line in tasks.items():
        assert "noalias" not in line, (name, line)
    assert all("noalias" in line for line in computes.values())
    for name, line in defs.items():
        body = text[text.index(line):]
        body = body[:body.index("\n}\n")]
        if name in tasks:
            assert f'@"{name}.compute"(' in body or f"@{name}.compute(" in body
        if name in computes:
            # Waits and notifications stay outside the compute.
            assert "atomicrmw" not in body and "load atomic" not in body
        if "atomicrmw" in body or "load atomic" in body:
            assert "noalias" not in line, (name, line)


def test_wait_backs_off_briefly_then_yields() -> None:
    text = _llvm_ir("static", 0)
    assert MAX_BACKOFF <= 16 < YIELD_AFTER
    assert f"i32 {MAX_BACKOFF}" in text
    assert re.search(rf"icmp sge i32 %[\w.]+, {YIELD_AFTER}", text)
    assert "call i32 @sched_yield()" in text
