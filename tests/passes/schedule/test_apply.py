"""The apply-schedules pass: target matching, removal of applied schedules, diagnostics."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tirc.frontend import parse
from tirc.ir.diagnostics import CompileError
from tirc.ir.target import parse_target
from tirc.passes.pass_base import PassContext
from tirc.passes.registry import all_passes
from tirc.passes.schedule.apply import ApplySchedules

KERNEL = '''
@T.prim_func
def add(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] + T.float32(1)

@S.schedule("add", target="llvm")
def cpu(sch):
    b = sch.get_block("B")
    i, = sch.get_loops(b)
    sch.vectorize(i)

@S.schedule("add", target="cuda")
def gpu(sch):
    b = sch.get_block("B")
    i, = sch.get_loops(b)
    sch.bind(i, "threadIdx.x")
'''


def test_registered():
    assert all_passes()["apply-schedules"] is ApplySchedules


@pytest.mark.parametrize("target, kept, kind", [
    ("llvm -mcpu=znver5", "gpu", "T.vectorized(16)"),
    ("cuda -arch=sm_90", "cpu", 'T.thread_binding(16, thread="threadIdx.x")'),
])
def test_target_matching(target: str, kept: str, kind: str):
    mod = parse(KERNEL, "k.tir")
    out = ApplySchedules()(mod, PassContext(target=parse_target(target)))
    assert [s.name for s in out.schedules] == [kept]
    assert kind in out.script()


def test_no_target_applies_all_in_order():
    out = ApplySchedules()(parse(KERNEL, "k.tir"), PassContext())
    assert out.schedules == ()
    assert 'T.thread_binding(16, thread="threadIdx.x")' in out.script()


def test_module_without_schedules_is_unchanged():
    mod = parse(KERNEL.split("@S.schedule")[0], "k.tir")
    assert ApplySchedules()(mod, PassContext()) is mod


def test_errors_of_several_schedules_are_all_reported():
    text = KERNEL.replace('sch.vectorize(i)', 'sch.vectorize(b)').replace(
        'sch.bind(i, "threadIdx.x")', 'sch.bind(i, "warp.x")')
    with pytest.raises(CompileError) as info:
        ApplySchedules()(parse(text, "k.tir"), PassContext())
    lines = [d.header() for d in info.value.diagnostics]
    assert lines == [
        'k.tir:13:5: error: vectorize: expected a loop for loop, got block "B"',
        "k.tir:19:5: error: bind: unknown thread axis 'warp.x' (expected one of blockIdx.x, "
        "blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, vthread, vthread.x, "
        "vthread.y, vthread.z)",
    ]


def test_wrong_arguments_are_diagnostics():
    text = KERNEL.replace('sch.vectorize(i)', 'sch.vectorize(i, 4)')
    with pytest.raises(CompileError, match="k.tir:13:5: error: vectorize: too many positional "
                                           "arguments"):
        ApplySchedules()(parse(text, "k.tir"), PassContext())


def test_schedule_file_on_the_command_line(tmp_path: Path):
    kernel = tmp_path / "add.tir"
    kernel.write_text(KERNEL.split("@S.schedule")[0])
    sched = tmp_path / "add_sched.tir"
    sched.write_text('from add import add\n\n' + "@S.schedule" + KERNEL.split("@S.schedule")[1])
    tirc = Path(sys.executable).parent / "tirc"
    done = subprocess.run([str(tirc), str(kernel), "--schedule", str(sched), "-I", str(tmp_path),
                           "--passes=apply-schedules", "--emit", "tir", "-o", "-"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "for i in T.vectorized(16):" in done.stdout
