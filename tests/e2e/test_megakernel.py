"""Graph samples compiled as megakernels (static and dynamic schedules): equal to numpy (the
reference interpreter) and to the kernel-by-kernel build at several shapes, and over 200
repeated calls in one process with 1, 2 and more threads than cores (no hang, no wrong
result)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_support import interpret, random_inputs
from tirc.frontend import parse_file
from tirc.runtime import load

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes" / "megakernel"))
from megakernel_support import SAMPLES, build_sample  # noqa: E402

SHAPES = {"mlp.tir": [{"n": 1}, {"n": 7}, {"n": 64}],
          "transformer_block.tir": [{"b": 1, "s": 1}, {"b": 2, "s": 5}, {"b": 1, "s": 33}]}
RUNNER = """
import sys, numpy as np
from tirc.runtime import load
lib = load(sys.argv[1])
data = np.load(sys.argv[2])
args = [data[f"a{i}"] for i in range(int(data["nargs"]))]
want = [data[f"w{i}"] for i in range(int(data["nwant"]))]
for rep in range(int(sys.argv[3])):
    got = lib.main(*args)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        if not np.allclose(g, w, rtol=1e-4, atol=1e-4):
            sys.exit(f"wrong result at call {rep}")
print("ok")
"""


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    out = {}
    d = tmp_path_factory.mktemp("megakernel")
    for sample in SHAPES:
        for mode in ("static", "dynamic", "none"):
            path = d / f"{sample[:-4]}_{mode}.so"
            out[(sample, mode)] = build_sample(sample, path, None if mode == "none" else mode)
    return out


@pytest.mark.parametrize("mode", ["static", "dynamic"])
@pytest.mark.parametrize("sample", list(SHAPES))
def test_megakernel_equals_numpy_and_per_kernel_build(libs: dict[tuple[str, str], Path],
                                                      sample: str, mode: str) -> None:
    mega, plain = load(libs[(sample, mode)]), load(libs[(sample, "none")])
    graph = parse_file(SAMPLES / sample)
    for sizes in SHAPES[sample]:
        args = random_inputs(graph, sizes, seed=3)
        want = interpret(graph, args)
        got, ref = mega.main(*args), plain.main(*args)
        got = got if isinstance(got, tuple) else (got,)
        ref = ref if isinstance(ref, tuple) else (ref,)
        for w, g, r in zip(want, got, ref):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2, 2 * (os.cpu_count() or 2) + 1])
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_repeated_runs_under_thread_counts(libs: dict[tuple[str, str], Path], tmp_path: Path,
                                           mode: str, threads: int) -> None:
    for sample, sizes in (("mlp.tir", {"n": 5}), ("transformer_block.tir", {"b": 1, "s": 3})):
        graph = parse_file(SAMPLES / sample)
        args = random_inputs(graph, sizes, seed=4)
        want = interpret(graph, args)
        data = tmp_path / f"{sample}.npz"
        np.savez(data, nargs=len(args), nwant=len(want),
                 **{f"a{i}": a for i, a in enumerate(args)},
                 **{f"w{i}": w for i, w in enumerate(want)})
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        run = subprocess.run([sys.executable, "-c", RUNNER, str(libs[(sample, mode)]),
                              str(data), "200"], env=env, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


def test_watchdog_turns_a_planted_hang_into_an_error(tmp_path: Path) -> None:
    import dataclasses

    from megakernel_support import cpu_steps, task_graph
    from tirc.backends import build
    from tirc.ir.stmt import For, SeqStmt, Stmt
    from tirc.ir.target import parse_target
    from tirc.ir.visitor import Mutator
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pass_base import PassContext
    from tirc.passes.pipeline import build_pipeline
    from tirc.runtime import TircError

    class DropNotify(Mutator):
        """Drops the notifications at the end of task kind `matmul` (feeding T_add_3)."""

        def visit_For(self, s: For) -> Stmt:
            if s.annotations.get("task") != "matmul" or not isinstance(s.body, SeqStmt):
                return s
            assert "event_notify" in str(s.body.seq[-1])
            return dataclasses.replace(s, body=SeqStmt(s.body.seq[:-1]))

    mod = task_graph("mlp.tir")
    broken = mod.with_function("main", DropNotify().visit(mod["main"]))
    steps = cpu_steps()
    steps = steps[steps.index("megakernel-runtime"):]
    ctx = PassContext(config={"megakernel.watchdog": "1"})
    out = run_pipeline(broken, build_pipeline(steps), ctx)
    build(out, tmp_path / "hang.so", parse_target("llvm"), 2)
    lib = load(tmp_path / "hang.so")
    args = random_inputs(parse_file(SAMPLES / "mlp.tir"), {"n": 2})
    with pytest.raises(TircError, match=r"megakernel watchdog: task T_add_3 waited more than "
                                        r"1 s on E_matmul_T_add_3\[[01]\] \(counter 1\)"):
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
