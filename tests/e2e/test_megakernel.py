"""Every graph sample compiled with `-fmegakernel=static` and `=dynamic`: equal to the
kernel-by-kernel build and to numpy at several shapes, and over 200 repeated calls in one
process with 1, 2 and more threads than cores (no hang, no wrong result), and with a team
smaller than the threads asked for; the watchdog turns a planted hang into an error naming the
task and event; the data-dependent MoE sample."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from graph_support import random_inputs
from script_modules import sample_references
from tirc.backends.link import c_compiler
from tirc.cli.main import cli
from tirc.frontend import parse_file
from tirc.runtime import load

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes" / "megakernel"))
from megakernel_support import SAMPLES  # noqa: E402

MODES = ("static", "dynamic", "none")
SHAPES = {"mlp": [{"n": 1}, {"n": 7}, {"n": 33}],
          "mlp_dps": [{"n": 1}, {"n": 5}, {"n": 16}],
          "transformer_block": [{"b": 1, "s": 1}, {"b": 2, "s": 5}, {"b": 1, "s": 17}],
          "resnet_block": [{"n": 1}, {"n": 3}]}
SMALL = {"mlp": {"n": 3}, "mlp_dps": {"n": 2}, "transformer_block": {"b": 1, "s": 3},
         "resnet_block": {"n": 2}}
THREADS = (1, 2, 2 * (os.cpu_count() or 2) + 1)
RUNNER = """
import sys, numpy as np
from tirc.runtime import load
lib = load(sys.argv[1])
data = np.load(sys.argv[2])
args = [data[f"a{i}"] for i in range(int(data["nargs"]))]
want = data["want"]
for rep in range(int(sys.argv[3])):
    if not np.allclose(lib.main(*args), want, rtol=1e-5, atol=1e-5):
        sys.exit(f"wrong result at call {rep}")
print("ok")
"""


REFS = sample_references()
GRAPH_SAMPLES = {s.name: s for s in REFS.GRAPH_SAMPLES}


def test_every_graph_sample_has_shapes() -> None:
    assert set(SHAPES) == set(GRAPH_SAMPLES) == set(SMALL)


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Every graph sample built by `tirc SAMPLE -o OUT.so [-fmegakernel=MODE]` (with the C
    library of its external functions where it calls any)."""
    d = tmp_path_factory.mktemp("megakernel")
    extern = SAMPLES / "mlp_dps_extern.c"
    subprocess.run([*c_compiler(), "-shared", "-fPIC", "-O2", "-o", str(d / "libmlp_dps_extern.so"),
                    str(extern)], check=True, capture_output=True, text=True)
    out = {}
    for name, sample in GRAPH_SAMPLES.items():
        link = ["-l", "mlp_dps_extern", "-L", str(d)] if sample.externs else []
        for mode in MODES:
            path = d / f"{name}_{mode}.so"
            flags = [] if mode == "none" else [f"-fmegakernel={mode}"]
            r = CliRunner().invoke(cli, [str(sample.path), "-o", str(path), *flags, *link],
                                   prog_name="tirc")
            assert r.exit_code == 0, r.output
            out[(name, mode)] = path
    return out


def _outputs(got: object) -> list[np.ndarray]:
    """A function's result as a list of arrays."""
    return list(got) if isinstance(got, tuple) else [got]  # type: ignore[list-item]


@pytest.mark.parametrize("mode", ["static", "dynamic"])
@pytest.mark.parametrize("name", list(SHAPES))
def test_megakernel_equals_numpy_and_per_kernel_build(libs: dict[tuple[str, str], Path],
                                                      name: str, mode: str) -> None:
    sample = GRAPH_SAMPLES[name]
    mega, plain = load(libs[(name, mode)]), load(libs[(name, "none")])
    for sizes in SHAPES[name]:
        args = sample.inputs(sizes, seed=3)
        got, ref = _outputs(mega.main(*args)), _outputs(plain.main(*args))
        problem = REFS.mismatch(got, sample.expected(args))
        assert problem is None, f"{sizes}: {problem}"
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


