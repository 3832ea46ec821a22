"""The pass-debugging ladder: --print-pipeline, --stop-after, --print-changed=diff,
--opt-bisect-limit (a bisection that finds a deliberately wrong pass), and --passes that never
gets lowering steps added behind the user's back."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tirc.cli.source_format import format_source
from tirc.frontend import parse
from tirc.ir.expr import FloatImm
from tirc.ir.function import PrimFunc
from tirc.ir.module import IRModule
from tirc.ir.printer import print_module
from tirc.ir.visitor import Mutator
from tirc.passes.pass_base import PassContext
from tirc.passes.pipeline import make_pass, pass_spec
from tirc.passes.vectorize import Vectorize

# A graph function over two kernels (one vectorized, one with a reduction): every kind of
# step, graph and loop level, has something to do.
SOURCE = '''from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def scale(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        for i in range(16):
            for j in T.vectorized(8):
                with T.block("scale"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

    @T.prim_func
    def row_sum(B: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
        for i, k in T.grid(16, 8):
            with T.block("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = C[vi] + B[vi, vk]

    @R.function
    def main(x: R.Tensor((16, 8), "float32")) -> R.Tensor((16,), "float32"):
        with R.dataflow():
            y = R.call_tir(scale, (x,), out_sinfo=R.Tensor((16, 8), "float32"))
            z = R.call_tir(row_sum, (y,), out_sinfo=R.Tensor((16,), "float32"))
            R.output(z)
        return z
'''


def expected(x: np.ndarray) -> np.ndarray:
    return (x * 2 + 1).sum(axis=1)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "ladder.tir"
    path.write_text(SOURCE)
    return path


def pipeline_lines(invoke: Any, *options: str) -> list[str]:
    r = invoke("--print-pipeline", *options)
    assert (r.exit_code, r.stderr) == (0, ""), r.output
    return r.stdout.splitlines()


@pytest.mark.parametrize("options", [("-O0",), ("-O2",), ("-O3", "--disable-pass", "unroll"),
                                     ("-O2", "--target", "cuda -arch=sm_90")],
                         ids=["O0", "O2", "O3-no-unroll", "cuda"])
def test_print_pipeline_is_what_a_compile_runs(invoke: Any, src: Path,
                                               options: tuple[str, ...]) -> None:
    """The printed specs are the passes `-v` reports running, each spec makes the pass it
    names, and the specs given back as --passes build the same module."""
    lines = pipeline_lines(invoke, *options)
    assert all(pass_spec(make_pass(line)) == line for line in lines)
    r = invoke(src, *options, "-v", "--emit", "tir", "-o", "-")
    assert r.exit_code == 0, r.output
    ran = re.findall(r"^tirc: running ([a-z-]+)$", r.stderr, re.M)
    assert ran == [line.split("{")[0] for line in lines]
    again = invoke(src, *options, "--passes", ",".join(lines), "--emit", "tir", "-o", "-")
    assert again.exit_code == 0, again.output
    assert again.stdout == r.stdout


def test_print_pipeline_shows_options_as_the_config_sets_them(invoke: Any) -> None:
    """--pass-config keys and -fmegakernel set options of the passes they belong to; the
    printed specs show the values the compile runs with, and a bad value prints nothing."""
    lines = pipeline_lines(invoke, "-O2", "-fmegakernel=static", "--pass-config",
                           "unroll.max-extent=8")
    assert "megakernel{mode=static,tile=1}" in lines and "unroll{max-extent=8}" in lines
    r = invoke("--print-pipeline", "--pass-config", "unroll.max-extent=x")
    assert (r.exit_code, r.stdout) == (1, "")
    assert "pass config 'unroll.max-extent' wants an integer, got 'x'" in r.stderr


def test_print_pipeline_needs_no_input_and_checks_names(invoke: Any) -> None:
    assert pipeline_lines(invoke, "--passes", "simplify") == ["simplify{remove-unit-loops=true}"]
    r = invoke("--print-pipeline", "--disable-pass", "unrol")
    assert r.exit_code == 1 and "did you mean 'unroll'?" in r.stderr
    r = invoke("-O2")
    assert r.exit_code == 2 and "Missing argument 'FILES...'" in r.stderr


@pytest.mark.parametrize("stop", ["legalize-ops", "lower-graph", "lower-blocks", "simplify",
                                  "make-entry"])
def test_stop_after_is_the_pipeline_cut_after_that_pass(invoke: Any, src: Path,
                                                        stop: str) -> None:
    """--stop-after=P writes what the pipeline up to P's first run makes, as .tir text that
    parses back to the same module."""
    lines = pipeline_lines(invoke, "-O2")
    cut = lines[:[line.split("{")[0] for line in lines].index(stop) + 1]
    r = invoke(src, "-O2", "--stop-after", stop, "-o", "-")
    assert r.exit_code == 0, r.output
    want = invoke(src, "-O2", "--passes", ",".join(cut), "-o", "-")
    assert r.stdout == want.stdout
    assert print_module(parse(r.stdout)) == r.stdout


@pytest.mark.parametrize("output", ["x.so", "x.o", "x.ll", "x.s", "x.h"])
def test_stop_after_refuses_code_outputs(invoke: Any, src: Path, tmp_path: Path,
                                         output: str) -> None:
    r = invoke(src, "--stop-after", "lower-blocks", "-o", tmp_path / output)
    assert r.exit_code == 1
    assert r.stderr.startswith("tirc: error: --stop-after=lower-blocks ends the pipeline "
                               "before code generation: only .tir text can be written")
    assert not (tmp_path / output).exists()


def apply_unified_diff(text: str, diff: str) -> str:
    """`text` with the hunks of one unified diff applied (checking every context line)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    body = diff.splitlines(keepends=True)
    k = 0
    while k < len(body):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", body[k])
        k += 1
        if m is None:
            continue
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        out += lines[at:start]
        at = start
        while k < len(body) and body[k][:1] in (" ", "-", "+"):
            tag, line = body[k][0], body[k][1:]
            if tag in " -":
                assert lines[at] == line, (lines[at], line)
                at += 1
            if tag in " +":
                out.append(line)
            k += 1
    return "".join(out + lines[at:])


