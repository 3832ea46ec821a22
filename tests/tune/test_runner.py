"""The runner process: a wrong result, a crash and a hang are each one candidate's outcome, and
the runner goes on with the next candidate."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tirc.frontend import parse
from tirc.tune.builder import build
from tirc.tune.runner import Runner

BODY = {
    "right": "C[vi] = A[vi] + T.float32(1)",
    "wrong": "C[vi] = A[vi] + T.float32(2)",
    # The index depends on the data (A * 0), so no compile-time check can prove it out of
    # bounds: the candidate crashes when it runs.
    "crash": "C[T.Cast(\"int64\", A[vi] * T.float32(0)) + vi * 400000000] = A[vi]",
}
HANG = '''
    while A[0] > T.float32(-10):
        C[0] = C[0] + T.float32(1)
'''


def source(body: str) -> str:
    return textwrap.dedent('''
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
            T.func_attr({"global_symbol": "f", "tir.noalias": True})
            for i in range(64):
                with T.block("C"):
                    vi = T.axis.spatial(64, i)
                    BODY
        ''').replace("BODY", body)


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("runner")
    texts = {k: source(v) for k, v in BODY.items()}
    texts["hang"] = source(BODY["right"]).replace(
        "    for i in range(64):", textwrap.indent(textwrap.dedent(HANG), "    ").rstrip()
        + "\n    for i in range(64):")
    paths = {}
    for name, text in texts.items():
        func = parse(text, f"{name}.tir")["f"]
        path = str(Path(out) / f"{name}.so")
        result = build(func, path, "llvm", 2)  # type: ignore[arg-type]
        assert result.status == "ok", result.error
        paths[name] = path
    return paths


def test_failures_are_recorded_and_the_runner_goes_on(libs: dict[str, str]):
    runner = Runner(min_ms=1, repeats=2)
    try:
        assert runner.set_task(libs["right"], "f", {}, 0).status == "ok"
        good = runner.time(libs["right"], "f", timeout=30)
        assert good.status == "ok" and len(good.times) == 2 and min(good.times) > 0
        wrong = runner.time(libs["wrong"], "f", timeout=30)
        assert wrong.status == "wrong"
        assert "differs from the default schedule's (max error 1)" in wrong.error
        crash = runner.time(libs["crash"], "f", timeout=30)
        assert crash.status == "crash"
        hang = runner.time(libs["hang"], "f", timeout=3)
        assert (hang.status, hang.error) == ("timeout", "no answer within 3 s")
        again = runner.time(libs["right"], "f", timeout=30)  # a new process, same reference
        assert again.status == "ok"
    finally:
        runner.stop()
