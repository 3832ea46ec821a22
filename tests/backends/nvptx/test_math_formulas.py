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
         "cos.approx.f32": "llvm.cos", "ex2.approx.ftz.f32": "llvm.exp2"}


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


def test_fast_exp_within_cudas_expf_bound() -> None:
    """T.fast_exp is __expf: ex2.approx.ftz(x * log2(e)). With ex2 exact, the rounding of the
    product alone must stay within CUDA's documented bound for __expf, 2 + floor(1.173 |x|)
    ulps, over the range where exp is a normal float32 (docs/fast_math.md)."""
    f = _jit("fast_exp", 1)
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.uniform(-87.33, 88.72, 20000), rng.uniform(-1, 1, 5000),
                         [0.0, 1.0, -1.0, 88.72, -87.33]]).astype(np.float32)
    got = np.array([f(float(x)) for x in xs], np.float64)
    want = np.exp(xs.astype(np.float64))
    err = np.abs(got - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    assert (err <= 2 + np.floor(1.173 * np.abs(xs))).all()
    assert err.max() > 30  # the error does grow with |x|: this is not T.exp
    assert f(0.0) == 1.0


def test_fast_exp_is_two_instructions_in_ptx() -> None:
    from tirc.driver import compile_ptx
    from tirc.frontend import parse

    ptx = compile_ptx(parse("""
@T.prim_func
def k(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    for tx in T.thread_binding(256, thread="threadIdx.x"):
        B[tx] = T.fast_exp(A[tx])
"""), "cuda -arch=sm_90", 2).ptx
    body = ptx[ptx.index(".entry"):]
    f32 = [line.split()[0] for line in body.splitlines() if "f32" in line]
    assert f32 == ["mul.rn.f32", "ex2.approx.ftz.f32"]
