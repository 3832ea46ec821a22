"""The 8-layer MLP chain of benchmarks/megakernel.py (25 parameters: make-entry and the
megakernel runtime nest its host function deeper than Python's default recursion limit) compiles
from the command line as a dynamic megakernel, with no hand-raised limit, and computes what the
kernel-by-kernel build and numpy compute."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from click.testing import Result
from script_modules import megakernel_benchmark

ROOT = Path(__file__).resolve().parents[2]
LAYERS, DIM, BATCH = 8, 64, 3


def _chain_source() -> str:
    """The chain as the megakernel benchmark generates it, at DIM (small, so it runs fast)."""
    bench = megakernel_benchmark()
    return bench.source(LAYERS, DIM)  # type: ignore[no-any-return]


def _inputs() -> list[np.ndarray]:
    """x, then W_i, b_i, g_i per layer (float32, seeded)."""
    rng = np.random.default_rng(7)
    args = [rng.standard_normal((BATCH, DIM)).astype("float32")]
    for _ in range(LAYERS):
        args += [(rng.standard_normal((DIM, DIM)) / np.sqrt(DIM)).astype("float32"),
                 (rng.standard_normal(DIM) * 0.1).astype("float32"),
                 rng.uniform(0.5, 1.5, DIM).astype("float32")]
    return args


def _numpy_chain(args: list[np.ndarray]) -> np.ndarray:
    """The chain in float64: matmul, bias, erf GELU, RMS norm (epsilon 1e-5)."""
    erf = np.vectorize(math.erf)
    x = args[0].astype("float64")
    for k in range(1, len(args), 3):
        w, b, g = (a.astype("float64") for a in args[k:k + 3])
        a = x @ w + b
        e = 0.5 * a * (1 + erf(a / math.sqrt(2.0)))
        x = e / np.sqrt(np.mean(e * e, axis=-1, keepdims=True) + 1e-5) * g
    return x


def test_dynamic_megakernel_chain_compiles_and_matches(
        tmp_path: Path, run_tirc: Callable[..., subprocess.CompletedProcess[str]],
        invoke: Callable[..., Result]) -> None:
    from tirc.runtime import load

    src = tmp_path / "chain8.tir"
    src.write_text(_chain_source())
    done = run_tirc(src, "-O0", "-fmegakernel=dynamic", "-o", tmp_path / "mk.so")
    assert done.returncode == 0, done.stderr
    assert "internal compiler error" not in done.stderr
    plain = invoke(src, "-O0", "-o", tmp_path / "pk.so")
    assert plain.exit_code == 0, plain.output
    args = _inputs()
    got = load(tmp_path / "mk.so").main(*args)  # type: ignore[attr-defined]
    want = load(tmp_path / "pk.so").main(*args)  # type: ignore[attr-defined]
    assert got.shape == (BATCH, DIM)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, _numpy_chain(args), rtol=1e-3, atol=1e-3)


def _low_limit_tirc(*args: object) -> subprocess.CompletedProcess[str]:
    """Run the `tirc` command line in a child whose recursion limit is 150 (not headroom for any
    deep walk), so only work moved onto the big-stack threads can succeed."""
    code = ("import sys\n"
            "from tirc.cli.main import cli\n"
            "sys.setrecursionlimit(150)\n"
            "cli(sys.argv[1:], prog_name='tirc')\n")
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_cli_compile_does_not_depend_on_the_callers_recursion_limit(tmp_path: Path) -> None:
    src = tmp_path / "chain8.tir"
    src.write_text(_chain_source())
    done = _low_limit_tirc(src, "-O0", "-fmegakernel=dynamic", "--print-after", "make-entry",
                           "--emit", "ll", "-o", tmp_path / "mk.ll")
    assert done.returncode == 0, done.stderr[-3000:]
    dump = done.stdout + done.stderr
    assert dump.startswith("# IR after make-entry\n")
    assert dump.count('"tirc.arg", args, ') == 2 + 3 * LAYERS  # x, y and 3 per layer
    assert "define" in (tmp_path / "mk.ll").read_text()


def test_cli_fmt_does_not_depend_on_the_callers_recursion_limit(tmp_path: Path) -> None:
    from tirc.cli.source_format import format_source
    from tirc.frontend import parse

    lets = "".join(f"    v{k}: T.float32 = v{k - 1} + T.float32(1)\n" for k in range(1, 600))
    text = parse('@T.prim_func\ndef deep(X: T.Buffer((1,), "float32"), '
                 'Y: T.Buffer((1,), "float32")):\n    v0: T.float32 = X[0]\n' + lets +
                 "    Y[0] = v599\n").script()
    text = format_source(text)
    (tmp_path / "deep.tir").write_text(text)
    done = _low_limit_tirc("fmt", "--check", tmp_path / "deep.tir")
    assert done.returncode == 0, done.stderr[-3000:]
    (tmp_path / "messy.tir").write_text(text.replace("v599: T.float32 = v598 + T.float32(1)",
                                                     "v599: T.float32 = (v598 + T.float32(1))"))
    done = _low_limit_tirc("fmt", tmp_path / "messy.tir")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == text