def test_print_changed_diffs_replay_the_pipeline(invoke: Any, src: Path,
                                                 tmp_path: Path) -> None:
    """Applied in order to the laid-out input, the diffs give the laid-out output; they are
    made for exactly the passes that `--print-changed` dumps."""
    dumps = tmp_path / "diffs"
    r = invoke(src, "-O2", "--print-changed=diff", "--dump-dir", dumps, "-o", "-")
    assert r.exit_code == 0, r.output
    text = format_source(print_module(parse(SOURCE)))
    names = []
    for path in sorted(dumps.iterdir()):
        diff = path.read_text()
        names.append(diff.splitlines()[0])
        text = apply_unified_diff(text, diff)
    assert text == format_source(r.stdout)
    full = invoke(src, "-O2", "--print-changed", "--dump-dir", tmp_path / "full", "-o", "-")
    assert full.exit_code == 0, full.output
    assert [p.read_text().splitlines()[0] + " (diff)"
            for p in sorted((tmp_path / "full").iterdir())] == names
    assert all(p.suffix == ".diff" for p in dumps.iterdir()) and len(names) > 10


class _OffByOne(Mutator):
    """Every float constant one larger: a wrong optimisation."""

    def visit_FloatImm(self, node: FloatImm) -> FloatImm:
        return dataclasses.replace(node, value=node.value + 1.0)


def test_bisection_finds_a_wrong_pass(invoke: Any, src: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With vectorize broken, halving --opt-bisect-limit between a good and a bad build ends
    at the BISECT line that names vectorize."""
    import tirc.runtime as rt

    right = Vectorize.transform

    def wrong(self: Vectorize, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return _OffByOne().visit(right(self, func, mod, ctx))

    monkeypatch.setattr(Vectorize, "transform", wrong)
    x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    lines: dict[int, str] = {}

    def good(limit: int) -> bool:
        out = tmp_path / f"bisect{limit}.so"
        r = invoke(src, "-O2", f"--opt-bisect-limit={limit}", "-o", out)
        assert r.exit_code == 0, r.output
        lines.update({int(k): n for k, n in re.findall(r"^BISECT: running pass \((\d+)\) (\S+)$",
                                                        r.stderr, re.M)})
        return bool(np.allclose(rt.load(out).main(x), expected(x), rtol=1e-5, atol=1e-5))

    assert good(-1) is False and good(0) is True
    count = max(lines)
    lo, hi = 0, count  # the build with lo optional passes is right, with hi wrong
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if good(mid) else (lo, mid)
    assert lines[hi] == "vectorize"


def test_every_bisect_limit_builds_a_right_library(invoke: Any, src: Path,
                                                   tmp_path: Path) -> None:
    """Any prefix of the optional passes leaves a correct program: what bisection relies on."""
    import tirc.runtime as rt

    x = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)
    r = invoke(src, "-O3", "--opt-bisect-limit=-1", "-o", tmp_path / "all.so")
    count = r.stderr.count("BISECT: running pass")
    assert count >= 10 and "NOT" not in r.stderr
    for limit in range(count):
        out = tmp_path / f"limit{limit}.so"
        r = invoke(src, "-O3", f"--opt-bisect-limit={limit}", "-o", out)
        assert r.exit_code == 0, r.output
        assert r.stderr.count("BISECT: NOT running") == count - limit
        np.testing.assert_allclose(rt.load(out).main(x), expected(x), rtol=1e-5, atol=1e-5)


def test_passes_never_gets_lowering_added(invoke: Any, src: Path, tmp_path: Path) -> None:
    """--passes without the lowering steps is an error naming them; with them, a library."""
    r = invoke(src, "--passes", "lower-init,lower-blocks", "-o", tmp_path / "x.so")
    assert r.exit_code == 1 and not (tmp_path / "x.so").exists()
    assert "'main' is still a graph function" in r.stderr
    assert "the default pipeline's lowering steps it leaves out: verify, static-check, " \
        "apply-schedules, inline-calls, normalize, propagate-sharding, lower-sharding, " \
        "legalize-ops, " \
        "lower-sparse-iterations" in r.stderr
    steps = ",".join(line for line in pipeline_lines(invoke, "-O0"))
    r = invoke(src, "--passes", steps, "-o", tmp_path / "x.so")
    assert r.exit_code == 0, r.output
