"""`tirc tune` end to end on small functions: records, progress as JSON, a no-op re-run,
`--replay`, builds with `--tuned` (and `-MD`), records of another CPU, sizes dispatched at run
time, exit status 1 when nothing valid was measured, and bad options."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tirc.runtime as rt
from conftest import tirc_executable
from tune_support import MATMUL

DYNAMIC = textwrap.dedent('''
    @T.prim_func
    def scale(a: T.handle, c: T.handle):
        T.func_attr({"global_symbol": "scale", "tir.noalias": True})
        n = T.int64()
        A = T.match_buffer(a, (n, 32), "float32")
        C = T.match_buffer(c, (n, 32), "float32")
        for i, j in T.grid(n, 32):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(3)


    @S.schedule("scale", target="llvm")
    def scale_sched(sch):
        b = sch.get_block("C")
        i, j = sch.get_loops(b)
        t0, t1 = sch.sample_perfect_tile(i, n=2, max_innermost_factor=4)
        i0, i1 = sch.split(i, factors=[t0, t1])
        sch.parallel(i0)
    ''')

CRASHING = textwrap.dedent('''
    @T.prim_func
    def f(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
        T.func_attr({"global_symbol": "f", "tir.noalias": True})
        for i in range(64):
            with T.block("C"):
                vi = T.axis.spatial(64, i)
                C[T.Cast("int64", A[vi] * T.float32(0)) + vi * 400000000] = A[vi]


    @S.schedule("f", target="llvm")
    def f_sched(sch):
        b = sch.get_block("C")
        (i,) = sch.get_loops(b)
        t0, t1 = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
        sch.split(i, factors=[t0, t1])
    ''')


def tirc(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = tirc_executable()
    if exe is None:
        pytest.skip("the tirc console script is not installed")
    return subprocess.run([exe, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    d = tmp_path_factory.mktemp("tune")
    (d / "mm.tir").write_text(MATMUL)
    done = tirc("tune", "mm.tir", "-o", "mm.tune.json", "--trials", "5", "--budget", "120s",
                "--progress", "json", cwd=d)
    return d, done


def test_tune_writes_records_and_json_progress(tuned):
    d, done = tuned
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    trials = [e for e in events if e["event"] == "trial"]
    assert trials and trials[-1]["unit"] == "GFLOP/s" and trials[-1]["best"] > 0
    assert {"trials", "best_seconds", "roofline", "eta", "elapsed"} <= set(trials[-1])
    lines = [json.loads(x) for x in (d / "mm.tune.json").read_text().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["machine"]["cores"] >= 1
    assert lines[-1]["kind"] == "done"
    first = lines[1]
    assert first["kind"] == "trial" and first["func"] == "mm" and set(first["decisions"]) == \
        {"tile_i", "tile_j", "u"}
    searched = [x for x in lines if x["kind"] == "trial" and x["phase"] == "search"]
    assert 5 <= len(searched) <= 5 + 6  # the trial limit is checked between batches


def test_rerun_is_a_no_op(tuned):
    d, _ = tuned
    before = (d / "mm.tune.json").read_text()
    again = tirc("tune", "mm.tir", "-o", "mm.tune.json", "--trials", "5", "--budget", "120s",
                 cwd=d)
    assert again.returncode == 0
    assert "(tuned earlier)" in again.stderr
    assert (d / "mm.tune.json").read_text() == before


def test_replay_and_tuned_build(tuned):
    d, _ = tuned
    replay = tirc("tune", "mm.tir", "-o", "mm.tune.json", "--replay", cwd=d)
    assert replay.returncode == 0, replay.stderr
    assert "# mm: tuned" in replay.stdout and "decision=[" in replay.stdout
    (d / "replayed.tir").write_text(MATMUL.split("@S.schedule")[0] + replay.stdout)
    build = tirc("mm.tir", "-O3", "--tuned", "mm.tune.json", "-o", "mm.so", "-MD", cwd=d)
    assert build.returncode == 0, build.stderr
    assert "mm.tune.json" in (d / "mm.d").read_text()
    pasted = tirc("replayed.tir", "-O3", "--emit", "tir", "-o", "pasted.tir", cwd=d)
    via_records = tirc("mm.tir", "-O3", "--tuned", "mm.tune.json", "--emit", "tir", "-o",
                       "records.tir", cwd=d)
    assert pasted.returncode == via_records.returncode == 0
    assert (d / "pasted.tir").read_text() == (d / "records.tir").read_text()
    lib = rt.load(d / "mm.so")
    a, b = (np.random.default_rng(k).standard_normal((64, 64)).astype("float32")
            for k in (1, 2))
    np.testing.assert_allclose(lib.mm(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_records_of_another_cpu_need_asking(tuned):
    d, _ = tuned
    lines = (d / "mm.tune.json").read_text().splitlines()
    head = json.loads(lines[0])
    head["machine"]["cpu"] = "Some Other CPU"
    (d / "other.tune.json").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    tirc("mm.tir", "-O3", "--emit", "tir", "-o", "default.tir", cwd=d)
    left_out = tirc("mm.tir", "-O3", "--tuned", "other.tune.json", "--emit", "tir", "-o",
                    "other.tir", cwd=d)
    assert "1 run(s) measured on another CPU left out (--tuned-any-cpu uses them)" in \
        left_out.stderr
    assert (d / "other.tir").read_text() == (d / "default.tir").read_text()
    used = tirc("mm.tir", "-O3", "--tuned", "other.tune.json", "--tuned-any-cpu", "--emit",
                "tir", "-o", "any.tir", cwd=d)
    assert used.returncode == 0 and "warning" not in used.stderr
    tirc("mm.tir", "-O3", "--tuned", "mm.tune.json", "--emit", "tir", "-o", "own.tir", cwd=d)
    assert (d / "any.tir").read_text() == (d / "own.tir").read_text()


def test_sizes_dispatch_at_run_time(tmp_path):
    (tmp_path / "scale.tir").write_text(DYNAMIC)
    done = tirc("tune", "scale.tir", "--dim", "n=2,64", "--trials", "4", "--budget", "120s",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "scale[n=2]: best" in done.stderr and "scale[n=64]: best" in done.stderr
    build = tirc("scale.tir", "-O3", "--tuned", "scale.tune.json", "-o", "scale.so",
                 cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    text = tirc("scale.tir", "-O3", "--tuned", "scale.tune.json", "--passes",
                "apply-schedules", "-o", "-", cwd=tmp_path).stdout
    assert "if n <= T.int64(11):" in text
    lib = rt.load(tmp_path / "scale.so")
    for n in (1, 7, 11, 12, 100):
        a = np.random.default_rng(n).standard_normal((n, 32)).astype("float32")
        np.testing.assert_allclose(lib.scale(a), a * 3)


def test_nothing_valid_exits_1(tmp_path):
    (tmp_path / "f.tir").write_text(CRASHING)
    done = tirc("tune", "f.tir", "--trials", "3", "--budget", "60s", cwd=tmp_path)
    assert done.returncode == 1
    assert "f: no valid candidate was measured" in done.stderr
    lines = [json.loads(x) for x in (tmp_path / "f.tune.json").read_text().splitlines()]
    assert [x["status"] for x in lines if x["kind"] == "trial"][0] == "crash"


@pytest.mark.parametrize("args, message", [
    (("--budget", "soon"), "--budget wants a positive time such as 60s, 5m or 1h, got 'soon'"),
    (("--dim", "n=x"), "--dim wants NAME=SIZE[,SIZE...] with positive sizes, got 'n=x'"),
    (("--target", "cuda -arch=sm_90"), "--target must be an llvm target, got 'cuda -arch=sm_90'"),
])
def test_bad_options(tmp_path, args, message):
    (tmp_path / "mm.tir").write_text(MATMUL)
    done = tirc("tune", "mm.tir", *args, cwd=tmp_path)
    assert done.returncode == 1 and message in done.stderr


def test_nothing_to_tune_and_missing_sizes(tmp_path):
    plain = MATMUL.split("@S.schedule")[0].replace(
        '"tir.noalias": True', '"tir.noalias": True, "tirc.schedule": "none"')
    (tmp_path / "plain.tir").write_text(plain)
    done = tirc("tune", "plain.tir", cwd=tmp_path)
    assert done.returncode == 1
    assert "nothing to tune: no function has schedule decisions for this target" in done.stderr
    (tmp_path / "scale.tir").write_text(DYNAMIC)
    done = tirc("tune", "scale.tir", cwd=tmp_path)
    assert done.returncode == 1
    assert "has the symbolic size 'n': give the sizes to tune at with --dim n=N[,N...]" in \
        done.stderr
    missing = tirc("mm.tir", "--tuned", "nope.json", cwd=tmp_path)
    assert missing.returncode == 1 and "no such file: nope.json" in missing.stderr
