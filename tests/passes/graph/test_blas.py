"""BLAS matmuls behind `-fblas`: legalized to `R.call_dps_packed("tirc_cblas_sgemm")` (the
interpreter keeps the meaning, with numpy standing in for the C function), compiled against
scipy-openblas32 equal to numpy at every batch size, and without a CBLAS a warning and the
tiled loops."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import Result
from graph_support import SAMPLES, assert_same, interpret, kernel_calls, random_inputs, run_passes
from tirc.frontend import parse_file
from tirc.ir import IRModule
from tirc.ir.graph import GCall
from tirc.passes.graph import blas_library
from tirc.passes.graph.annotate_op_pattern import AnnotateOpPattern
from tirc.passes.graph.dead_code_elim import DeadCodeElim
from tirc.passes.graph.fuse_ops import FuseOps
from tirc.passes.graph.fuse_tir import FuseTIR
from tirc.passes.graph.legalize_ops import LegalizeOps
from tirc.passes.graph.normalize import Normalize
from tirc.passes.pass_base import PassContext
from tirc.runtime import load


def sgemm(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """What tirc_cblas_sgemm computes."""
    out[...] = x @ w


EXTERNS = {"tirc_cblas_sgemm": sgemm}


class WithBlas:
    """legalize-ops run with the pass config `-fblas` sets (not a Pass subclass, which would
    take the pass's name in the registry)."""

    name = "legalize-ops"

    def __call__(self, mod: IRModule) -> IRModule:
        return LegalizeOps()(mod, PassContext(config={"blas": "1"}))


def test_matmuls_become_blas_calls_and_keep_their_meaning() -> None:
    mod = parse_file(SAMPLES / "mlp.tir")
    mods = run_passes(mod, (Normalize(), WithBlas(), AnnotateOpPattern(), FuseOps(), FuseTIR(),
                            DeadCodeElim()))
    calls = [b.value for b in mods[2]["main"].body.blocks[0].bindings]
    packed = [c for c in calls if isinstance(c, GCall) and c.op == "call_dps_packed"]
    assert [c.args[0].symbol for c in packed] == ["tirc_cblas_sgemm"] * 3
    # the bias-and-relu epilogues fuse among themselves, the BLAS calls stay opaque
    assert kernel_calls(mods[-1]) == ["bias_relu", "fused_add_relu", "add1"]
    for n in (1, 5):
        args = random_inputs(mod, {"n": n}, seed=n)
        assert_same(mod, mods[1:], args, externs=EXTERNS)


def test_other_matmuls_keep_the_loops() -> None:
    mods = run_passes(parse_file(SAMPLES / "transformer_block.tir"), (Normalize(), WithBlas()))
    calls = [getattr(b.value, "op", None) for b in mods[-1]["main"].body.blocks[0].bindings]
    assert "call_dps_packed" in calls  # x @ weights
    assert calls.count("call_tir") > calls.count("call_dps_packed")  # attention: batched


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_fblas_library_equals_numpy(invoke: Callable[..., Result], cache: Path) -> None:
    if blas_library.find_cblas() is None:
        pytest.skip("no CBLAS here: pip install 'tirc[blas]' (make test installs it)")
    out = cache / "mlp.so"
    r = invoke(SAMPLES / "mlp.tir", "-fblas", "-O3", "-o", out)
    assert r.exit_code == 0, r.stderr
    assert "warning" not in r.stderr
    lib = load(out)
    mod = parse_file(SAMPLES / "mlp.tir")
    for n in (0, 1, 7, 64, 300):
        args = random_inputs(mod, {"n": n}, seed=n)
        want = interpret(mod, args)[0]
        np.testing.assert_allclose(lib.main(*args), want, rtol=1e-4, atol=1e-4)


def test_fblas_without_a_cblas_warns_and_uses_the_loops(
        invoke: Callable[..., Result], cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blas_library, "find_cblas", lambda: None)
    out = cache / "mlp.so"
    r = invoke(SAMPLES / "mlp.tir", "-fblas", "--print-after=legalize-ops", "-o", out)
    assert r.exit_code == 0, r.stderr
    assert "tirc: warning: -fblas: no CBLAS found" in r.stderr
    assert "call_dps_packed" not in r.stderr
    mod = parse_file(SAMPLES / "mlp.tir")
    args = random_inputs(mod, {"n": 7})
    np.testing.assert_allclose(load(out).main(*args), interpret(mod, args)[0],
                               rtol=1e-4, atol=1e-4)
