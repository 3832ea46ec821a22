"""The graph samples through the graph steps and the CPU pipeline into one .so each, run at
several values of every symbolic size and compared with the numpy reference interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from graph_support import SAMPLES, compile_sample, interpret, random_inputs
from tirc.frontend import parse_file
from tirc.runtime import TircError


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> object:
    return compile_sample("mlp.tir", tmp_path_factory.mktemp("mlp") / "mlp.so")


@pytest.fixture(scope="module")
def block(tmp_path_factory: pytest.TempPathFactory) -> object:
    return compile_sample("transformer_block.tir", tmp_path_factory.mktemp("tb") / "tb.so")


def compare(lib: object, sample: str | Path, sizes: dict[str, int]) -> None:
    graph = parse_file(SAMPLES / sample)
    args = random_inputs(graph, sizes)
    want = interpret(graph, args)
    got = lib.main(*args)  # type: ignore[attr-defined]
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 7, 64, 300])
def test_mlp_one_library_every_batch_size(mlp: object, n: int) -> None:
    compare(mlp, "mlp.tir", {"n": n})


# each of b and s takes each of 1, 7, 64 and 300
@pytest.mark.parametrize("b,s", [(1, 1), (7, 3), (1, 7), (2, 64), (64, 2), (1, 300), (300, 1)])
def test_transformer_block_one_library_every_shape(block: object, b: int, s: int) -> None:
    compare(block, "transformer_block.tir", {"b": b, "s": s})


def test_wrong_shapes_are_errors_not_crashes(mlp: object) -> None:
    x = np.zeros((3, 63), "float32")
    args = random_inputs(parse_file(SAMPLES / "mlp.tir"), {"n": 3})
    with pytest.raises((ValueError, TircError), match="63"):
        mlp.main(x, *args[1:])  # type: ignore[attr-defined]


def test_unoptimized_pipeline_gives_the_same(tmp_path: Path) -> None:
    lib = compile_sample("mlp.tir", tmp_path / "mlp0.so", opt_level=0)
    compare(lib, "mlp.tir", {"n": 5})


@pytest.mark.parametrize("name", ["tuples.tir", "pass_through.tir"])
def test_fused_tuples_and_tir_vars_compile(tmp_path: Path, name: str) -> None:
    """Kernels fused across tuples, projections and tir_vars, compiled, at every size."""
    path = Path(__file__).parent / name
    lib = compile_sample(path, tmp_path / "t.so", opt_level=3)
    for n in (1, 7, 64, 300):
        compare(lib, path, {"n": n})
