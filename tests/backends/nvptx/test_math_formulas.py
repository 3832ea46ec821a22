"""The NVPTX math expansions are right as formulas: run on the CPU (with the PTX approximate
instructions replaced by their exact LLVM intrinsics) and compared with NumPy."""

from __future__ import annotations

import ctypes
import math

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.llvm.types import F32
from tirc.backends.nvptx.math import EXPANDED, _Math

EXACT = {"lg2.approx.f32": "llvm.log2", "sin.approx.f32": "llvm.sin",
         "cos.approx.f32": "llvm.cos"}


class _CPUMath(_Math):
    def ptx(self, text: str, *args: ir.Value) -> ir.Value:
        return self.llvm(EXACT[text.split()[0]], *args)


def _jit(op: str, nargs: int):
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    ctx = ModuleContext("m", llvm.get_process_triple())
    fn = ir.Function(ctx.module, ir.FunctionType(F32, [F32] * nargs), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(EXPANDED[op](_CPUMath(ctx, b), list(fn.args)))
    module = llvm.parse_assembly(str(ctx.module))
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, tm)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(ctypes.c_float, *[ctypes.c_float] * nargs)
    f = proto(engine.get_function_address("f"))
    f.engine = engine  # keeps the code alive
    return f


X = np.concatenate([np.linspace(-20, 20, 401), [-1e-3, -1e-6, 0.0, 1e-6, 1e-3, 0.29, 0.31]])
ERF = np.vectorize(math.erf)
CASES = {
    "exp": (lambda x: np.exp(x), X, 2e-6, 0.0),
    "log": (lambda x: np.log(x), np.abs(X) + 1e-3, 2e-6, 1e-6),
    "sin": (lambda x: np.sin(x), X, 0.0, 2e-6),
    "cos": (lambda x: np.cos(x), X, 0.0, 2e-6),
    "tanh": (lambda x: np.tanh(x), X, 2e-6, 1e-7),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), X, 2e-6, 1e-7),
    "erf": (ERF, X, 0.0, 3e-7),
    "rsqrt": (lambda x: 1 / np.sqrt(x), np.abs(X) + 1e-3, 2e-6, 0.0),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_unary_expansion_matches_numpy(op: str) -> None:
    ref, xs, rtol, atol = CASES[op]
    f = _jit(op, 1)
    got = np.array([f(float(np.float32(x))) for x in xs], np.float64)
    want = ref(xs.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_pow_signs_and_special_cases() -> None:
    f = _jit("pow", 2)
    cases = [(2.0, 10.0, 1024.0), (-2.0, 3.0, -8.0), (-2.0, 2.0, 4.0), (0.0, 0.0, 1.0),
             (0.0, 2.0, 0.0), (9.0, 0.5, 3.0), (1.5, -2.0, 1 / 2.25)]
    for x, y, want in cases:
        assert f(x, y) == pytest.approx(want, rel=2e-6), (x, y)
    assert math.isnan(f(-2.0, 0.5))
