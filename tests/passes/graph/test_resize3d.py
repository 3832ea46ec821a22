"""`R.image.resize3d` (TVM's, TOPI's `_resize_3d`): compiled at -O0 and -O3 against the
interpreter, the interpreter against a per-element trilinear definition and against resize2d
where the depth is kept, and the diagnostics of what it refuses."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import assert_levels_agree, compile_levels, functions_module
from tirc.frontend import parse
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.passes.graph.normalize import Normalize

X = 'x: R.Tensor((2, 3, 4, 5, 6), "float32")'
CASES: dict[str, tuple[str, str]] = {
    # TVM's legalization test (test_transform_legalize_ops_image.py)
    "nearest_asymmetric_floor": (
        'x: R.Tensor((2, 3, 8, 8, 8), "float32")',
        'R.image.resize3d(x, size=(4, 6, 7), layout="NCDHW", method="nearest_neighbor", '
        'coordinate_transformation_mode="asymmetric", rounding_method="floor")'),
    "linear": (X, "R.image.resize3d(x, (3, 7, 4))"),
    "linear_align_corners_ndhwc": (
        'x: R.Tensor((1, 4, 3, 5, 2), "float32")',
        'R.image.resize3d(x, (6, 2, 7), layout="NDHWC", '
        'coordinate_transformation_mode="align_corners")'),
    "cubic": (X, 'R.image.resize3d(x, (5, 3, 8), method="cubic", cubic_alpha=-0.5)'),
    "nearest_default_rounding": (X, 'R.image.resize3d(x, (7, 2, 9), method="nearest_neighbor")'),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    return compile_levels(functions_module(CASES), tmp_path_factory.mktemp("resize3d"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    assert_levels_agree(*built, name, 5)


def _run(params: str, call: str, x: np.ndarray) -> np.ndarray:
    return Interpreter(parse(functions_module({"main": (params, call)}))).call("main", x)


def test_trilinear_against_its_definition() -> None:
    """out[n, c, z, y, x] blends the 8 clamped neighbours of the half-pixel source point
    (z' = (z + 0.5) * D / D' - 0.5, ...) with weights (1 - t) and t per axis."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype("float32")
    out_shape = (5, 2, 7)
    got = _run('x: R.Tensor((1, 2, 3, 4, 5), "float32")', "R.image.resize3d(x, (5, 2, 7))", x)
    want = np.zeros((1, 2, *out_shape))
    for c, *o in itertools.product(range(2), *map(range, out_shape)):
        src = [(p + 0.5) * n / m - 0.5 for p, n, m in zip(o, x.shape[2:], out_shape)]
        low = [int(np.floor(s)) for s in src]
        total = 0.0
        for corner in itertools.product((0, 1), repeat=3):
            weight, at = 1.0, []
            for s, lo, d, n in zip(src, low, corner, x.shape[2:]):
                weight *= (s - lo) if d else 1 - (s - lo)
                at.append(min(max(lo + d, 0), n - 1))
            total += weight * x[0, c, at[0], at[1], at[2]]
        want[(0, c, *o)] = total
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", ["linear", "cubic", "nearest_neighbor"])
def test_kept_depth_is_resize2d_of_each_slice(method: str) -> None:
    """With the depth unchanged (half-pixel: every source depth is whole) resize3d is
    resize2d of each depth slice."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5, 6)).astype("float32")
    got = _run(X, f'R.image.resize3d(x, (4, 7, 3), method="{method}", '
                  'rounding_method="round")', x)
    for z in range(4):
        slice2d = np.ascontiguousarray(x[:, :, z])
        want = _run('x: R.Tensor((2, 3, 5, 6), "float32")',
                    f'R.image.resize2d(x, (7, 3), method="{method}")', slice2d)
        np.testing.assert_allclose(got[:, :, z], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("call", "message"), [
    ('R.image.resize3d(x, (4, 5, 6), method="cubic", cubic_exclude=1)',
     "cubic_exclude=1 is not supported by resize3d"),
    ("R.image.resize3d(x, (4, 5))", "'size' needs 3 values (depth, height, width), got 2"),
    ('R.image.resize3d(x, (4, 5, 6), layout="NCHW")',
     "layout 'NCHW' is not an order of the axes NCDHW"),
])
def test_refusals(call: str, message: str) -> None:
    with pytest.raises(CompileError) as err:
        Normalize()(parse(functions_module({"main": (X, call)})))
    assert message in err.value.diagnostics[0].message
