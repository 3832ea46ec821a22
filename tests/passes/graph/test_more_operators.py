"""The elementwise, bitwise, logical, predicate and `_like` operators and `flatten` that TVM's
Relax tests use: each one compiled at -O0 and -O3 agrees with the reference interpreter (NumPy)
on values that reach their edges (negatives, zeros, NaN and infinities, shifts by the width or
more)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_sample
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter

HEADER = "from tvm.script import relax as R\n\n"
FLOAT_UNARY = ("floor", "ceil", "round", "trunc", "sin", "cos", "tan", "sinh", "cosh", "asin",
               "acos", "atan", "asinh", "acosh", "atanh", "erf", "square", "sign", "isnan",
               "isinf", "isfinite")
INT_BINARY = ("mod", "floor_mod", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
              "right_shift")
FLOAT_BINARY = ("mod", "floor_mod")
LOGICAL = ("logical_and", "logical_or", "logical_xor")


def module(functions: dict[str, tuple[str, str]]) -> str:
    """A module of graph functions `name: (parameters, returned expression)`."""
    out = ["from tvm.script import ir as I", HEADER, "@I.ir_module", "class Module:"]
    for name, (params, expr) in functions.items():
        out += ["    @R.function", f"    def {name}({params}):", f"        return {expr}", ""]
    return "\n".join(out)


X = 'x: R.Tensor((4, 8), "float32")'
XI = 'x: R.Tensor((4, 8), "int32")'
XYI = 'x: R.Tensor((4, 8), "int32"), y: R.Tensor((8,), "int32")'
XYF = 'x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")'
XYB = 'x: R.Tensor((4, 8), "bool"), y: R.Tensor((1, 8), "bool")'
CXY = 'c: R.Tensor((4, 1), "bool"), x: R.Tensor((4, 8), "float32"), y: R.Tensor((8,), "float32")'
FUNCTIONS: dict[str, tuple[str, str]] = {
    **{f"f_{op}": (X, f"R.{op}(x)") for op in FLOAT_UNARY},
    **{f"i_{op}": (XYI, f"R.{op}(x, y)") for op in INT_BINARY},
    **{f"g_{op}": (XYF, f"R.{op}(x, y)") for op in FLOAT_BINARY},
    **{f"b_{op}": (XYB, f"R.{op}(x, y)") for op in LOGICAL},
    "b_logical_not": ('x: R.Tensor((4, 8), "bool")', "R.logical_not(x)"),
    "i_bitwise_not": (XI, "R.bitwise_not(x)"),
    "i_sign": (XI, "R.sign(x)"),
    "i_square": (XI, "R.square(x)"),
    "t_where": (CXY, "R.where(c, x, y)"),
    "t_clip": (X, "R.clip(x, -0.5, 2)"),
    "i_clip": (XI, "R.clip(x, 0, 6)"),
    "t_zeros_like": (X, "R.zeros_like(x)"),
    "t_ones_like": (X, 'R.ones_like(x, "int32")'),
    "t_full_like": (X, 'R.full_like(x, R.const(2.5, "float32"))'),
    "t_flatten": (X, "R.flatten(x)"),
}


def values(shape: tuple[int, ...], dt: str, rng: np.random.Generator) -> np.ndarray:
    """Inputs that reach the edges of each operator."""
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dt == "int32":
        edges = np.array([0, 1, -1, 7, -7, 31, 32, 33, -32, 2**31 - 1, -2**31, 100, -100])
        return rng.choice(edges, shape).astype(dt)
    edges = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 0.999, -1.0, 1.0, 3.25, 80.0, -80.0,
                      np.nan, np.inf, -np.inf], dtype=dt)
    return np.where(rng.random(shape) < 0.5, rng.choice(edges, shape),
                    rng.uniform(-3, 3, shape).astype(dt))


def arguments(mod: Any, name: str, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for p in mod[name].params:
        s = p.struct_info
        out.append(values(tuple(int(d.value) for d in s.shape), str(s.dtype), rng))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    tmp = tmp_path_factory.mktemp("ops")
    path = tmp / "ops.tir"
    path.write_text(module(FUNCTIONS))
    return path, {level: compile_sample(path, tmp / f"ops{level}.so", level)
                  for level in (0, 3)}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on NaN, inf and x % 0
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    path, libs = built
    mod = parse_file(path)
    for seed in range(3):
        args = arguments(mod, name, np.random.default_rng(seed))
        want = Interpreter(mod).call(name, *[a.copy() for a in args])
        for level, lib in libs.items():
            got = getattr(lib, name)(*[a.copy() for a in args])
            assert got.dtype == want.dtype and got.shape == want.shape, (name, level)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} at -O{level}")


@pytest.mark.parametrize("body, message", [
    ('R.bitwise_and(x, x)', "R.bitwise_and: needs integer tensors, got float32"),
    ('R.logical_or(x, x)', "R.logical_or: needs bool tensors, got float32"),
    ('R.bitwise_not(x)', "R.bitwise_not: needs integer tensors, got float32"),
    ('R.isnan(R.astype(x, "int32"))', "R.isnan: needs a floating-point tensor, got int32"),
    ('R.where(x, x, x)', "R.where: the condition must be a bool tensor, got float32"),
    ('R.clip(x, 2, 1)', "R.clip: min 2.0 is greater than max 1.0"),
    ('R.full_like(x, x)', "R.full_like: fill_value must be a scalar (R.const or a 0-d tensor)"),
])
def test_wrong_operands_are_diagnostics(body: str, message: str) -> None:
    text = module({"main": (X, body)})
    from tirc.passes.graph.normalize import Normalize

    with pytest.raises(CompileError) as err:
        Normalize()(parse(text))
    assert message in err.value.diagnostics[0].message