@pytest.fixture
def omp_threads() -> Iterator[object]:
    """`omp_set_num_threads` of the OpenMP runtime the libraries use; restored afterwards."""
    gomp = ctypes.CDLL("libgomp.so.1")
    before = gomp.omp_get_max_threads()
    yield gomp.omp_set_num_threads
    gomp.omp_set_num_threads(before)


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_repeated_runs_under_thread_counts(libs: dict[tuple[str, str], Path], mode: str,
                                           omp_threads: object) -> None:
    for name, sizes in SMALL.items():
        lib = load(libs[(name, mode)])
        args = GRAPH_SAMPLES[name].inputs(sizes, seed=4)
        want = _outputs(load(libs[(name, "none")]).main(*args))
        for threads in THREADS:
            omp_threads(threads)  # type: ignore[operator]
            for rep in range(200):
                got = _outputs(lib.main(*args))
                assert all(np.allclose(g, w, rtol=1e-5, atol=1e-5) for g, w in zip(got, want)), \
                    f"{name}, {threads} threads: wrong result at call {rep}"


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_team_smaller_than_asked(libs: dict[tuple[str, str], Path], tmp_path: Path,
                                 mode: str) -> None:
    """OMP_THREAD_LIMIT below OMP_NUM_THREADS: the region gets fewer threads than it asks
    for, and the tasks are dealt over the team it got."""
    graph = parse_file(SAMPLES / "mlp.tir")
    args = random_inputs(graph, {"n": 5}, seed=4)
    want = _outputs(load(libs[("mlp", "none")]).main(*args))[0]
    data = tmp_path / "mlp.npz"
    np.savez(data, nargs=len(args), want=want, **{f"a{i}": a for i, a in enumerate(args)})
    env = {**os.environ, "OMP_NUM_THREADS": "4", "OMP_THREAD_LIMIT": "2"}
    run = subprocess.run([sys.executable, "-c", RUNNER, str(libs[("mlp", mode)]), str(data),
                          "200"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_watchdog_turns_a_planted_hang_into_an_error(tmp_path: Path, mode: str) -> None:
    import dataclasses

    from megakernel_support import cpu_steps, task_graph
    from tirc.backends import build
    from tirc.ir.stmt import For, SeqStmt, Stmt
    from tirc.ir.target import parse_target
    from tirc.ir.visitor import Mutator
    from tirc.passes.manager import run_pipeline
    from tirc.passes.megakernel.task_graph import read_task_graph
    from tirc.passes.pass_base import PassContext
    from tirc.passes.pipeline import build_pipeline
    from tirc.runtime import TircError

    mod = task_graph("mlp.tir", mode)
    third = read_task_graph(mod["main"]).tasks[-2].name  # type: ignore[arg-type]
    dropped = []

    class DropNotify(Mutator):
        """Drops the notification at the end of the second matmul's task kind (the one before
        the last)."""

        def visit_For(self, s: For) -> Stmt:
            if s.annotations.get("task") != third or not isinstance(s.body, SeqStmt):
                return s
            assert "event_notify" in str(s.body.seq[-1])
            dropped.append(s.body.seq[-1])
            return dataclasses.replace(s, body=SeqStmt(s.body.seq[:-1]))

    broken = mod.with_function("main", DropNotify().visit(mod["main"]))
    assert len(dropped) == 1
    steps = cpu_steps()
    steps = steps[steps.index("megakernel-runtime"):]
    ctx = PassContext(config={"megakernel.watchdog": "1"})
    out = run_pipeline(broken, build_pipeline(steps), ctx)
    build(out, tmp_path / "hang.so", parse_target("llvm"), 2)
    lib = load(tmp_path / "hang.so")
    args = random_inputs(parse_file(SAMPLES / "mlp.tir"), {"n": 2})
    with pytest.raises(TircError, match=rf"megakernel watchdog: task (\w+) waited more than 1 s "
                                        rf"on E_{third}_\1\[[01]\] \(counter [12]\)"):
        lib.main(*args)


def _moe_reference(x: np.ndarray, gate: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, int]:
    s = x @ gate
    routed = s.max(1) > 2
    out = np.where(routed[:, None],
                   np.maximum(np.einsum("ik,ikj->ij", x, w[s.argmax(1)]), 0), x)
    return out.astype("float32"), int(routed.sum())


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_data_dependent_moe_routing(tmp_path: Path, mode: str) -> None:
    import dataclasses

    from megakernel_support import cpu_steps
    from tirc.backends import build
    from tirc.ir.interpreter import run_prim_func
    from tirc.ir.target import parse_target
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pipeline import build_pipeline

    mod = parse_file(SAMPLES / "megakernel" / "moe_topk.tir")
    func = mod["moe_topk"]
    mod = mod.with_function("moe_topk", dataclasses.replace(
        func, attrs={**func.attrs, "megakernel": mode}))  # type: ignore[arg-type]
    steps = [s for s in cpu_steps() if s != "megakernel"]
    build(run_pipeline(mod, build_pipeline(steps)), tmp_path / "moe.so", parse_target("llvm"), 2)
    lib = load(tmp_path / "moe.so")
    rng = np.random.default_rng(0)
    routed_counts = []
    for n in (1, 9, 100):
        x = rng.standard_normal((n, 16)).astype("float32")
        gate = rng.standard_normal((16, 4)).astype("float32")
        w = rng.standard_normal((4, 16, 16)).astype("float32")
        want, routed = _moe_reference(x, gate, w)
        routed_counts.append(routed)
        if n <= 9:
            y = np.zeros_like(x)
            run_prim_func(func, [x, gate, w, y])  # type: ignore[arg-type]
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        for _ in range(100):
            np.testing.assert_allclose(lib.moe_topk(x, gate, w), want, rtol=1e-4, atol=1e-4)
    assert routed_counts == [0, 7, 75]


GATHER_OF_COMPUTED_INDICES = """
from tvm.script import relax as R

@R.function
def main(p0: R.Tensor((8, 4), "float32")) -> R.Tensor((8, 4), "float32"):
    with R.dataflow():
        full = R.full(R.shape([8, 4]), R.const(2.0, "float32"))
        unused = R.add(p0, full)
        rows = R.arange(start=7, end=-1, step=-1)
        out = R.take(R.add(full, p0), rows, axis=0)
        R.output(out)
    return out
"""


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_gather_by_indices_computed_in_the_megakernel(tmp_path: Path, mode: str,
                                                      omp_threads: object) -> None:
    """A take whose row indices another task computes: the tile conditions may not read the
    indices (they are evaluated when a producer finishes, maybe before the indices exist),
    so the gather waits for every producer tile; it hung on garbage event counts. The
    watchdog turns a hang into an error."""
    src = tmp_path / "gather.tir"
    src.write_text(GATHER_OF_COMPUTED_INDICES)
    r = CliRunner().invoke(cli, [str(src), "-o", str(tmp_path / "g.so"), f"-fmegakernel={mode}",
                                 "--pass-config", "megakernel.watchdog=2"], prog_name="tirc")
    assert r.exit_code == 0, r.output
    lib = load(tmp_path / "g.so")
    x = np.random.default_rng(0).standard_normal((8, 4)).astype("float32")
    for threads in THREADS:
        omp_threads(threads)  # type: ignore[operator]
        for _ in range(50):
            np.testing.assert_allclose(lib.main(x), (x + 2)[::-1], rtol=1e-6)
