"""The GPU pipeline, and every GPU sample lowered by it run in lockstep equal to NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_support import REFS, SAMPLE_IDS, SAMPLES, lower, sample_module
from tirc.ir.interpreter import Interpreter
from tirc.ir.interpreter.gpu import check_races
from tirc.ir.target import parse_target
from tirc.passes.pipeline import default_pipeline
from tirc.passes.registry import all_passes


def _gpu_steps(opt_level: int) -> list[str]:
    """The default pipeline of a cuda target."""
    return default_pipeline(parse_target("cuda"), opt_level)


def test_pipeline_lists_the_steps_in_order() -> None:
    o0 = _gpu_steps(0)
    assert o0[:3] == ["verify", "static-check", "apply-schedules"]
    assert o0[o0.index("lower-init") - 2:] == [
        "gpu-lower-cross-thread-reduction", "bounds-check", "lower-init", "lower-blocks",
        "compact-buffers", "lower-layouts", "flatten-buffers", "inject-vthread",
        "gpu-thread-binding", "gpu-launch-dims", "gpu-storage-scope", "gpu-storage-sync",
        "gpu-split-host-device", "gpu-bounds-record", "verify-gpu"]
    o2 = _gpu_steps(2)
    assert o2[o2.index("flatten-buffers") + 1:] == [
        "simplify", "inject-vthread", "gpu-thread-binding", "gpu-launch-dims",
        "gpu-storage-scope", "gpu-storage-sync", "vectorize", "unroll", "simplify",
        "gpu-split-host-device", "gpu-bounds-record", "verify-gpu"]


def test_gpu_passes_are_registered_under_their_names() -> None:
    registered = all_passes()
    for name in ("gpu-lower-cross-thread-reduction", "inject-vthread",
                 "gpu-thread-binding", "gpu-launch-dims",
                 "gpu-storage-scope", "gpu-storage-sync", "gpu-split-host-device",
                 "gpu-bounds-record", "verify-gpu"):
        assert registered[name].name == name


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("sample", SAMPLES, ids=SAMPLE_IDS)
def test_lowered_sample_runs_in_lockstep_equal_to_numpy(sample, opt_level: int) -> None:
    inputs = sample.inputs(sample.interp_sizes)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    check_races(lower(sample_module(sample.name), opt_level=opt_level), sample.func, args)
    assert sample.matches(args, want), sample.max_error(args, want)


@pytest.mark.parametrize("sample", SAMPLES, ids=SAMPLE_IDS)
def test_source_means_the_same_in_the_serial_interpreter(sample) -> None:
    inputs = sample.inputs(sample.interp_sizes, seed=1)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    Interpreter(sample_module(sample.name)).call(sample.func, *args)
    assert sample.matches(args, want)


def test_lowered_sample_with_other_sizes() -> None:
    sample = REFS.gpu_sample("matmul_tiled")  # every tile edge partial
    sizes = {"m": 17, "k": 5, "n": 31}
    inputs = sample.inputs(sizes, seed=3)
    want = sample.reference(*inputs)
    args = sample.arguments(inputs, want)
    check_races(lower(sample_module(sample.name)), sample.func, args)
    np.testing.assert_allclose(args[2], want[0], rtol=1e-4, atol=1e-4)
