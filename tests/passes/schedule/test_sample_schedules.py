"""The schedules of samples/schedules/ keep each sample's meaning (interpreter, small sizes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tirc.frontend import parse

ROOT = Path(__file__).resolve().parents[3]
SCHEDULES = ROOT / "samples" / "schedules"

CASES = [
    ("matmul", {}),
    ("batch_matmul_nt", {"batch": 2}),
    ("softmax", {"n": 3}),
    ("layer_norm", {"n": 2}),
    ("conv2d_nchw", {"n": 1}),
    ("stencil_5pt", {"h": 5, "w": 11}),
]


@pytest.mark.parametrize("name, sizes", CASES, ids=[c[0] for c in CASES])
def test_sample_schedule(sched_file, name: str, sizes: dict[str, int]):
    r = sched_file(str(SCHEDULES / f"{name}.tir"))
    assert [s.func_name for s in r.before.schedules] == [name]
    assert r.after.schedules == ()
    r.check_same(name, seeds=(0,), sizes=sizes, rtol=1e-4)


def test_sgemm_schedule_at_32(sched):
    """The benchmark's schedule, on the same kernel at 32x32x32."""
    text = (SCHEDULES / "sgemm.tir").read_text().replace("1024", "32")
    r = sched(text)
    out = r.text("sgemm")
    assert 'B_global = T.alloc_buffer((1, 32, 32), "float32")' in out
    assert "for j_1 in T.vectorized(32):" in out
    r.check_same("sgemm", seeds=(0,), rtol=1e-4)


def test_schedule_file_alone_has_only_schedules():
    mod = parse((SCHEDULES / "stencil_5pt.tir").read_text(),
                str(SCHEDULES / "stencil_5pt.tir"))
    own = [f for f in mod.functions.values()
           if f.span is not None and f.span.file.endswith("schedules/stencil_5pt.tir")]
    assert own == []
