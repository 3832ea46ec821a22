"""R.image.affine_grid (TVM's, TOPI's formula): the grid of theta[n] @ (x, y, 1) over an
image's normalized coordinates, through the corners or the pixel centers; the interpreter
against the identity matrix's grid worked out by hand, compiled at -O0 and -O3 against the
interpreter, and the diagnostics for a wrong theta or size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_levels, functions_module, normalize_diagnostic
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter

THETA = 'theta: R.Tensor((2, 2, 3), "float32")'
CASES = {
    "corners": (THETA, "R.image.affine_grid(theta, (3, 5))"),
    "centers": (THETA, "R.image.affine_grid(theta, size=(4, 2), align_corners=False)"),
}


def test_identity_grid_is_the_coordinates() -> None:
    """theta = [[1, 0, 0], [0, 1, 0]]: out[0] is x (along the width), out[1] is y."""
    eye = np.tile(np.array([[1, 0, 0], [0, 1, 0]], "float32"), (2, 1, 1))
    mod = parse(functions_module(CASES))
    grid = Interpreter(mod).call("corners", eye)
    assert grid.shape == (2, 2, 3, 5)
    np.testing.assert_allclose(grid[0, 0], np.tile([-1, -0.5, 0, 0.5, 1], (3, 1)))
    np.testing.assert_allclose(grid[1, 1], np.tile([[-1], [0], [1]], (1, 5)))
    grid = Interpreter(mod).call("centers", eye)
    np.testing.assert_allclose(grid[0, 1, :, 0], [-0.75, -0.25, 0.25, 0.75])
    np.testing.assert_allclose(grid[0, 0, 0], [-0.5, 0.5])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    return compile_levels(functions_module(CASES), tmp_path_factory.mktemp("affine"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    path, libs = built
    theta = np.random.default_rng(12).standard_normal((2, 2, 3)).astype("float32")
    want = Interpreter(parse(path.read_text())).call(name, theta.copy())
    for level, lib in libs.items():
        np.testing.assert_allclose(getattr(lib, name)(theta.copy()), want, rtol=1e-5,
                                   atol=1e-6, err_msg=f"{name} -O{level}")


@pytest.mark.parametrize("params, body, message", [
    ('theta: R.Tensor((2, 3, 3), "float32")', "R.image.affine_grid(theta, (4, 4))",
     "R.image.affine_grid: 'data' must be a batch of 2x3 matrices (N, 2, 3), got (2, 3, 3)"),
    (THETA, "R.image.affine_grid(theta, (1, 4))",
     "R.image.affine_grid: 'align_corners' needs a height of at least 2, got 1"),
    ('theta: R.Tensor((2, 2, 3), "int32")', "R.image.affine_grid(theta, (4, 4))",
     "R.image.affine_grid: needs a floating-point tensor, got int32"),
])
def test_wrong_calls_are_diagnostics(tmp_path: Path, params: str, body: str,
                                     message: str) -> None:
    err = normalize_diagnostic(tmp_path, functions_module({"main": (params, body)}))
    assert err.message == message
