"""R.quantize and R.dequantize (TVM's QDQ operators): the interpreter against values worked
out by hand (ties round to even, the result type's range clips, a per-axis or scalar scale and
zero point), every form compiled at -O0 and -O3 against the interpreter, and the diagnostics
for operands of the wrong kind or size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_levels, functions_module, normalize_diagnostic
from tirc.frontend import parse
from tirc.ir.interpreter import Interpreter

F, I8 = '"float32"', '"int8"'
CASES: dict[str, tuple[str, str]] = {
    "q_axis0": (f"x: R.Tensor((2, 4), {F}), s: R.Tensor((2,), {F}), z: R.Tensor((2,), {I8})",
                f"R.quantize(x, s, z, axis=0, out_dtype={I8})"),
    "q_half_u8": ('x: R.Tensor((2, 4), "float16"), s: R.Tensor((4,), "float16"), '
                  f"z: R.Tensor((4,), {I8})", 'R.quantize(x, s, z, out_dtype="uint8")'),
    "q_symbolic": (f'x: R.Tensor((3, "n"), {F}), s: R.Tensor(("n",), {F}), '
                   f'z: R.Tensor(("n",), {I8})', "R.quantize(x, s, z, axis=-1)"),
    "q_const": (f"x: R.Tensor((2, 4), {F})",
                f"R.quantize(x, R.const(0.5, {F}), R.const(-3, {I8}), out_dtype={I8})"),
    "d_axis0": (f"x: R.Tensor((2, 4), {I8}), s: R.Tensor((2,), {F}), z: R.Tensor((2,), {I8})",
                "R.dequantize(x, s, z, axis=0)"),
    "d_half": (f'x: R.Tensor((2, 4), {I8}), s: R.Tensor((4,), "float16"), '
               f"z: R.Tensor((4,), {I8})", 'R.dequantize(x, s, z, out_dtype="float16")'),
    "d_const": (f"x: R.Tensor((2, 4), {I8})",
                f'R.dequantize(x, R.const(2.0, "float16"), R.const(1, {I8}), '
                'out_dtype="float16")'),
}


def test_interpreter_is_the_definition() -> None:
    mod = parse(functions_module(CASES))
    x = np.array([[1.0, 3.0, -5.0, 7.0], [100.0, -100.0, 0.2, -0.2]], "float32")
    s, z = np.array([2.0, 0.5], "float32"), np.array([0, 3], "int8")
    # row 0: 0.5, 1.5, -2.5, 3.5 round to even; row 1: 200 + 3 and -200 + 3 clip to int8
    np.testing.assert_array_equal(Interpreter(mod).call("q_axis0", x, s, z),
                                  [[0, 2, -2, 4], [127, -128, 3, 3]])
    q = np.array([[-128, 0, 5, 127], [1, 2, 3, 4]], "int8")
    np.testing.assert_array_equal(Interpreter(mod).call("d_axis0", q, s, z.astype("int8")),
                                  [[-256.0, 0.0, 10.0, 254.0], [-1.0, -0.5, 0.0, 0.5]])
    big = np.array([[127, -128, 0, 1], [0, 0, 0, 0]], "int8")
    wide = np.array([600.0, 600.0, 1.0, 1.0], "float16")
    got = Interpreter(mod).call("d_half", big, wide, np.zeros(4, "int8"))
    assert got.dtype == np.float16  # 127 * 600 = 76200 clips to float16's 65504
    np.testing.assert_array_equal(got[0], np.array([65504, -65504, 0, 1], "float16"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    return compile_levels(functions_module(CASES), tmp_path_factory.mktemp("qdq"))


def _arguments(name: str, rng: np.random.Generator) -> list[np.ndarray]:
    mod = parse(functions_module(CASES))
    out = []
    for p in mod[name].params:
        shape = tuple(int(d.value) if hasattr(d, "value") else 5 for d in p.struct_info.shape)
        dt = str(p.struct_info.dtype)
        if dt.startswith("int"):
            out.append(rng.integers(-128, 128, shape).astype(dt))
        elif p.name == "s":
            out.append(rng.uniform(0.25, 3.0, shape).astype(dt))
        else:
            out.append((rng.integers(-800, 800, shape) / 4).astype(dt))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    path, libs = built
    mod = parse(path.read_text())
    args = _arguments(name, np.random.default_rng(11))
    want = Interpreter(mod).call(name, *[a.copy() for a in args])
    for level, lib in libs.items():
        got = getattr(lib, name)(*[a.copy() for a in args])
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"{name} -O{level}")


@pytest.mark.parametrize("params, body, message", [
    (f"x: R.Tensor((2, 4), {F}), s: R.Tensor((2, 2), {F})", f"R.quantize(x, s, R.const(0, {I8}))",
     "R.quantize: 'scale' must be a scalar or 1-d, got (2, 2)"),
    (f"x: R.Tensor((2, 4), {F}), s: R.Tensor((2,), {F})", f"R.quantize(x, s, R.const(0, {I8}))",
     "R.quantize: 'scale' has 2 values; axis -1 of (2, 4) has 4"),
    (f"x: R.Tensor((2, 4), {I8})", f"R.quantize(x, R.const(1.0, {F}), R.const(0, {I8}))",
     "R.quantize: 'data' must be a float tensor, got int8"),
    (f"x: R.Tensor((2, 4), {F})",
     f'R.quantize(x, R.const(1.0, {F}), R.const(0, {I8}), out_dtype="float16")',
     "R.quantize: out_dtype must be an integer type, got float16"),
    (f"x: R.Tensor((2, 4), {I8})",
     f'R.dequantize(x, R.const(1.0, {F}), R.const(0, {I8}), out_dtype="float64")',
     "R.dequantize: out_dtype must be float16 or float32, got float64"),
    (f"x: R.Tensor((2, 4), {I8})", f"R.dequantize(x, R.const(1.0, {F}), R.const(0.5, {F}))",
     "R.dequantize: 'zero_point' must be an integer tensor, got float32"),
])
def test_wrong_operands_are_diagnostics(tmp_path: Path, params: str, body: str,
                                        message: str) -> None:
    err = normalize_diagnostic(tmp_path, functions_module({"main": (params, body)}))
    assert err.message == message
