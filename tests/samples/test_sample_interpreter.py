"""The reference interpreter runs every sample on seeded random inputs and agrees with NumPy."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from script_modules import sample_references
from tirc.ir import IRModule

ROOT = Path(__file__).resolve().parents[2]


REFS = sample_references()
frontend = pytest.importorskip("tirc.frontend", reason="the frontend is not written yet")
interpreter = pytest.importorskip("tirc.ir.interpreter", reason="no interpreter yet")


@cache
def _module(name: str) -> IRModule:
    return frontend.parse_file(str(REFS.BY_NAME[name].path))


@pytest.mark.parametrize("name", sorted(s.name for s in REFS.LOOP_SAMPLES))
def test_loop_sample_matches_numpy(name: str) -> None:
    sample = REFS.BY_NAME[name]
    inputs = sample.inputs(sample.interp_sizes, seed=1)
    expected = sample.expected(inputs)
    args = sample.arguments(inputs, expected)
    interpreter.Interpreter(_module(name)).call(sample.func, *args)
    assert REFS.mismatch(sample.output_values(args), expected) is None
    untouched = [a for k, a in enumerate(args) if k not in sample.outputs]
    assert all(np.array_equal(a, b) for a, b in zip(untouched, inputs))


@pytest.mark.parametrize("name", sorted(s.name for s in REFS.GRAPH_SAMPLES))
def test_graph_sample_matches_numpy(name: str) -> None:
    sample = REFS.BY_NAME[name]
    inputs = sample.inputs(sample.interp_sizes, seed=1)
    result = interpreter.run_graph_func(_module(name), sample.func, inputs,
                                        externs=sample.externs)
    assert REFS.mismatch([np.asarray(result)], sample.expected(inputs)) is None


def test_one_dynamic_kernel_serves_several_sizes() -> None:
    sample = REFS.BY_NAME["row_sum"]
    kernel = interpreter.Interpreter(_module("row_sum")).prim_func(sample.func)
    for sizes in ({"m": 1, "n": 1}, {"m": 3, "n": 11}, {"m": 8, "n": 2}):
        inputs = sample.inputs(sizes)
        expected = sample.expected(inputs)
        args = sample.arguments(inputs, expected)
        kernel(*args)
        assert REFS.mismatch(sample.output_values(args), expected) is None


def test_mlp_loop_kernel_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 128)).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    y = np.full((4, 128), np.nan, dtype=np.float32)
    interpreter.Interpreter(_module("mlp")).call("bias_relu", x, b, y)
    assert REFS.mismatch([y], [np.maximum(x + b, 0)]) is None


def test_stencil_reads_no_neighbour_of_the_boundary() -> None:
    """A 1-row grid is all boundary: a lazy T.if_then_else copies it without reading A[-1]."""
    sample = REFS.BY_NAME["stencil_5pt"]
    a = np.arange(5, dtype=np.float32).reshape(1, 5)
    out = np.full_like(a, np.nan)
    interpreter.Interpreter(_module("stencil_5pt")).call(sample.func, a, out)
    assert np.array_equal(out, a)
