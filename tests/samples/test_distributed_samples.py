"""The multi-device samples: each parses and prints back to itself, and on the numpy-simulated
mesh of every size it is meant for, equals NumPy (and the single-device interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
from script_modules import distributed_sample_references
from tirc.frontend import parse, parse_file
from tirc.ir.dist.simulate import simulate
from tirc.ir.structural import structural_equal
from tirc.passes.manager import run_pipeline
from tirc.passes.pipeline import build_pipeline

REFS = distributed_sample_references()


def test_every_file_has_a_record() -> None:
    files = sorted(p.name for p in REFS.DIST_SAMPLES_DIR.glob("*.tir"))
    assert files == sorted(s.file for s in REFS.DIST_SAMPLES)


@pytest.mark.parametrize("name", sorted(REFS.BY_NAME))
def test_sample_round_trips(name: str) -> None:
    mod = parse_file(str(REFS.BY_NAME[name].path))
    text = mod.script()
    assert structural_equal(parse(text), mod)
    assert parse(text).script() == text


@pytest.mark.parametrize("name", sorted(REFS.BY_NAME))
def test_sample_on_simulated_meshes(name: str) -> None:
    sample = REFS.BY_NAME[name]
    mod = parse_file(str(sample.path))
    inputs = sample.make_inputs(sample.sizes, np.random.default_rng(0))
    want = sample.reference(*inputs)
    for size in sample.meshes:
        low = run_pipeline(mod, build_pipeline(
            ["normalize", f"propagate-sharding{{mesh={size}}}", "lower-sharding"]))
        got = simulate(low, sample.func, *inputs)
        got = list(got) if isinstance(got, tuple) else [got]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"mesh {size}")
