"""The comparison helpers of samples/references.py catch the failures they exist to catch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from script_modules import sample_references

ROOT = Path(__file__).resolve().parents[2]


REFS = sample_references()


def test_unwritten_output_elements_fail() -> None:
    sample = REFS.BY_NAME["row_sum"]
    inputs = sample.inputs({"m": 4, "n": 3})
    expected = sample.expected(inputs)
    args = sample.arguments(inputs, expected)
    out = args[1]
    out[:3] = expected[0][:3]
    assert REFS.mismatch([out], expected) == (
        f"output 0: 1 of 4 elements differ; first at (3,): got nan, expected {expected[0][3]} "
        f"(max abs error nan)")


def test_shape_and_dtype_must_match() -> None:
    want = np.zeros((2, 3), np.float32)
    assert REFS.mismatch([np.zeros((3, 2), np.float32)], [want]) == (
        "output 0: expected float32[2, 3], got float32[3, 2]")
    assert REFS.mismatch([np.zeros((2, 3), np.float64)], [want]) == (
        "output 0: expected float32[2, 3], got float64[2, 3]")


def test_tolerance_is_by_dtype() -> None:
    want = np.ones(4, np.float32)
    assert REFS.mismatch([want + np.float32(5e-5)], [want]) is None
    assert REFS.mismatch([want + np.float32(1e-3)], [want]) is not None
    assert REFS.tolerance("int32") == (0.0, 0.0)
    assert REFS.tolerance(np.dtype("float16")) == (1e-2, 1e-2)


@pytest.mark.parametrize("name", sorted(REFS.BY_NAME))
def test_inputs_are_seeded_and_outputs_sized(name: str) -> None:
    sample = REFS.BY_NAME[name]
    for sizes in (sample.interp_sizes, *sample.compiled_sizes):
        first, again = sample.inputs(sizes, seed=5), sample.inputs(sizes, seed=5)
        assert all(np.array_equal(a, b) for a, b in zip(first, again))
        expected = sample.expected(first)
        assert all(np.isfinite(e).all() for e in expected)
        args = sample.arguments(first, expected)
        assert len(args) == len(first) + len(sample.outputs)
        if sample.level == "loop":
            assert [a.shape for a in sample.output_values(args)] == [e.shape for e in expected]
            assert REFS.mismatch(sample.output_values(args), expected) is not None


def test_dynamic_samples_have_several_compiled_sizes() -> None:
    dynamic = [s for s in REFS.LOOP_SAMPLES if s.is_dynamic]
    assert len(dynamic) >= 2
    assert all(len(s.compiled_sizes) >= 2 for s in dynamic)
